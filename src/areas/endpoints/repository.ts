import type { UserMetadata } from "../../domain/asset-metadata.js";
import { type AssetPath, ancestorPaths } from "../../domain/asset-path.js";
import { type CacheHeader, INHERIT } from "../../domain/cache-header.js";
import { DomainError, invalid, notFound, PERMISSION_DENIED_MESSAGE } from "../../domain/errors.js";
import { quote } from "../../domain/upack-manifest.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { runDeletion } from "../../storage/space-reserve.js";

/** A file or folder of an asset directory as stored (migration 0006). */
export interface AssetItem {
  readonly path: string;
  readonly key: string;
  readonly isFolder: boolean;
  /** Files: the stored Content-Type; undefined = decided from the extension. */
  readonly contentType: string | undefined;
  readonly file: StoredContent | undefined;
  readonly userMetadata: UserMetadata;
  readonly cacheHeader: CacheHeader;
  readonly createdAt: string;
  readonly modifiedAt: string;
}

/** A file's content: its blob and digests (lowercase hex). */
export interface DeleteOptions {
  readonly recursive: boolean;
  readonly filesOnly: boolean;
  /**
   * Deletes only a file whose blob this is, checked in the delete's own transaction (retention:
   * on PostgreSQL another node may replace the file between a check and the delete); otherwise
   * nothing is deleted (0).
   */
  readonly expectedBlob?: string;
}

/** Whether the item found is the one a delete with `expectedBlob` may remove. */
export const isExpectedFile = (item: AssetItem, options: DeleteOptions): boolean =>
  options.expectedBlob === undefined || item.file?.sha256 === options.expectedBlob;

export interface StoredContent {
  readonly sha256: string;
  readonly size: number;
  readonly md5: string;
  readonly sha1: string;
  readonly sha512: string;
}

/** How a file write treats an existing file at the path (docs/compat.md 4.2: POST, PUT, PATCH). */
export type WriteMode = "create-or-replace" | "create" | "replace";

export interface FileWrite {
  readonly path: AssetPath;
  readonly content: StoredContent;
  readonly contentType: string | undefined;
  readonly mode: WriteMode;
  /** Whether an existing file may be replaced (Feeds_OverwritePackage); checked inside the transaction. */
  readonly mayReplace: boolean;
  readonly now: string;
}

/** Many writes at once (archive imports, form uploads), all with one time. */
export interface WriteBatch {
  readonly folders: readonly AssetPath[];
  readonly files: ReadonlyArray<Omit<FileWrite, "now">>;
  readonly now: string;
  /**
   * A file that exists in "create" mode is left as it is and counted as kept (an import with
   * `overwrite=false`), rather than refusing the whole batch (a PUT of several files).
   */
  readonly keepExisting: boolean;
}

export interface MetadataWrite {
  /** undefined leaves the type unchanged (and folders have none). */
  readonly contentType?: string;
  readonly userMetadata?: UserMetadata;
  readonly cacheHeader?: CacheHeader;
  readonly now: string;
}

/**
 * SQL of the asset directory area. Every method is one transaction; writes take the write lock
 * first (IMMEDIATE), so that checks and changes see the same tree even across processes.
 */
export interface AssetRepository {
  find(feedId: number, key: string): Promise<AssetItem | undefined>;
  /** The items at these keys that exist, in no particular order (for inherited cache settings). */
  findAll(feedId: number, keys: readonly string[]): Promise<AssetItem[]>;
  /** Items directly in the folder ('' = root), or every item below it, in path order. */
  list(feedId: number, folderKey: string, recursive: boolean): Promise<AssetItem[]>;
  /** Stores a file and any missing parent folders; returns the replaced content, if any. */
  writeFile(feedId: number, write: FileWrite): Promise<{ replaced: StoredContent | undefined }>;
  /**
   * Creates the folders and stores the files (with missing parents) in one transaction, each
   * folder above them looked up once. A file that exists in "create" mode is left as it is and
   * counted as kept when `keepExisting`; any other refusal rolls the whole batch back. Returns the
   * replaced contents.
   */
  writeBatch(feedId: number, batch: WriteBatch): Promise<{ kept: number; replaced: StoredContent[] }>;
  /** Creates the folder and missing parents; an existing folder is not an error, a file is (400). */
  createFolder(feedId: number, path: AssetPath, now: string): Promise<void>;
  /**
   * Deletes a file, or a folder with everything in it when `recursive`. Returns the number of
   * items deleted (0 when nothing was there) and the content of the deleted files.
   */
  delete(
    feedId: number,
    path: AssetPath,
    options: DeleteOptions,
  ): Promise<{ deleted: number; contents: StoredContent[] }>;
  updateMetadata(feedId: number, key: string, write: MetadataWrite): Promise<void>;
}

