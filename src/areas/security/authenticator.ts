import { createHash, createHmac, randomBytes } from "node:crypto";
import { type Grant, grantsAllow, keyAllows } from "../../domain/access.js";
import type { Clock } from "../../domain/clock.js";
import { forbidden } from "../../domain/errors.js";
import { type AccessNeed, ANONYMOUS, type FeedScope, type Principal } from "../../domain/principal.js";
import type { Authenticator } from "../../http/auth.js";
import type { Credentials } from "../../http/credentials.js";
import { VersionedCache } from "../../storage/change-watch.js";
import { hashApiKey } from "./api-key-hash.js";
import type { ApiKeyRecord, AuthRepository } from "./auth-repository.js";
import { createPasswordVerifier, type PasswordVerifier } from "./password-verifier.js";

export interface AuthenticatorDeps {
  readonly repository: AuthRepository;
  readonly clock: Clock;
  /**
   * Id, canonical name and group of a feed named in a request (alternate names resolve too). Reads
   * the same database as `repository`: its answers are cached under `repository.generation()`.
   */
  readonly resolveFeed: (name: string) => Promise<FeedScope | undefined>;
  /** Checks sign-in passwords (app.ts bounds how many at once); default: unbounded. */
  readonly passwords?: PasswordVerifier;
}

/** Last-used times are written at most this often per key, to keep writes off the hot path. */
const TOUCH_INTERVAL_MS = 60_000;
/** Successful password checks are remembered this long: scrypt is slow by design, Basic auth comes on every request. */
const LOGIN_CACHE_MS = 60_000;
const LOGIN_CACHE_MAX = 1_000;
/** Bound of each cache below: keys, logins, feeds and users seen recently. */
const RECENT_MAX = 10_000;

/** A key as found, with what each request needs from it worked out once. */
interface KnownKey {
  readonly record: ApiKeyRecord;
  readonly principal: Principal;
  readonly expiresAtMs: number | undefined;
  /** Last-used time as written, so that a cached key is touched exactly as often as before. */
  lastUsedMs: number | undefined;
}

