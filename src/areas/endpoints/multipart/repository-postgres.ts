import { inTransaction, type PostgresDb, readRows, writeRows } from "../../../storage/postgres/database.js";
import {
  type MultipartRepository,
  type PartRow,
  toPart,
  toUpload,
  UPLOAD_COLUMNS,
  type UploadRow,
} from "./repository.js";
import { uploadRemoved } from "./rules.js";

const BY_KEY = `SELECT ${UPLOAD_COLUMNS} FROM asset_multipart_uploads WHERE feed_id = $1 AND upload_key = $2`;
const INSERT_UPLOAD = `INSERT INTO asset_multipart_uploads
       (feed_id, upload_key, path, path_key, total_size, total_parts, spool, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)
     ON CONFLICT (feed_id, upload_key) DO NOTHING
     RETURNING ${UPLOAD_COLUMNS}`;
const PARTS_OF =
  "SELECT part_index, start_offset, size FROM asset_multipart_parts WHERE upload_id = $1 ORDER BY start_offset, part_index";
const TOUCH = "UPDATE asset_multipart_uploads SET updated_at = $1 WHERE id = $2";
const UPSERT_PART = `INSERT INTO asset_multipart_parts (upload_id, part_index, start_offset, size) VALUES ($1, $2, $3, $4)
     ON CONFLICT (upload_id, part_index) DO UPDATE SET start_offset = excluded.start_offset, size = excluded.size`;
const DELETE_PART = "DELETE FROM asset_multipart_parts WHERE upload_id = $1 AND part_index = $2";
// The parts go with it (ON DELETE CASCADE).
const DELETE_UPLOAD = "DELETE FROM asset_multipart_uploads WHERE id = $1";
const DELETE_INACTIVE = "DELETE FROM asset_multipart_uploads WHERE id = $1 AND updated_at < $2";
// Ties in id order, as SQLite reads them through its index on updated_at.
const INACTIVE = `SELECT ${UPLOAD_COLUMNS} FROM asset_multipart_uploads WHERE updated_at < $1 ORDER BY updated_at, id`;
const ALL_SPOOLS = "SELECT spool FROM asset_multipart_uploads";

/** MultipartRepository on PostgreSQL (cluster mode): the same uploads, parts and refusals as on SQLite. */
export function createPostgresMultipartRepository(db: PostgresDb): MultipartRepository {
  return {
    async find(feedId, uploadKey) {
      const [row] = await readRows<UploadRow>(db, BY_KEY, [feedId, uploadKey]);
      return row === undefined ? undefined : toUpload(row);
    },
    create: async (upload) =>
      inTransaction(db, async (client) => {
        // The insert waits for a concurrent one of the same key and then does nothing; the next
        // statement (a new snapshot in READ COMMITTED) reads the winner's row. Should that upload be
        // deleted in between (a sweep), the insert is tried again, as SQLite's would find no row.
        for (;;) {
          const [inserted] = (
            await client.query<UploadRow>(INSERT_UPLOAD, [
              upload.feedId,
              upload.uploadKey,
              upload.path,
              upload.pathKey,
              upload.totalSize,
              upload.totalParts,
              upload.spool,
              upload.createdAt,
            ])
          ).rows;
          if (inserted !== undefined) return toUpload(inserted);
          const [stored] = (await client.query<UploadRow>(BY_KEY, [upload.feedId, upload.uploadKey])).rows;
          if (stored !== undefined) return toUpload(stored);
        }
      }),
    parts: async (uploadId) => (await readRows<PartRow>(db, PARTS_OF, [uploadId])).map(toPart),
    async recordPart(uploadId, part, now) {
      const recorded = await inTransaction(db, async (client) => {
        // The touch locks the upload's row until COMMIT: a sweep or a feed deletion either went
        // first (no row: refused) or waits, so the part is never written for a deleted upload.
        if (((await client.query(TOUCH, [now, uploadId])).rowCount ?? 0) === 0) return false;
        await client.query(UPSERT_PART, [uploadId, part.index, part.offset, part.size]);
        return true;
      });
      if (!recorded) throw uploadRemoved();
    },
    async deletePart(uploadId, index) {
      await writeRows(db, DELETE_PART, [uploadId, index]);
    },
    delete: async (uploadId) => ((await writeRows(db, DELETE_UPLOAD, [uploadId])).rowCount ?? 0) > 0,
    // One statement: a part recorded meanwhile moves updated_at, and the row, re-read, no longer matches.
    deleteIfInactive: async (uploadId, before) =>
      ((await writeRows(db, DELETE_INACTIVE, [uploadId, before])).rowCount ?? 0) > 0,
    inactiveSince: async (before) => (await readRows<UploadRow>(db, INACTIVE, [before])).map(toUpload),
    spools: async () => new Set((await readRows<{ spool: string }>(db, ALL_SPOOLS)).map((row) => row.spool)),
  };
}