/**
 * A row as an array in ITEM_COLUMNS order: statements run in raw mode, which a 10,000-item listing
 * reads in about 60% of the time it takes to build one object per row.
 */
export type ItemRow = [
  path: string,
  pathKey: string,
  isFolder: 0 | 1,
  contentType: string | null,
  blobSha256: string | null,
  size: number | null,
  md5: string | null,
  sha1: string | null,
  sha512: string | null,
  userMetadata: string,
  cacheHeader: string | null,
  createdAt: string,
  modifiedAt: string,
];

export const ITEM_COLUMNS =
  "path, path_key, is_folder, content_type, blob_sha256, size, md5, sha1, sha512, user_metadata, cache_header, created_at, modified_at";

const NO_METADATA: UserMetadata = Object.freeze({});

/** A row as the area's item (both databases). */
export function toItem(row: ItemRow): AssetItem {
  const [path, key, isFolder, contentType, sha256, size, md5, sha1, sha512, metadata, cache, created, modified] = row;
  return {
    path,
    key,
    isFolder: isFolder === 1,
    contentType: contentType ?? undefined,
    file:
      isFolder === 0 && sha256 !== null
        ? { sha256, size: size ?? 0, md5: md5 ?? "", sha1: sha1 ?? "", sha512: sha512 ?? "" }
        : undefined,
    // Most items have none: skipping the parse keeps a 10,000-item listing fast.
    userMetadata: metadata === "{}" ? NO_METADATA : (JSON.parse(metadata) as UserMetadata),
    cacheHeader: cache === null ? INHERIT : (JSON.parse(cache) as CacheHeader),
    createdAt: created,
    modifiedAt: modified,
  };
}

export const parentKeyOf = (key: string) => key.slice(0, Math.max(0, key.lastIndexOf("/")));
/** Keys strictly below a folder sort between `<key>/` and `<key>0` ('0' follows '/' in code order). */
export const belowRange = (key: string) => (key === "" ? ["", "\u{10ffff}"] : [`${key}/`, `${key}0`]);

