import { createHash } from "node:crypto";
import { grantsAllow, keyAllows } from "../../domain/access.js";
import type { Clock } from "../../domain/clock.js";
import { forbidden } from "../../domain/errors.js";
import type { AccessNeed, FeedScope, Principal } from "../../domain/principal.js";
import type { Authenticator } from "../../http/auth.js";
import { hashApiKey } from "./api-key-hash.js";
import type { ApiKeyRecord, AuthRepository } from "./auth-repository.js";
import { verifyPassword } from "./passwords.js";

export interface AuthenticatorDeps {
  readonly repository: AuthRepository;
  readonly clock: Clock;
  /** Canonical name and group of a feed named in a request (alternate names resolve too). */
  readonly resolveFeed: (name: string) => Promise<FeedScope | undefined>;
}

/** Last-used times are written at most this often per key, to keep writes off the hot path. */
const TOUCH_INTERVAL_MS = 60_000;
/** Successful password checks are remembered this long: scrypt is slow by design, Basic auth comes on every request. */
const LOGIN_CACHE_MS = 60_000;
const LOGIN_CACHE_MAX = 1_000;

export function createAuthenticator({ repository, clock, resolveFeed }: AuthenticatorDeps): Authenticator {
  // Keyed by a hash of (stored hash, password): a changed password changes the key, so no invalidation is needed.
  const verifiedLogins = new Map<string, number>();

  async function fromApiKey(key: string): Promise<Principal | undefined> {
    const record = await repository.findKeyByHash(hashApiKey(key));
    if (!record) return undefined;
    const now = clock.now();
    if (record.expiresAt !== undefined && Date.parse(record.expiresAt) <= now.getTime()) throw forbidden();
    if (record.lastUsedAt === undefined || now.getTime() - Date.parse(record.lastUsedAt) > TOUCH_INTERVAL_MS) {
      await repository.touchKey(record.id, now.toISOString());
    }
    return principalOfKey(record);
  }

  async function fromPassword(user: string, password: string): Promise<Principal | undefined> {
    const login = await repository.findLogin(user);
    if (!login?.passwordHash) return undefined;
    const cacheKey = createHash("sha256").update(login.passwordHash).update("\0").update(password).digest("hex");
    const now = clock.now().getTime();
    const cachedUntil = verifiedLogins.get(cacheKey);
    if (cachedUntil === undefined || cachedUntil < now) {
      if (!(await verifyPassword(password, login.passwordHash))) return undefined;
      if (verifiedLogins.size >= LOGIN_CACHE_MAX) verifiedLogins.clear();
      verifiedLogins.set(cacheKey, now + LOGIN_CACHE_MS);
    }
    return { type: "user", userId: login.id, userName: login.name, via: "password" };
  }

  async function scopeOf(feed: AccessNeed["feed"]): Promise<FeedScope | undefined> {
    if (feed === undefined || typeof feed !== "string") return feed;
    // An unknown feed still gets a scope by its name, so that the route can answer 404 itself.
    return (await resolveFeed(feed)) ?? { name: feed, group: undefined };
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
      memo.grants ??= repository.grantsFor(principal.type === "user" ? principal.userId : undefined);
      return grantsAllow(await memo.grants, need.attribute, scope);
    },
  };
}

function principalOfKey(record: ApiKeyRecord): Principal {
  switch (record.type) {
    case "System":
      return { type: "system-key", keyId: record.id, apis: record.systemApis };
    case "Feed":
      return {
        type: "feed-key",
        keyId: record.id,
        feed: record.feedName,
        feedGroup: record.feedGroup,
        permissions: record.packagePermissions,
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
