import type { Grant } from "../../domain/access.js";
import type { FeedKeyPermission, SystemApi } from "../../domain/principal.js";
import { unlessBusy } from "../../storage/busy.js";
import { changeWatchOf } from "../../storage/change-watch.js";
import type { Db } from "../../storage/database.js";

export interface ApiKeyRecord {
  readonly id: number;
  readonly type: "System" | "Feed" | "Personal";
  readonly systemApis: readonly SystemApi[];
  readonly packagePermissions: readonly FeedKeyPermission[];
  /** A Feed key's feed (migration 0010: keys die with their feed, whatever takes its name later). */
  readonly feedId: number | undefined;
  readonly feedGroup: string | undefined;
  readonly userId: number | undefined;
  readonly userName: string | undefined;
  readonly expiresAt: string | undefined;
  readonly lastUsedAt: string | undefined;
  readonly displayName: string | undefined;
}

export interface LoginRecord {
  readonly id: number;
  readonly name: string;
  readonly passwordHash: string | undefined;
}

export interface KeyRow {
  id: number;
  key_type: ApiKeyRecord["type"];
  system_apis: string | null;
  package_permissions: string | null;
  feed_id: number | null;
  feed_group: string | null;
  user_id: number | null;
  user_name: string | null;
  expires_at: string | null;
  last_used_at: string | null;
  display_name: string | null;
}

export interface GrantRow {
  attributes: string;
  feed_id: number | null;
  feed_group_key: string | null;
  deny: number;
}

/** The reads (and the one bookkeeping write) that authentication needs, prepared once. */
export interface AuthRepository {
  findKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  findLogin(userName: string): Promise<LoginRecord | undefined>;
  /** Grants of a user (own, through groups, and Anonymous's) or, with no user, of Anonymous. */
  grantsFor(userId: number | undefined): Promise<Grant[]>;
  /**
   * Bookkeeping only: moves no generation (nothing cached depends on when a key was last used),
   * and is skipped, not waited for, while the database is busy.
   */
  touchKey(keyId: number, usedAt: string): Promise<void>;
  /**
   * A token that changes whenever anything was written to the database, by this connection or
   * another process (see ChangeWatch), except last-used times: equal tokens mean every read here
   * gives the same answer. Synchronous, so that a caller can take it in the tick of the read it guards.
   */
  generation(): string;
}

export interface LoginRow {
  id: number;
  name: string;
  password_hash: string | null;
}

/** The key lookup without its WHERE clause (both databases). */
export const KEY_SELECT = `SELECT k.id, k.key_type, k.system_apis, k.package_permissions, k.feed_id, k.feed_group,
            k.user_id, u.name AS user_name, k.expires_at, k.last_used_at, k.display_name
       FROM api_keys k LEFT JOIN users u ON u.id = k.user_id`;

/** The grants lookup without its WHERE clause (both databases). */
export const GRANT_SELECT = `SELECT t.attributes, p.feed_id, p.feed_group_key, p.deny
       FROM permissions p JOIN tasks t ON t.id = p.task_id`;

/** Anonymous's grants (both databases: no parameters). */
export const ANONYMOUS_GRANTS = `${GRANT_SELECT}
      WHERE p.principal_type = 'anonymous'`;

/** A key row as authentication uses it (both databases). */
export function apiKeyRecord(row: KeyRow): ApiKeyRecord {
  return {
    id: row.id,
    type: row.key_type,
    systemApis: row.system_apis ? (JSON.parse(row.system_apis) as SystemApi[]) : [],
    packagePermissions: row.package_permissions ? (JSON.parse(row.package_permissions) as FeedKeyPermission[]) : [],
    feedId: row.feed_id ?? undefined,
    feedGroup: row.feed_group ?? undefined,
    userId: row.user_id ?? undefined,
    userName: row.user_name ?? undefined,
    expiresAt: row.expires_at ?? undefined,
    lastUsedAt: row.last_used_at ?? undefined,
    displayName: row.display_name ?? undefined,
  };
}

/** A user row as sign-in uses it (both databases). */
export function loginRecord(row: LoginRow): LoginRecord {
  return { id: row.id, name: row.name, passwordHash: row.password_hash ?? undefined };
}

/** A permission row as access checks use it (both databases). */
export function grantOf(row: GrantRow): Grant {
  return {
    attributes: JSON.parse(row.attributes) as string[],
    feedId: row.feed_id ?? undefined,
    feedGroup: row.feed_group_key ?? undefined,
    deny: row.deny === 1,
  };
}

export function createAuthRepository(db: Db): AuthRepository {
  const keyByHash = db.prepare<[string], KeyRow>(
    `${KEY_SELECT}
      WHERE k.key_hash = ?`,
  );
  const login = db.prepare<[string], LoginRow>("SELECT id, name, password_hash FROM users WHERE name_key = ?");
  const grantsOfUser = db.prepare<[number, number], GrantRow>(
    `${GRANT_SELECT}
      WHERE p.principal_type = 'anonymous'
         OR (p.principal_type = 'user' AND p.user_id = ?)
         OR (p.principal_type = 'group' AND p.group_id IN (SELECT group_id FROM group_members WHERE user_id = ?))`,
  );
  const grantsOfAnonymous = db.prepare<[], GrantRow>(ANONYMOUS_GRANTS);
  const touch = db.prepare<[string, number]>("UPDATE api_keys SET last_used_at = ? WHERE id = ?");
  const watch = changeWatchOf(db);

  return {
    async findKeyByHash(keyHash) {
      const row = keyByHash.get(keyHash);
      if (!row) return undefined;
      return apiKeyRecord(row);
    },
    async findLogin(userName) {
      const row = login.get(userName.toLowerCase());
      return row && loginRecord(row);
    },
    async grantsFor(userId) {
      const rows = userId === undefined ? grantsOfAnonymous.all() : grantsOfUser.all(userId, userId);
      return rows.map(grantOf);
    },
    async touchKey(keyId, usedAt) {
      // Skipped while another process holds the write lock: a read must not wait or fail for a
      // stamp that a later use of the key writes anyway.
      unlessBusy(() => watch.quietly(() => touch.run(usedAt, keyId)));
    },
    generation: () => watch.version(),
  };
}