export function createAuthenticator({
  repository,
  clock,
  resolveFeed,
  passwords = createPasswordVerifier({ concurrency: Number.POSITIVE_INFINITY, queueLimit: 0 }),
}: AuthenticatorDeps): Authenticator {
  // Keyed by a hash of (stored hash, password): a changed password changes the key, so no invalidation is needed.
  const verifiedLogins = new Map<string, number>();
  // What every request would otherwise read again: valid until anything is written to the
  // database, here or by another process (AuthRepository.generation), so that a deleted, narrowed
  // or re-granted key, user or permission takes effect on the very next request. Expiry is checked
  // against the clock on every use. Failures are never cached: they cost what they always did.
  const keys = new VersionedCache<string, KnownKey>(RECENT_MAX);
  const logins = new VersionedCache<string, Principal>(RECENT_MAX);
  const scopes = new VersionedCache<string, { scope: FeedScope }>(RECENT_MAX);
  const grants = new VersionedCache<number, readonly Grant[]>(RECENT_MAX);
  // Logins are cached by an HMAC of name and password under a per-process secret, never by anything
  // a memory dump could turn back into a password cheaply.
  const loginSecret = randomBytes(32);

  async function fromApiKey(key: string): Promise<Principal | undefined> {
    const keyHash = hashApiKey(key);
    const generation = repository.generation();
    const known = keys.get(keyHash, generation) ?? (await loadKey(keyHash, generation));
    if (known === undefined) return undefined;
    const now = clock.now().getTime();
    if (isExpired(known, now)) throw forbidden();
    if (touchIsDue(known, now)) {
      known.lastUsedMs = now;
      await repository.touchKey(known.record.id, new Date(now).toISOString());
    }
    return known.principal;
  }

  async function loadKey(keyHash: string, generation: string): Promise<KnownKey | undefined> {
    const record = await repository.findKeyByHash(keyHash);
    if (!record) return undefined;
    const known: KnownKey = {
      record,
      principal: principalOfKey(record),
      expiresAtMs: record.expiresAt === undefined ? undefined : Date.parse(record.expiresAt),
      lastUsedMs: record.lastUsedAt === undefined ? undefined : Date.parse(record.lastUsedAt),
    };
    keys.set(keyHash, generation, known);
    return known;
  }

  function loginKeyOf(user: string, password: string): string {
    return createHmac("sha256", loginSecret).update(user.toLowerCase()).update("\0").update(password).digest("base64");
  }

  async function fromPassword(user: string, password: string): Promise<Principal | undefined> {
    const loginKey = loginKeyOf(user, password);
    const generation = repository.generation();
    const known = logins.get(loginKey, generation);
    if (known !== undefined) return known;
    const principal = await verifyLogin(user, password);
    if (principal !== undefined) logins.set(loginKey, generation, principal);
    return principal;
  }

  /**
   * The principal `authenticate` would give, from the caches alone: undefined when finding it
   * would read the database, or when the request would change or refuse something (a last-used
   * time due a write, an expired key, a `user:password` pseudo-key whose key part is unknown).
   */
  function principalFromMemory(credentials: Credentials | undefined): Principal | undefined {
    if (credentials === undefined) return ANONYMOUS;
    const generation = repository.generation();
    if (credentials.kind === "password")
      return logins.get(loginKeyOf(credentials.user, credentials.password), generation);
    const known = keys.get(hashApiKey(credentials.key), generation);
    const now = clock.now().getTime();
    return known === undefined || isExpired(known, now) || touchIsDue(known, now) ? undefined : known.principal;
  }

  async function verifyLogin(user: string, password: string): Promise<Principal | undefined> {
    const login = await repository.findLogin(user);
    // Unknown users and users without a password cost a check too: a quicker answer would tell
    // anyone which user names exist.
    if (!login?.passwordHash) {
      await passwords.verify(password, undefined);
      return undefined;
    }
    const cacheKey = createHash("sha256").update(login.passwordHash).update("\0").update(password).digest("hex");
    const now = clock.now().getTime();
    const cachedUntil = verifiedLogins.get(cacheKey);
    if (cachedUntil === undefined || cachedUntil < now) {
      if (!(await passwords.verify(password, login.passwordHash))) return undefined;
      if (verifiedLogins.size >= LOGIN_CACHE_MAX) verifiedLogins.clear();
      verifiedLogins.set(cacheKey, now + LOGIN_CACHE_MS);
    }
    return { type: "user", userId: login.id, userName: login.name, via: "password" };
  }

  async function scopeOf(feed: AccessNeed["feed"]): Promise<FeedScope | undefined> {
    if (feed === undefined || typeof feed !== "string") return feed;
    const generation = repository.generation();
    const known = scopes.get(feed, generation);
    if (known !== undefined) return known.scope;
    // An unknown feed gets a scope with no id, which only global grants (and System keys) pass:
    // such a caller gets the route's own 404; a key or grant of a deleted feed is refused.
    const scope = (await resolveFeed(feed)) ?? { id: undefined, name: feed, group: undefined };
    scopes.set(feed, generation, { scope });
    return scope;
  }

  async function grantsOf(userId: number | undefined): Promise<readonly Grant[]> {
    const generation = repository.generation();
    const known = grants.get(grantsKey(userId), generation);
    if (known !== undefined) return known;
    const found = await repository.grantsFor(userId);
    grants.set(grantsKey(userId), generation, found);
    return found;
  }

  return {
    async authenticate(credentials) {
      let principal: Principal | undefined;
      if (credentials.kind === "api-key") principal = await fromApiKey(credentials.key);
      else if (credentials.kind === "password") principal = await fromPassword(credentials.user, credentials.password);
      else {
        principal = (await fromApiKey(credentials.key)) ?? (await fromPassword(credentials.user, credentials.password));
      }
      if (!principal) throw forbidden();
      return principal;
    },

    async allows(principal, need, memo = {}) {
      // A System key's scopes do not depend on the feed: no lookup needed.
      if (principal.type === "system-key") return keyAllows(principal, need, undefined);
      const scope = await scopeOf(need.feed);
      if (principal.type === "feed-key") return keyAllows(principal, need, scope);
      memo.grants ??= grantsOf(userIdOf(principal));
      return grantsAllow(await memo.grants, need.attribute, scope);
    },

    allowsFromMemory(credentials, need) {
      const principal = principalFromMemory(credentials);
      if (principal === undefined) return false;
      // The same decision as `allows`, from cached scopes and grants only.
      if (principal.type === "system-key") return keyAllows(principal, need, undefined);
      const generation = repository.generation();
      const scope = typeof need.feed === "string" ? scopes.get(need.feed, generation)?.scope : need.feed;
      if (scope === undefined && need.feed !== undefined) return false;
      if (principal.type === "feed-key") return keyAllows(principal, need, scope);
      const known = grants.get(grantsKey(userIdOf(principal)), generation);
      return known !== undefined && grantsAllow(known, need.attribute, scope);
    },
  };
}

const isExpired = (known: KnownKey, now: number) => known.expiresAtMs !== undefined && known.expiresAtMs <= now;
const touchIsDue = (known: KnownKey, now: number) =>
  known.lastUsedMs === undefined || now - known.lastUsedMs > TOUCH_INTERVAL_MS;
const userIdOf = (principal: Principal) => (principal.type === "user" ? principal.userId : undefined);
/** User ids are positive; -1 stands for Anonymous. */
const grantsKey = (userId: number | undefined) => userId ?? -1;

function principalOfKey(record: ApiKeyRecord): Principal {
  switch (record.type) {
    case "System":
      return { type: "system-key", keyId: record.id, apis: record.systemApis, displayName: record.displayName };
    case "Feed":
      return {
        type: "feed-key",
        keyId: record.id,
        feedId: record.feedId,
        feedGroup: record.feedGroup,
        permissions: record.packagePermissions,
        displayName: record.displayName,
      };
    case "Personal":
      return {
        type: "user",
        userId: record.userId ?? -1,
        userName: record.userName ?? "",
        via: "personal-key",
        keyId: record.id,
      };
  }
}
