import type { Attribute } from "./attributes.js";

/**
 * Who is calling, and what they need: the vocabulary of the one security model that every area
 * shares. Pure data; the rules that evaluate it live in domain/access.ts.
 */

/** Scopes of a System API key (docs/compat.md 5.4, plus one per Wharf area). */
export const SYSTEM_APIS = [
  "full-control",
  "feeds",
  "configuration",
  "infrastructure",
  "package-deployment",
  "connector-health",
  "releases",
  "ci-badges",
  "native",
  "metrics",
] as const;
export type SystemApi = (typeof SYSTEM_APIS)[number];

/** Permissions of a Feed API key (docs/compat.md section 9: View/Download, Add/Repackage, Promote, Overwrite/Delete). */
export const FEED_KEY_PERMISSIONS = ["view", "add", "promote", "delete"] as const;
export type FeedKeyPermission = (typeof FEED_KEY_PERMISSIONS)[number];

export type Principal =
  | { readonly type: "anonymous" }
  | {
      readonly type: "user";
      readonly userId: number;
      readonly userName: string;
      /** How the user proved who they are: a password (Basic or pseudo-key) or a personal key. */
      readonly via: "password" | "personal-key";
      readonly keyId?: number;
    }
  | {
      readonly type: "system-key";
      readonly keyId: number;
      readonly apis: readonly SystemApi[];
      /** The key's display name, for records of who did what (e.g. a package's publisher). */
      readonly displayName?: string | undefined;
    }
  | {
      readonly type: "feed-key";
      readonly keyId: number;
      /** The id of the key's feed (never its name: see FeedScope), or undefined for a feed-group key. */
      readonly feedId: number | undefined;
      readonly feedGroup: string | undefined;
      readonly permissions: readonly FeedKeyPermission[];
      readonly displayName?: string | undefined;
    };

export const ANONYMOUS: Principal = Object.freeze({ type: "anonymous" });

/**
 * Who the principal is in records of who did what (a publisher, a deployment, an event): the user,
 * or the API key by its display name; undefined for Anonymous. Never a secret.
 */
export function principalName(principal: Principal): string | undefined {
  if (principal.type === "anonymous") return undefined;
  if (principal.type === "user") return principal.userName;
  return principal.displayName ?? `API key ${principal.keyId}`;
}

/**
 * What an operation requires. A System key passes when it has `full-control` or the `api` scope;
 * users, personal keys and Anonymous pass when their permissions grant `attribute` (for `feed`
 * when given); feed keys pass only for feed-scoped needs on their own feed or feed group.
 */
export interface AccessNeed {
  /** System API scope (or any of several) that allows the operation; omitted means only `full-control`. */
  readonly api?: SystemApi | readonly SystemApi[];
  /** Privilege attribute (docs/compat.md section 9) a user or Anonymous must be granted. */
  readonly attribute: string;
  /** The feed the operation touches: as named in the request, or already resolved (saves a lookup in lists). */
  readonly feed?: string | FeedScope;
}

/**
 * Managing connectors, and attaching one that carries stored credentials to a feed: a connector
 * names an upstream and the account Wharf uses there, and belongs to no feed, so only global
 * grants count (System keys: the `feeds` scope; Feed keys never).
 */
export const MANAGE_CONNECTORS: AccessNeed = Object.freeze(needOnFeed("Admin_ManageFeed"));

/** The privileges asked for on a feed (docs/compat.md section 9): the feed attributes, and managing the feed. */
export type FeedAttribute = Extract<Attribute, `Feeds_${string}`> | "Admin_ManageFeed";

/**
 * A privilege on a feed, the need of every feed and asset-directory operation (docs/seed-api.md
 * "Authentication"; docs/compat.md 2.14, 4.6): System keys pass with the `feeds` scope, Feed keys on
 * their own feed, users and Anonymous by a grant for the feed, its group or all feeds. Without
 * `feed`, only global grants count (creating a feed, a server-wide list).
 */
export function needOnFeed(attribute: FeedAttribute, feed?: string | FeedScope): AccessNeed {
  return feed === undefined ? { api: "feeds", attribute } : { api: "feeds", attribute, feed };
}

/**
 * The feed a need is about, resolved. Access is decided by `id` and `group` only: a name is a
 * label that a renamed feed leaves and a new feed may take, so keys and grants never match it.
 */
export interface FeedScope {
  /** undefined when no feed has the name: then only global and feed-group grants can apply. */
  readonly id: number | undefined;
  /** Canonical name (or the name as requested, for an unknown feed); for messages only. */
  readonly name: string;
  readonly group: string | undefined;
}