export function createAssetRepository(db: Db): AssetRepository {
  const findOne = db
    .prepare<[number, string], ItemRow>(`SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = ? AND path_key = ?`)
    .raw(true);
  // One query for every folder above a download: a JSON array binds as one parameter.
  const findMany = db
    .prepare<[number, string], ItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = ? AND path_key IN (SELECT value FROM json_each(?))`,
    )
    .raw(true);
  const children = db
    .prepare<[number, string], ItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = ? AND parent_key = ? ORDER BY path_key`,
    )
    .raw(true);
  const below = db
    .prepare<[number, string, string], ItemRow>(
      `SELECT ${ITEM_COLUMNS} FROM asset_items WHERE feed_id = ? AND path_key > ? AND path_key < ? ORDER BY path_key`,
    )
    .raw(true);
  const countBelow = db.prepare<[number, string, string], { n: number }>(
    "SELECT count(*) AS n FROM asset_items WHERE feed_id = ? AND path_key > ? AND path_key < ?",
  );
  const insertFolder = db.prepare<[number, string, string, string, string, string]>(
    `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, created_at, modified_at)
     VALUES (?, ?, ?, ?, 1, ?, ?)`,
  );
  const insertFile = db.prepare(
    `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, content_type, blob_sha256, size,
       md5, sha1, sha512, created_at, modified_at)
     VALUES (@feedId, @path, @key, @parentKey, 0, @contentType, @sha256, @size, @md5, @sha1, @sha512, @now, @now)`,
  );
  // A replaced file keeps its spelling, creation time, metadata and cache setting (docs/compat.md 4.2 overwrite).
  const replaceFile = db.prepare(
    `UPDATE asset_items SET content_type = @contentType, blob_sha256 = @sha256, size = @size, md5 = @md5,
       sha1 = @sha1, sha512 = @sha512, modified_at = @now
     WHERE feed_id = @feedId AND path_key = @key`,
  );
  const deleteOne = db.prepare<[number, string]>("DELETE FROM asset_items WHERE feed_id = ? AND path_key = ?");
  const deleteBelow = db.prepare<[number, string, string]>(
    "DELETE FROM asset_items WHERE feed_id = ? AND path_key > ? AND path_key < ?",
  );
  const setMetadata = db.prepare(
    `UPDATE asset_items SET content_type = CASE WHEN is_folder = 1 THEN NULL ELSE coalesce(@contentType, content_type) END,
       user_metadata = coalesce(@userMetadata, user_metadata),
       cache_header = CASE WHEN @setCache = 1 THEN @cacheHeader ELSE cache_header END,
       modified_at = @now
     WHERE feed_id = @feedId AND path_key = @key`,
  );

  const find = (feedId: number, key: string) => {
    const row = findOne.get(feedId, key);
    return row === undefined ? undefined : toItem(row);
  };

  /** Creates the missing folders on the way to `path`; a file on the way is a 400. */
  function ensureFolders(feedId: number, folders: readonly AssetPath[], now: string): void {
    for (const folder of folders) {
      const existing = find(feedId, folder.key);
      if (existing === undefined) insertFolder.run(feedId, folder.path, folder.key, parentKeyOf(folder.key), now, now);
      else if (!existing.isFolder) throw parentIsFile(existing.path);
    }
  }

  /** Stores a file whose parent folders exist (ensureFolders). */
  function storeFile(feedId: number, write: FileWrite): { replaced: StoredContent | undefined } {
    const existing = find(feedId, write.path.key);
    checkFileWrite(existing, write);
    const values = fileValues(feedId, write);
    if (existing === undefined) insertFile.run(values);
    else replaceFile.run(values);
    return { replaced: existing?.file };
  }

  const writeFile = db.transaction((feedId: number, write: FileWrite) => {
    ensureFolders(feedId, ancestorPaths(write.path), write.now);
    return storeFile(feedId, write);
  });

  const writeBatch = db.transaction((feedId: number, batch: WriteBatch) => {
    const ensured = new Set<string>();
    const ensure = (folders: readonly AssetPath[]) => {
      const unseen = folders.filter((folder) => !ensured.has(folder.key));
      ensureFolders(feedId, unseen, batch.now);
      for (const folder of unseen) ensured.add(folder.key);
    };
    for (const folder of batch.folders) ensure([...ancestorPaths(folder), folder]);
    let kept = 0;
    const replaced: StoredContent[] = [];
    for (const write of batch.files) {
      ensure(ancestorPaths(write.path));
      try {
        const stored = storeFile(feedId, { ...write, now: batch.now });
        if (stored.replaced !== undefined) replaced.push(stored.replaced);
      } catch (error) {
        if (!keptInBatch(batch, error)) throw error;
        kept += 1;
      }
    }
    return { kept, replaced };
  });

  const createFolder = db.transaction((feedId: number, path: AssetPath, now: string) => {
    ensureFolders(feedId, [...ancestorPaths(path), path], now);
  });

  const remove = db.transaction((feedId: number, path: AssetPath, options: DeleteOptions) => {
    const { recursive, filesOnly } = options;
    const existing = find(feedId, path.key);
    if (existing === undefined || !isExpectedFile(existing, options)) return { deleted: 0, contents: [] };
    if (existing.isFolder && filesOnly) throw isFolder(existing.path);
    const contents: StoredContent[] = existing.file ? [existing.file] : [];
    let deleted = 1;
    if (existing.isFolder) {
      const [from, to] = belowRange(path.key) as [string, string];
      if ((countBelow.get(feedId, from, to)?.n ?? 0) > 0 && !recursive) {
        throw folderNotEmpty(existing.path);
      }
      for (const row of below.all(feedId, from, to)) {
        const item = toItem(row);
        if (item.file) contents.push(item.file);
      }
      deleted += deleteBelow.run(feedId, from, to).changes;
    }
    deleteOne.run(feedId, path.key);
    return { deleted, contents };
  });

  const updateMetadata = db.transaction((feedId: number, key: string, write: MetadataWrite) => {
    const result = setMetadata.run(metadataValues(feedId, key, write));
    if (result.changes === 0) throw assetNotFound();
  });

  return withBusyRetries(db, {
    find: async (feedId, key) => find(feedId, key),
    findAll: async (feedId, keys) => (keys.length === 0 ? [] : findMany.all(feedId, JSON.stringify(keys)).map(toItem)),
    async list(feedId, folderKey, recursive) {
      if (!recursive) return children.all(feedId, folderKey).map(toItem);
      const [from, to] = belowRange(folderKey) as [string, string];
      return below.all(feedId, from, to).map(toItem);
    },
    writeFile: async (feedId, write) => writeFile.immediate(feedId, write),
    writeBatch: async (feedId, batch) => writeBatch.immediate(feedId, batch),
    createFolder: async (feedId, path, now) => createFolder.immediate(feedId, path, now),
    delete: async (feedId, path, options) => runDeletion(db, () => remove.immediate(feedId, path, options)),
    updateMetadata: async (feedId, key, write) => updateMetadata.immediate(feedId, key, write),
  });
}

