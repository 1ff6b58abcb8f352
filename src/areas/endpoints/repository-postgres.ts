import type pg from "pg";
import { type AssetPath, ancestorPaths } from "../../domain/asset-path.js";
import { writeBatchInFewStatements } from "./batch-write-postgres.js";
import { inTransaction, type PostgresDb, writeRows } from "../../storage/postgres/database.js";
import {
  type AssetItem,
  type AssetRepository,
  assetNotFound,
  belowRange,
  checkFileWrite,
  type FileWrite,
  isExpectedFile,
  fileValues,
  folderNotEmpty,
  isFolder,
  ITEM_COLUMNS,
  type ItemRow,
  metadataValues,
  parentIsFile,
  parentKeyOf,
  type StoredContent,
  toItem,
} from "./repository.js";

type Queryable = pg.Pool | pg.PoolClient;

// Rows as arrays in ITEM_COLUMNS order, as on SQLite (raw mode), so that both map them with toItem.
// path_key is COLLATE "C" (migrations/postgres/0001): it compares and sorts by code point, as
// SQLite's BINARY does, so the ranges of belowRange and "ORDER BY path_key" mean the same.
const FIND = `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = $1 AND path_key = $2`;
// One query for every folder above a download: the keys bind as one text[] parameter.
const FIND_MANY = `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = $1 AND path_key = ANY($2::text[])`;
const CHILDREN = `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = $1 AND parent_key = $2 ORDER BY path_key`;
const BELOW = `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = $1 AND path_key > $2 AND path_key < $3 ORDER BY path_key`;
const ANY_BELOW =
  "SELECT EXISTS (SELECT 1 FROM asset_items WHERE feed_id = $1 AND path_key > $2 AND path_key < $3) AS found";
/**
 * The tree's write lock. On SQLite every tree write is an IMMEDIATE transaction: checks and changes
 * see the same tree. On PostgreSQL (READ COMMITTED, several nodes) each tree write first locks its
 * directory's row in feeds, so the writes of one directory run one at a time, as on SQLite, and those
 * of different directories side by side. Row locks on the items would not do: a recursive delete
 * cannot lock the items another node is inserting below the folder (no predicate locks).
 * NO KEY UPDATE does not conflict with the KEY SHARE locks that inserts referencing the feed take
 * (multipart uploads, the items themselves); a deletion of the feed waits for the write.
 */
const LOCK_TREE = "SELECT 1 FROM feeds WHERE id = $1 FOR NO KEY UPDATE";
const INSERT_FOLDER = `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, created_at, modified_at)
     VALUES ($1, $2, $3, $4, 1, $5, $5)`;
const INSERT_FILE = `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, content_type, blob_sha256, size,
       md5, sha1, sha512, created_at, modified_at)
     VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, $10, $11, $11)`;
// A replaced file keeps its spelling, creation time, metadata and cache setting (docs/compat.md 4.2 overwrite).
const REPLACE_FILE = `UPDATE asset_items SET content_type = $3, blob_sha256 = $4, size = $5, md5 = $6,
       sha1 = $7, sha512 = $8, modified_at = $9
     WHERE feed_id = $1 AND path_key = $2`;
const DELETE_ONE = "DELETE FROM asset_items WHERE feed_id = $1 AND path_key = $2";
const DELETE_BELOW = "DELETE FROM asset_items WHERE feed_id = $1 AND path_key > $2 AND path_key < $3";
const SET_METADATA = `UPDATE asset_items SET content_type = CASE WHEN is_folder = 1 THEN NULL ELSE coalesce($3::text, content_type) END,
       user_metadata = coalesce($4::text, user_metadata),
       cache_header = CASE WHEN $5::integer = 1 THEN $6::text ELSE cache_header END,
       modified_at = $7
     WHERE feed_id = $1 AND path_key = $2`;

async function itemRows(on: Queryable, text: string, values: unknown[]): Promise<ItemRow[]> {
  return (await on.query<ItemRow>({ text, values, rowMode: "array" })).rows;
}

async function find(on: Queryable, feedId: number, key: string): Promise<AssetItem | undefined> {
  const [row] = await itemRows(on, FIND, [feedId, key]);
  return row === undefined ? undefined : toItem(row);
}

