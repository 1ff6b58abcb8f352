import type { Clock } from "../../domain/clock.js";
import { notFound } from "../../domain/errors.js";
import { settingNotImplemented } from "../../domain/not-implemented.js";
import { FEED_KEY_PERMISSIONS, SYSTEM_APIS } from "../../domain/principal.js";
import type { FeedService } from "../management/index.js";
import { generateApiKey, hashApiKey } from "./api-key-hash.js";
import type { ApiKeyRepository } from "./api-key-repository.js";
import { API_KEY_TYPES, type ApiKeyView, type CreatedApiKey, LOGGING_MODES, type LoggingMode } from "./model.js";
import type { UserRepository } from "./user-repository.js";
import { boundedText, fieldError, optionalText, sameName } from "./validation.js";

/** ApiKeyInfo as a client sends it to `/api/api-keys/create` (docs/compat.md 5.4); `id` and unknown members are ignored. */
export interface ApiKeyInput {
  readonly type?: string | null;
  /** A key chosen by the client; a random one is generated when absent. */
  readonly key?: string | null;
  readonly displayName?: string | null;
  readonly description?: string | null;
  readonly systemApis?: readonly (string | null)[] | null;
  readonly packagePermissions?: readonly (string | null)[] | null;
  readonly feed?: string | null;
  readonly feedGroup?: string | null;
  readonly expiration?: string | null;
  readonly logging?: string | null;
  readonly user?: string | null;
}

export interface ApiKeyService {
  /** Every key, oldest first; never the key or its hash. */
  list(): Promise<ApiKeyView[]>;
  /** Validates (400 naming the member), stores the key's hash only, and returns the key this once. */
  create(input: ApiKeyInput): Promise<CreatedApiKey>;
  /** Throws not_found for an unknown id. */
  delete(id: number): Promise<void>;
}

export interface ApiKeyServiceDeps {
  readonly keys: ApiKeyRepository;
  readonly users: UserRepository;
  readonly clock: Clock;
  readonly feeds: Pick<FeedService, "findScope">;
}

/** System API names of pgutil that Wharf has no area for (ProGet SCA and SBOM uploads). */
const UNSUPPORTED_SYSTEM_APIS = new Set(["sbom", "sbom-upload", "sca"]);
/** A client-chosen key: long enough to be a secret, sendable in every transport, never taken for `user:password`. */
const CLIENT_KEY = /^[\x21-\x39\x3b-\x7e]{16,1000}$/;

export function createApiKeyService({ keys, users, clock, feeds }: ApiKeyServiceDeps): ApiKeyService {
  return {
    list: () => keys.list(),

    async create(input) {
      const type = keyType(input.type);
      const key = clientKey(input.key) ?? generateApiKey();
      const common = {
        keyHash: hashApiKey(key),
        type,
        displayName: boundedText(input.displayName, "displayName", 1000),
        description: boundedText(input.description, "description", 10_000),
        logging: logging(input.logging),
        expiresAt: expiration(input.expiration, clock.now()),
        createdAt: clock.now().toISOString(),
      };
      const none = { systemApis: undefined, packagePermissions: undefined, feedId: undefined, feedGroup: undefined };
      let created: ApiKeyView;
      if (type === "System") {
        created = await keys.insert({
          ...common,
          ...none,
          systemApis: systemApis(input.systemApis),
          userId: undefined,
        });
      } else if (type === "Feed") {
        const scope = await feedScope(input, feeds);
        const permissions = packagePermissions(input.packagePermissions);
        created = await keys.insert({
          ...common,
          ...none,
          ...scope,
          packagePermissions: permissions,
          userId: undefined,
        });
      } else {
        created = await keys.insert({ ...common, ...none, userId: await personalUser(input.user, users) });
      }
      return { ...created, key };
    },

    async delete(id) {
      if (!(await keys.delete(id))) throw notFound("API_KEY_NOT_FOUND", `No API key has the id ${id}.`);
    },
  };
}

function keyType(value: string | null | undefined): (typeof API_KEY_TYPES)[number] {
  const text = optionalText(value);
  if (text === undefined) throw fieldError("type", "is required (System, Feed or Personal)", "API_KEY_TYPE_REQUIRED");
  const type = API_KEY_TYPES.find((t) => sameName(t, text));
  if (type === undefined) {
    throw fieldError("type", `'${text}' is not supported; use System, Feed or Personal`, "API_KEY_TYPE_INVALID");
  }
  return type;
}