/**
 * The refusals of a file write, given the item at its path (both databases): a folder, an existing
 * file in "create" mode, a missing one in "replace" mode, a replacement without the permission.
 */
export function checkFileWrite(existing: AssetItem | undefined, write: Omit<FileWrite, "now">): void {
  if (existing?.isFolder === true) throw isFolder(existing.path);
  if (existing !== undefined && write.mode === "create") throw fileExists(existing.path);
  if (existing === undefined && write.mode === "replace") throw assetNotFound();
  if (replacingNeedsPermission(existing) && !write.mayReplace) throw replaceForbidden(existing?.path ?? "");
}

/** The values of a stored file's row (both databases). */
export function fileValues(feedId: number, write: FileWrite) {
  const { path, content } = write;
  return {
    feedId,
    path: path.path,
    key: path.key,
    parentKey: parentKeyOf(path.key),
    contentType: write.contentType ?? null,
    sha256: content.sha256,
    size: content.size,
    md5: content.md5,
    sha1: content.sha1,
    sha512: content.sha512,
    now: write.now,
  };
}

/** The values of a metadata update (both databases); `setCache` 1 writes `cacheHeader` (NULL: inherit). */
export function metadataValues(feedId: number, key: string, write: MetadataWrite) {
  return {
    feedId,
    key,
    contentType: write.contentType ?? null,
    userMetadata: write.userMetadata === undefined ? null : JSON.stringify(write.userMetadata),
    setCache: write.cacheHeader === undefined ? 0 : 1,
    cacheHeader:
      write.cacheHeader === undefined || write.cacheHeader.type === "Inherit"
        ? null
        : JSON.stringify(write.cacheHeader),
    now: write.now,
  };
}

/** Whether a batch's file refusal only keeps the existing file (an import with overwrite=false). */
export const keptInBatch = (batch: WriteBatch, error: unknown): boolean =>
  batch.keepExisting && error instanceof DomainError && error.code === "ASSET_EXISTS";

export const parentIsFile = (path: string) =>
  invalid("PARENT_IS_FILE", `${quote(path)} is a file, so it cannot hold other items.`);

export const folderNotEmpty = (path: string) =>
  invalid(
    "FOLDER_NOT_EMPTY",
    `The folder ${quote(path)} is not empty; delete it with recursive=true to delete its contents too.`,
  );

/** The phrase a client test looks for (docs/clients.md 4 item 12); keep it verbatim. */
const ASSET_NOT_FOUND_MESSAGE = "The specified asset was not found.";

export const assetNotFound = () => notFound("ASSET_NOT_FOUND", ASSET_NOT_FOUND_MESSAGE);

export const isFolder = (path: string) =>
  invalid("ASSET_IS_FOLDER", `${quote(path)} is a folder; this operation needs a file.`);

/**
 * Whether replacing the item needs the overwrite privilege: a file with content does; an empty
 * file holds nothing to lose (ProGetAutomation creates one, with its Content-Type, right before
 * the multipart upload that fills it, with a key that may only add).
 */
export const replacingNeedsPermission = (existing: AssetItem | undefined): boolean =>
  existing?.file !== undefined && existing.file.size > 0;

export const fileExists = (path: string) =>
  invalid("ASSET_EXISTS", `The file ${quote(path)} already exists; use POST or PATCH to replace it.`);

export const replaceForbidden = (path: string) =>
  new DomainError(
    "forbidden",
    "OVERWRITE_FORBIDDEN",
    `${PERMISSION_DENIED_MESSAGE} The file ${quote(path)} already exists, and replacing it needs the overwrite/delete permission.`,
  );