/** Creates the missing folders on the way to `path`; a file on the way is a 400. Under LOCK_TREE. */
async function ensureFolders(
  client: pg.PoolClient,
  feedId: number,
  folders: readonly AssetPath[],
  now: string,
): Promise<void> {
  for (const folder of folders) {
    const existing = await find(client, feedId, folder.key);
    if (existing === undefined) {
      await client.query(INSERT_FOLDER, [feedId, folder.path, folder.key, parentKeyOf(folder.key), now]);
    } else if (!existing.isFolder) throw parentIsFile(existing.path);
  }
}

/** Stores a file whose parent folders exist (ensureFolders). Under LOCK_TREE. */
async function storeFile(
  client: pg.PoolClient,
  feedId: number,
  write: FileWrite,
): Promise<{ replaced: StoredContent | undefined }> {
  const existing = await find(client, feedId, write.path.key);
  checkFileWrite(existing, write);
  const v = fileValues(feedId, write);
  if (existing === undefined) {
    await client.query(INSERT_FILE, [
      v.feedId,
      v.path,
      v.key,
      v.parentKey,
      v.contentType,
      v.sha256,
      v.size,
      v.md5,
      v.sha1,
      v.sha512,
      v.now,
    ]);
  } else {
    await client.query(REPLACE_FILE, [
      v.feedId,
      v.key,
      v.contentType,
      v.sha256,
      v.size,
      v.md5,
      v.sha1,
      v.sha512,
      v.now,
    ]);
  }
  return { replaced: existing?.file };
}

/** Runs a tree write in one transaction holding the directory's write lock (LOCK_TREE). */
function treeWrite<T>(db: PostgresDb, feedId: number, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return inTransaction(db, async (client) => {
    await client.query(LOCK_TREE, [feedId]);
    return work(client);
  });
}

/** AssetRepository on PostgreSQL (cluster mode): the same items, order and refusals as on SQLite. */
export function createPostgresAssetRepository(db: PostgresDb): AssetRepository {
  return {
    find: async (feedId, key) => find(db.pool, feedId, key),
    findAll: async (feedId, keys) =>
      keys.length === 0 ? [] : (await itemRows(db.pool, FIND_MANY, [feedId, [...keys]])).map(toItem),
    async list(feedId, folderKey, recursive) {
      if (!recursive) return (await itemRows(db.pool, CHILDREN, [feedId, folderKey])).map(toItem);
      const [from, to] = belowRange(folderKey) as [string, string];
      return (await itemRows(db.pool, BELOW, [feedId, from, to])).map(toItem);
    },
    writeFile: async (feedId, write) =>
      treeWrite(db, feedId, async (client) => {
        await ensureFolders(client, feedId, ancestorPaths(write.path), write.now);
        return storeFile(client, feedId, write);
      }),
    writeBatch: async (feedId, batch) =>
      treeWrite(db, feedId, async (client) => writeBatchInFewStatements(client, feedId, batch)),
    createFolder: async (feedId, path, now) =>
      treeWrite(db, feedId, async (client) => ensureFolders(client, feedId, [...ancestorPaths(path), path], now)),
    delete: async (feedId, path, options) =>
      treeWrite(db, feedId, async (client) => {
        const { recursive, filesOnly } = options;
        const existing = await find(client, feedId, path.key);
        if (existing === undefined || !isExpectedFile(existing, options)) return { deleted: 0, contents: [] };
        if (existing.isFolder && filesOnly) throw isFolder(existing.path);
        const contents: StoredContent[] = existing.file ? [existing.file] : [];
        let deleted = 1;
        if (existing.isFolder) {
          const [from, to] = belowRange(path.key) as [string, string];
          const [any] = (await client.query<{ found: boolean }>(ANY_BELOW, [feedId, from, to])).rows;
          if (any?.found === true && !recursive) throw folderNotEmpty(existing.path);
          for (const row of await itemRows(client, BELOW, [feedId, from, to])) {
            const item = toItem(row);
            if (item.file) contents.push(item.file);
          }
          deleted += (await client.query(DELETE_BELOW, [feedId, from, to])).rowCount ?? 0;
        }
        await client.query(DELETE_ONE, [feedId, path.key]);
        return { deleted, contents };
      }),
    // One statement: atomic by itself, nothing read before it.
    async updateMetadata(feedId, key, write) {
      const v = metadataValues(feedId, key, write);
      const result = await writeRows(db, SET_METADATA, [
        v.feedId,
        v.key,
        v.contentType,
        v.userMetadata,
        v.setCache,
        v.cacheHeader,
        v.now,
      ]);
      if ((result.rowCount ?? 0) === 0) throw assetNotFound();
    },
  };
}
