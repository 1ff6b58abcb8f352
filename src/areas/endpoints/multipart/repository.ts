import { withBusyRetries } from "../../../storage/busy.js";
import type { Db } from "../../../storage/database.js";
import { runDeletion } from "../../../storage/space-reserve.js";
import { uploadRemoved } from "./rules.js";

/** A multipart upload in progress (migration 0006, asset_multipart_uploads). */
export interface MultipartUpload {
  readonly id: number;
  readonly feedId: number;
  /** The client's id of the upload. */
  readonly uploadKey: string;
  readonly path: string;
  readonly pathKey: string;
  readonly totalSize: number;
  readonly totalParts: number;
  /** File name of the spool in the spool directory. */
  readonly spool: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type NewMultipartUpload = Omit<MultipartUpload, "id" | "updatedAt">;

/** A part whose bytes are durably in the spool: `size` bytes from `offset`. */
export interface MultipartPart {
  readonly index: number;
  readonly offset: number;
  readonly size: number;
}

/**
 * SQL of multipart uploads. Every method is one transaction. A part row is written only after the
 * part's bytes are fsynced, so the rows never claim bytes the spool does not hold.
 */
export interface MultipartRepository {
  find(feedId: number, uploadKey: string): Promise<MultipartUpload | undefined>;
  /**
   * Inserts the upload unless one with the same key exists in the feed; returns the stored one
   * either way (compare `spool` to learn whether this call created it).
   */
  create(upload: NewMultipartUpload): Promise<MultipartUpload>;
  /** The recorded parts, in offset order. */
  parts(uploadId: number): Promise<MultipartPart[]>;
  /** Records (or replaces, for a retried index) a part and marks the upload active; 404 if the upload is gone. */
  recordPart(uploadId: number, part: MultipartPart, now: string): Promise<void>;
  deletePart(uploadId: number, index: number): Promise<void>;
  /** Deletes the upload with its parts; false when it was already gone. */
  delete(uploadId: number): Promise<boolean>;
  /** Deletes the upload only if no part was recorded since `before`; false when it was kept or gone. */
  deleteIfInactive(uploadId: number, before: string): Promise<boolean>;
  /** Uploads with no part recorded since `before` (ISO 8601). */
  inactiveSince(before: string): Promise<MultipartUpload[]>;
  /** The spool file names of every upload, in every feed. */
  spools(): Promise<Set<string>>;
}

export interface UploadRow {
  id: number;
  feed_id: number;
  upload_key: string;
  path: string;
  path_key: string;
  total_size: number;
  total_parts: number;
  spool: string;
  created_at: string;
  updated_at: string;
}

export const UPLOAD_COLUMNS =
  "id, feed_id, upload_key, path, path_key, total_size, total_parts, spool, created_at, updated_at";

/** A row as the area's upload (both databases). */
export const toUpload = (row: UploadRow): MultipartUpload => ({
  id: row.id,
  feedId: row.feed_id,
  uploadKey: row.upload_key,
  path: row.path,
  pathKey: row.path_key,
  totalSize: row.total_size,
  totalParts: row.total_parts,
  spool: row.spool,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

export interface PartRow {
  part_index: number;
  start_offset: number;
  size: number;
}

export const toPart = (row: PartRow): MultipartPart => ({
  index: row.part_index,
  offset: row.start_offset,
  size: row.size,
});

export function createMultipartRepository(db: Db): MultipartRepository {
  const byKey = db.prepare<[number, string], UploadRow>(
    `SELECT ${UPLOAD_COLUMNS} FROM asset_multipart_uploads WHERE feed_id = ? AND upload_key = ?`,
  );
  const insertUpload = db.prepare(
    `INSERT INTO asset_multipart_uploads
       (feed_id, upload_key, path, path_key, total_size, total_parts, spool, created_at, updated_at)
     VALUES (@feedId, @uploadKey, @path, @pathKey, @totalSize, @totalParts, @spool, @createdAt, @createdAt)
     ON CONFLICT (feed_id, upload_key) DO NOTHING`,
  );
  const partsOf = db.prepare<[number], PartRow>(
    "SELECT part_index, start_offset, size FROM asset_multipart_parts WHERE upload_id = ? ORDER BY start_offset, part_index",
  );
  const touch = db.prepare<[string, number]>("UPDATE asset_multipart_uploads SET updated_at = ? WHERE id = ?");
  const upsertPart = db.prepare<[number, number, number, number]>(
    `INSERT INTO asset_multipart_parts (upload_id, part_index, start_offset, size) VALUES (?, ?, ?, ?)
     ON CONFLICT (upload_id, part_index) DO UPDATE SET start_offset = excluded.start_offset, size = excluded.size`,
  );
  const deletePartRow = db.prepare<[number, number]>(
    "DELETE FROM asset_multipart_parts WHERE upload_id = ? AND part_index = ?",
  );
  // The parts go with it (ON DELETE CASCADE).
  const deleteUpload = db.prepare<[number]>("DELETE FROM asset_multipart_uploads WHERE id = ?");
  const deleteInactive = db.prepare<[number, string]>(
    "DELETE FROM asset_multipart_uploads WHERE id = ? AND updated_at < ?",
  );
  const inactive = db.prepare<[string], UploadRow>(
    `SELECT ${UPLOAD_COLUMNS} FROM asset_multipart_uploads WHERE updated_at < ? ORDER BY updated_at`,
  );
  const allSpools = db.prepare<[], { spool: string }>("SELECT spool FROM asset_multipart_uploads");

  const create = db.transaction((upload: NewMultipartUpload) => {
    insertUpload.run(upload);
    return toUpload(byKey.get(upload.feedId, upload.uploadKey) as UploadRow);
  });

  const recordPart = db.transaction((uploadId: number, part: MultipartPart, now: string) => {
    // Checked in the transaction: a sweep or a feed deletion may have removed the upload meanwhile.
    if (touch.run(now, uploadId).changes === 0) return false;
    upsertPart.run(uploadId, part.index, part.offset, part.size);
    return true;
  });

  return withBusyRetries(db, {
    async find(feedId, uploadKey) {
      const row = byKey.get(feedId, uploadKey);
      return row === undefined ? undefined : toUpload(row);
    },
    create: async (upload) => create.immediate(upload),
    parts: async (uploadId) => partsOf.all(uploadId).map(toPart),
    async recordPart(uploadId, part, now) {
      if (!recordPart.immediate(uploadId, part, now)) throw uploadRemoved();
    },
    // A failed part's row must go even on a full disk: its bytes may be half overwritten.
    deletePart: async (uploadId, index) => runDeletion(db, () => void deletePartRow.run(uploadId, index)),
    delete: async (uploadId) => runDeletion(db, () => deleteUpload.run(uploadId).changes > 0),
    deleteIfInactive: async (uploadId, before) => deleteInactive.run(uploadId, before).changes > 0,
    inactiveSince: async (before) => inactive.all(before).map(toUpload),
    spools: async () => new Set(allSpools.all().map((row) => row.spool)),
  });
}