function clientKey(value: string | null | undefined): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (!CLIENT_KEY.test(value)) {
    throw fieldError("key", "must be 16 to 1000 printable characters, without spaces or ':'", "API_KEY_INVALID");
  }
  return value;
}

/**
 * ProGet's request logging per key does not exist in Wharf: only None is accepted, so that a key
 * never claims to be logged (domain/not-implemented.ts). The other names stay known for keys an
 * older Wharf stored.
 */
function logging(value: string | null | undefined): LoggingMode {
  const text = optionalText(value);
  if (text === undefined) return "None";
  const mode = LOGGING_MODES.find((m) => sameName(m, text));
  if (mode === undefined) throw fieldError("logging", `must be one of ${LOGGING_MODES.join(", ")}`);
  if (mode !== "None") throw settingNotImplemented("logging", "logging the requests made with a key", "None");
  return mode;
}

function expiration(value: string | null | undefined, now: Date): string | undefined {
  const text = optionalText(value);
  if (text === undefined) return undefined;
  const time = Date.parse(text);
  if (Number.isNaN(time)) throw fieldError("expiration", "must be an ISO 8601 date", "API_KEY_EXPIRATION_INVALID");
  if (time <= now.getTime()) throw fieldError("expiration", "must be in the future", "API_KEY_EXPIRATION_INVALID");
  return new Date(time).toISOString();
}

function systemApis(values: readonly (string | null)[] | null | undefined): string[] {
  const apis = distinctLower(values);
  if (apis.length === 0) {
    throw fieldError("systemApis", `is required for a System key (${SYSTEM_APIS.join(", ")})`, "SYSTEM_APIS_REQUIRED");
  }
  for (const api of apis) {
    if (UNSUPPORTED_SYSTEM_APIS.has(api)) {
      throw fieldError("systemApis", `'${api}' is not supported by Wharf`, "SYSTEM_API_UNSUPPORTED");
    }
    if (!(SYSTEM_APIS as readonly string[]).includes(api)) {
      throw fieldError("systemApis", `unknown API '${api}'; use ${SYSTEM_APIS.join(", ")}`, "SYSTEM_API_UNKNOWN");
    }
  }
  return apis;
}

function packagePermissions(values: readonly (string | null)[] | null | undefined): string[] {
  const permissions = distinctLower(values);
  const allowed = FEED_KEY_PERMISSIONS.join(", ");
  if (permissions.length === 0) {
    throw fieldError("packagePermissions", `is required for a Feed key (${allowed})`, "PACKAGE_PERMISSIONS_REQUIRED");
  }
  const unknown = permissions.find((p) => !(FEED_KEY_PERMISSIONS as readonly string[]).includes(p));
  if (unknown !== undefined) {
    throw fieldError(
      "packagePermissions",
      `unknown permission '${unknown}'; use ${allowed}`,
      "PACKAGE_PERMISSION_UNKNOWN",
    );
  }
  return permissions;
}

async function feedScope(
  input: ApiKeyInput,
  feeds: Pick<FeedService, "findScope">,
): Promise<{ feedId: number | undefined; feedGroup: string | undefined }> {
  const feed = optionalText(input.feed);
  const feedGroup = boundedText(input.feedGroup, "feedGroup", 1000);
  if ((feed === undefined) === (feedGroup === undefined)) {
    throw fieldError("feed", "a Feed key needs exactly one of feed or feedGroup", "FEED_KEY_SCOPE_REQUIRED");
  }
  if (feed === undefined) return { feedId: undefined, feedGroup };
  const scope = await feeds.findScope(feed);
  if (scope?.id === undefined) throw fieldError("feed", `no feed is named '${feed}'`, "FEED_NOT_FOUND");
  return { feedId: scope.id, feedGroup: undefined };
}

async function personalUser(value: string | null | undefined, users: UserRepository): Promise<number> {
  const name = optionalText(value);
  if (name === undefined) throw fieldError("user", "is required for a Personal key", "API_KEY_USER_REQUIRED");
  const user = await users.findUser(name);
  if (!user) throw fieldError("user", `no user is named '${name}'`, "USER_NOT_FOUND");
  return user.id;
}

/** Trimmed, lowercased, blank entries dropped, duplicates removed (order kept). */
function distinctLower(values: readonly (string | null)[] | null | undefined): string[] {
  const result: string[] = [];
  for (const value of values ?? []) {
    const text = optionalText(value)?.toLowerCase();
    if (text !== undefined && !result.includes(text)) result.push(text);
  }
  return result;
}
