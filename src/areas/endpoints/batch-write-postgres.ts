import type pg from "pg";
import { type AssetPath, ancestorPaths } from "../../domain/asset-path.js";
import {
  type AssetItem,
  checkFileWrite,
  type FileWrite,
  fileValues,
  ITEM_COLUMNS,
  type ItemRow,
  keptInBatch,
  parentIsFile,
  parentKeyOf,
  type StoredContent,
  toItem,
  type WriteBatch,
} from "./repository.js";

/*
 * AssetRepository.writeBatch on PostgreSQL in four statements whatever the batch's size: one read
 * of every item the batch touches, then one multi-row statement each for the new folders, the new
 * files and the replaced files. Looking up and inserting item by item cost two round trips per
 * file, which made an import of 2,000 small files take seconds per batch on a cluster (SQLite's
 * statements are calls in the process and stay item by item, repository.ts). The decisions are
 * SQLite's, taken in the same order on the items as they would be after each write, so refusals,
 * kept files and replaced contents are the same; the caller holds the tree's write lock.
 */

const FIND_MANY = `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = $1 AND path_key = ANY($2::text[])`;
const INSERT_FOLDERS = `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, created_at, modified_at)
     SELECT $1, f.path, f.path_key, f.parent_key, 1, $5, $5
       FROM unnest($2::text[], $3::text[], $4::text[]) AS f(path, path_key, parent_key)`;
const INSERT_FILES = `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, content_type, blob_sha256, size,
       md5, sha1, sha512, created_at, modified_at)
     SELECT $1, f.path, f.path_key, f.parent_key, 0, f.content_type, f.blob_sha256, f.size, f.md5, f.sha1, f.sha512, $11, $11
       FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[],
                   $10::text[]) AS f(path, path_key, parent_key, content_type, blob_sha256, size, md5, sha1, sha512)`;
// As REPLACE_FILE in repository-postgres.ts: a replaced file keeps its spelling, creation time and metadata.
const REPLACE_FILES = `UPDATE asset_items AS a SET content_type = r.content_type, blob_sha256 = r.blob_sha256, size = r.size,
       md5 = r.md5, sha1 = r.sha1, sha512 = r.sha512, modified_at = $9
       FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[])
            AS r(path_key, content_type, blob_sha256, size, md5, sha1, sha512)
      WHERE a.feed_id = $1 AND a.path_key = r.path_key`;

type FileRow = Omit<FileWrite, "now">;

export async function writeBatchInFewStatements(
  client: pg.PoolClient,
  feedId: number,
  batch: WriteBatch,
): Promise<{ kept: number; replaced: StoredContent[] }> {
  const items = await itemsTouched(client, feedId, batch);
  const newFolders = new Map<string, AssetPath>();
  /** By key: a path written twice in one batch is inserted once, with its first spelling and its last content. */
  const newFiles = new Map<string, FileRow>();
  const replacedFiles = new Map<string, FileRow>();

  const ensureFolders = (folders: readonly AssetPath[]) => {
    for (const folder of folders) {
      const existing = items.get(folder.key);
      if (existing === undefined) {
        newFolders.set(folder.key, folder);
        items.set(folder.key, folderItem(folder, batch.now));
      } else if (!existing.isFolder) throw parentIsFile(existing.path);
    }
  };
  for (const folder of batch.folders) ensureFolders([...ancestorPaths(folder), folder]);

  let kept = 0;
  const replaced: StoredContent[] = [];
  for (const write of batch.files) {
    ensureFolders(ancestorPaths(write.path));
    const key = write.path.key;
    const existing = items.get(key);
    try {
      checkFileWrite(existing, write);
    } catch (error) {
      if (!keptInBatch(batch, error)) throw error;
      kept += 1;
      continue;
    }
    const pending = newFiles.get(key);
    if (pending !== undefined) newFiles.set(key, { ...write, path: pending.path });
    else if (existing === undefined) newFiles.set(key, write);
    else replacedFiles.set(key, write);
    if (existing?.file !== undefined) replaced.push(existing.file);
    items.set(key, { ...(existing ?? folderItem(write.path, batch.now)), isFolder: false, file: write.content });
  }

  await insertFolders(client, feedId, [...newFolders.values()], batch.now);
  await insertFiles(client, feedId, [...newFiles.values()], batch.now);
  await replaceFiles(client, feedId, [...replacedFiles.values()], batch.now);
  return { kept, replaced };
}

/** Every existing item at a path the batch writes or creates folders on the way to, by key. */
async function itemsTouched(client: pg.PoolClient, feedId: number, batch: WriteBatch): Promise<Map<string, AssetItem>> {
  const keys = new Set<string>();
  for (const path of [...batch.folders, ...batch.files.map((file) => file.path)]) {
    for (const ancestor of ancestorPaths(path)) keys.add(ancestor.key);
    keys.add(path.key);
  }
  if (keys.size === 0) return new Map();
  const rows = await client.query<ItemRow>({ text: FIND_MANY, values: [feedId, [...keys]], rowMode: "array" });
  return new Map(rows.rows.map((row) => [row[1], toItem(row)]));
}

/** A folder as the batch just created it (what later decisions of the batch see). */
function folderItem(path: AssetPath, now: string): AssetItem {
  return toItem([path.path, path.key, 1, null, null, null, null, null, null, "{}", null, now, now]);
}

async function insertFolders(client: pg.PoolClient, feedId: number, folders: readonly AssetPath[], now: string) {
  if (folders.length === 0) return;
  const column = (pick: (folder: AssetPath) => string) => folders.map(pick);
  await client.query(INSERT_FOLDERS, [
    feedId,
    column((f) => f.path),
    column((f) => f.key),
    column((f) => parentKeyOf(f.key)),
    now,
  ]);
}

type FileValues = ReturnType<typeof fileValues>;

/** The rows' values (fileValues, as storeFile writes one file), a column each. */
function columnsOf(feedId: number, files: readonly FileRow[], now: string) {
  const rows = files.map((file) => fileValues(feedId, { ...file, now }));
  return <K extends keyof FileValues>(name: K): FileValues[K][] => rows.map((row) => row[name]);
}

/** The content columns of file rows, in the order INSERT_FILES and REPLACE_FILES bind them. */
const CONTENT_COLUMNS = ["contentType", "sha256", "size", "md5", "sha1", "sha512"] as const;

async function insertFiles(client: pg.PoolClient, feedId: number, files: readonly FileRow[], now: string) {
  if (files.length === 0) return;
  const column = columnsOf(feedId, files, now);
  await client.query(INSERT_FILES, [
    feedId,
    column("path"),
    column("key"),
    column("parentKey"),
    ...CONTENT_COLUMNS.map(column),
    now,
  ]);
}

async function replaceFiles(client: pg.PoolClient, feedId: number, files: readonly FileRow[], now: string) {
  if (files.length === 0) return;
  const column = columnsOf(feedId, files, now);
  await client.query(REPLACE_FILES, [feedId, column("key"), ...CONTENT_COLUMNS.map(column), now]);
}
