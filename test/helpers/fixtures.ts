/**
 * Security fixtures for integration tests: API keys, users, groups and permission grants written
 * straight into the database, so that any area can test its access rules without going through
 * the security endpoints. Every function returns what a test needs next (a key to send, an id to
 * grant to). Rows follow migrations/0001-initial.sql and 0010 (feed keys and feed-scoped grants
 * are bound to the feed's id, so the feed must exist first); keys are stored as hashApiKey(key).
 *
 * They write to either metadata database (`t.database`: SQLite, or PostgreSQL in the "postgres"
 * project), so each returns a Promise; on SQLite the statements still run at once.
 *
 * Typical use:
 *   const key = await createFeedKey(t.database, "main", ["view"]);
 *   const userId = await createUser(t.database, "alice", "s3cret");
 *   await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "main" });
 *   await t.app.inject({ url, headers: { ...basic("alice", "s3cret") } });
 */
import { randomBytes } from "node:crypto";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { hashPassword } from "../../src/areas/security/passwords.js";
import { FEED_ATTRIBUTES } from "../../src/domain/attributes.js";
import type { FeedKeyPermission, SystemApi } from "../../src/domain/principal.js";
import type { QueryResultRow } from "pg";
import { readRows, writeRows } from "../../src/storage/postgres/database.js";
import { isPostgres, type MetadataDb } from "../../src/storage/metadata-db.js";

export interface KeyOptions {
  /** ISO 8601; a past date makes an expired key. */
  expiresAt?: string;
  displayName?: string;
}

/** A fresh random key with a readable prefix (no `:`, so it is never taken for user:password). */
export function newKey(prefix = "test"): string {
  return `${prefix}-${randomBytes(16).toString("hex")}`;
}

/** `?` placeholders as PostgreSQL's `$1, $2, ...` (the fixtures' SQL has no `?` of its own). */
function numbered(sql: string): string {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
}

/**
 * Runs one statement written with `?` placeholders on either database; its rows. On PostgreSQL a
 * write goes through writeRows, which moves the node's cache version as the app's own writes do.
 * The SQL must mean the same on both (no COLLATE NOCASE, no json_group_array).
 */
export async function execute<Row>(
  db: MetadataDb,
  sql: string,
  params: readonly unknown[],
  kind: "read" | "write" = "write",
): Promise<Row[]> {
  if (isPostgres(db)) {
    if (kind === "read") return readRows<Row & QueryResultRow>(db, numbered(sql), params);
    return (await writeRows<Row & QueryResultRow>(db, numbered(sql), params)).rows;
  }
  const statement = db.prepare(sql);
  if (statement.reader) return statement.all(...params) as Row[];
  statement.run(...params);
  return [];
}

/** The rows of one read on either database (`?` placeholders, SQL that means the same on both). */
export function readAll<Row>(db: MetadataDb, sql: string, ...params: unknown[]): Promise<Row[]> {
  return execute<Row>(db, sql, params, "read");
}

/** The first row of one read on either database, if any. */
export async function readOne<Row>(db: MetadataDb, sql: string, ...params: unknown[]): Promise<Row | undefined> {
  return (await readAll<Row>(db, sql, ...params))[0];
}

/** The `id` a single-row INSERT ... RETURNING id gave back. */
async function insertReturningId(db: MetadataDb, sql: string, params: readonly unknown[]): Promise<number> {
  const [row] = await execute<{ id: number }>(db, sql, params);
  if (row === undefined) throw new Error(`no id returned by: ${sql}`);
  return row.id;
}

