import { conflict } from "../../domain/errors.js";
import type { Db } from "../../storage/database.js";
import { type ApiKeyType, type ApiKeyView, LOGGING_MODES, type LoggingMode } from "./model.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import { jsonList } from "./sql-helpers.js";

export interface NewApiKey {
  /** SHA-256 of the key (hashApiKey); the key itself is never written. */
  readonly keyHash: string;
  readonly type: ApiKeyType;
  readonly displayName: string | undefined;
  readonly description: string | undefined;
  readonly systemApis: readonly string[] | undefined;
  readonly packagePermissions: readonly string[] | undefined;
  /** A Feed key's feed, by id (migration 0010); the view shows the feed's current name. */
  readonly feedId: number | undefined;
  readonly feedGroup: string | undefined;
  readonly userId: number | undefined;
  readonly logging: LoggingMode;
  readonly expiresAt: string | undefined;
  readonly createdAt: string;
}

export interface ApiKeyRepository {
  list(): Promise<ApiKeyView[]>;
  /** Throws conflict API_KEY_EXISTS when a key with the same hash exists. */
  insert(key: NewApiKey): Promise<ApiKeyView>;
  delete(id: number): Promise<boolean>;
}

export interface KeyRow {
  id: number;
  key_type: ApiKeyType;
  display_name: string | null;
  description: string | null;
  system_apis: string | null;
  package_permissions: string | null;
  feed_name: string | null;
  feed_group: string | null;
  user_name: string | null;
  logging: string;
  expires_at: string | null;
  last_used_at: string | null;
}

export const KEY_SELECT = `
  SELECT k.id, k.key_type, k.display_name, k.description, k.system_apis, k.package_permissions, f.name AS feed_name,
         k.feed_group, u.name AS user_name, k.logging, k.expires_at, k.last_used_at
    FROM api_keys k LEFT JOIN users u ON u.id = k.user_id LEFT JOIN feeds f ON f.id = k.feed_id`;

/** Why an insert failed, as the API says it (both databases). */
export function insertFailure(error: unknown): unknown {
  if (isUniqueViolation(error)) return conflict("API_KEY_EXISTS", "key: this key is in use already.", { cause: error });
  if (isForeignKeyViolation(error)) {
    return conflict("CONCURRENT_CHANGE", "The user or feed named in the request was deleted meanwhile; try again.", {
      cause: error,
    });
  }
  return error;
}

type InsertValues = [
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  number | null,
  string | null,
  number | null,
  string,
  string | null,
  string,
];

/** The columns of INSERT_KEY, in its order (both databases). */
export function insertValues(key: NewApiKey): InsertValues {
  const json = (values: readonly string[] | undefined) => (values === undefined ? null : JSON.stringify(values));
  return [
    key.keyHash,
    key.type,
    key.displayName ?? null,
    key.description ?? null,
    json(key.systemApis),
    json(key.packagePermissions),
    key.feedId ?? null,
    key.feedGroup ?? null,
    key.userId ?? null,
    key.logging,
    key.expiresAt ?? null,
    key.createdAt,
  ];
}

export const INSERT_KEY_COLUMNS = `api_keys (key_hash, key_type, display_name, description, system_apis, package_permissions,
                           feed_id, feed_group, user_id, logging, expires_at, created_at)`;

/** A row as the API shows it (both databases). */
export function keyView(row: KeyRow): ApiKeyView {
  const optional = (name: keyof ApiKeyView, value: string | null) => (value === null ? {} : { [name]: value });
  return {
    id: row.id,
    type: row.key_type,
    ...optional("displayName", row.display_name),
    ...optional("description", row.description),
    ...(row.key_type === "System" ? { systemApis: jsonList(row.system_apis) } : {}),
    ...(row.key_type === "Feed" ? { packagePermissions: jsonList(row.package_permissions) } : {}),
    ...optional("feed", row.feed_name),
    ...optional("feedGroup", row.feed_group),
    ...optional("expiration", row.expires_at),
    logging: (LOGGING_MODES as readonly string[]).includes(row.logging) ? (row.logging as LoggingMode) : "None",
    ...optional("user", row.user_name),
    ...optional("lastUsed", row.last_used_at),
  };
}

export function createApiKeyRepository(db: Db): ApiKeyRepository {
  const all = db.prepare<[], KeyRow>(`${KEY_SELECT} ORDER BY k.id`);
  const byId = db.prepare<[number], KeyRow>(`${KEY_SELECT} WHERE k.id = ?`);
  const insertRow = db.prepare<InsertValues, { id: number }>(
    `INSERT INTO ${INSERT_KEY_COLUMNS} VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const deleteRow = db.prepare<[number]>("DELETE FROM api_keys WHERE id = ?");

  return {
    async list() {
      return all.all().map(keyView);
    },
    async insert(key) {
      try {
        const row = insertRow.get(...insertValues(key)) as { id: number };
        return keyView(byId.get(row.id) as KeyRow);
      } catch (error) {
        throw insertFailure(error);
      }
    },
    async delete(id) {
      return deleteRow.run(id).changes > 0;
    },
  };
}