async function insertKey(
  db: MetadataDb,
  columns: {
    type: "System" | "Feed" | "Personal";
    systemApis?: readonly SystemApi[];
    permissions?: readonly FeedKeyPermission[];
    feed?: string;
    feedGroup?: string;
    userId?: number;
  },
  options: KeyOptions,
): Promise<string> {
  const key = newKey(columns.type.toLowerCase());
  const feedId = columns.feed === undefined ? null : await feedIdOf(db, columns.feed);
  await execute(
    db,
    `INSERT INTO api_keys (key_hash, key_type, display_name, system_apis, package_permissions, feed_id, feed_group,
                           user_id, expires_at, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      hashApiKey(key),
      columns.type,
      options.displayName ?? `${columns.type} key (test)`,
      columns.systemApis ? JSON.stringify(columns.systemApis) : null,
      columns.permissions ? JSON.stringify(columns.permissions) : null,
      feedId,
      columns.feedGroup ?? null,
      columns.userId ?? null,
      options.expiresAt ?? null,
      new Date().toISOString(),
    ],
  );
  return key;
}

/** A System key with these API scopes, e.g. ["feeds"] or ["full-control"]. Returns the key. */
export function createSystemKey(db: MetadataDb, apis: readonly SystemApi[], options: KeyOptions = {}): Promise<string> {
  return insertKey(db, { type: "System", systemApis: apis }, options);
}

/**
 * A Feed key for one feed (a name) or a feed group (`{ group }`), with package permissions
 * ("view", "add", "promote", "delete"). Returns the key.
 */
export function createFeedKey(
  db: MetadataDb,
  target: string | { group: string },
  permissions: readonly FeedKeyPermission[],
  options: KeyOptions = {},
): Promise<string> {
  const scope = typeof target === "string" ? { feed: target } : { feedGroup: target.group };
  return insertKey(db, { type: "Feed", permissions, ...scope }, options);
}

/** A Personal key acting as the user. Returns the key. */
export function createPersonalKey(db: MetadataDb, userId: number, options: KeyOptions = {}): Promise<string> {
  return insertKey(db, { type: "Personal", userId }, options);
}

/**
 * scrypt at 1/32 of the server's cost (a few ms instead of about 130 here): the stored form names its
 * parameters, so these users sign in through the same code; what hashing costs is tested where it
 * matters (auth-guessing.test.ts, users created through the API or the CLI).
 */
const CHEAP_HASHING = { N: 2 ** 10, r: 8, p: 1 } as const;

/** A user who can log in with this password (Basic or `X-ApiKey: user:password`). Returns the user id. */
export async function createUser(db: MetadataDb, name: string, password?: string): Promise<number> {
  const hash = password === undefined ? null : await hashPassword(password, CHEAP_HASHING);
  return insertReturningId(
    db,
    "INSERT INTO users (name, name_key, password_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id",
    [name, name.toLowerCase(), hash, new Date().toISOString()],
  );
}

/** A group with these members. Returns the group id. */
export async function createGroup(db: MetadataDb, name: string, memberIds: readonly number[] = []): Promise<number> {
  const id = await insertReturningId(db, "INSERT INTO groups (name, name_key) VALUES (?, ?) RETURNING id", [
    name,
    name.toLowerCase(),
  ]);
  for (const userId of memberIds) {
    await execute(db, "INSERT INTO group_members (group_id, user_id) VALUES (?, ?)", [id, userId]);
  }
  return id;
}

let taskCounter = 0;

/** A task (named set of privilege attributes, docs/compat.md section 9). Returns the task id. */
export function createTask(
  db: MetadataDb,
  attributes: readonly string[],
  name = `test-task-${++taskCounter}`,
): Promise<number> {
  const feedScoped = attributes.every((a) => FEED_ATTRIBUTES.has(a)) ? 1 : 0;
  return insertReturningId(
    db,
    "INSERT INTO tasks (name, name_key, feed_scoped, built_in, attributes) VALUES (?, ?, ?, 0, ?) RETURNING id",
    [name, name.toLowerCase(), feedScoped, JSON.stringify(attributes)],
  );
}

export type GrantTarget = { user: number } | { group: number } | { anonymous: true };

export type GrantOptions = GrantTarget & {
  attributes: readonly string[];
  /** Scope to one feed (named here, bound to its id) or a feed group; neither means global. */
  feed?: string;
  feedGroup?: string;
  /** A deny wins over any grant of the same attribute. */
  deny?: boolean;
};

/** Grants (or denies) a new task made of `attributes` to a user, a group or Anonymous. */
export async function grant(db: MetadataDb, options: GrantOptions): Promise<void> {
  const taskId = await createTask(db, options.attributes);
  const [type, userId, groupId] =
    "user" in options
      ? (["user", options.user, null] as const)
      : "group" in options
        ? (["group", null, options.group] as const)
        : (["anonymous", null, null] as const);
  const feedId = options.feed === undefined ? null : await feedIdOf(db, options.feed);
  await execute(
    db,
    `INSERT INTO permissions (principal_type, user_id, group_id, task_id, feed_id, feed_group_key, deny)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
    [type, userId, groupId, taskId, feedId, options.feedGroup?.toLowerCase() ?? null, options.deny ? 1 : 0],
  );
}

/** The id of the feed with this name or alternate name; throws when there is none. */
export async function feedIdOf(db: MetadataDb, name: string): Promise<number> {
  const [row] = await execute<{ feed_id: number }>(
    db,
    "SELECT feed_id FROM feed_names WHERE name_key = ?",
    [name.toLowerCase()],
    "read",
  );
  const id = row?.feed_id;
  if (id === undefined) throw new Error(`no feed is named '${name}': create it before its keys and grants`);
  return id;
}

/** `Authorization: Basic` header for a user name and password (or `api` and a key). */
export function basic(user: string, password: string): { authorization: string } {
  return { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` };
}

/** An ISO date `days` from now (negative for the past), for expiring keys. */
export function daysFromNow(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString();
}
