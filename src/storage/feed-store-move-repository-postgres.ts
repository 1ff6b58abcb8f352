import {
  FEED_BLOBS,
  type FeedBlob,
  type FeedStoreMoveRepository,
  type MoveTableRow,
  toMove,
} from "./feed-store-move-repository.js";
import { type PostgresDb, readRows, writeRows } from "./postgres/database.js";

/**
 * FeedStoreMoveRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite.
 * Every method is one statement; none reads and then writes. Which node runs a feed's move is the
 * mover's business (feed-store-move.ts keeps its running moves in its process: in a cluster the
 * move needs a job claim, storage/postgres/job-claims.ts, before two nodes could run one).
 */
export function createPostgresFeedStoreMoveRepository(db: PostgresDb): FeedStoreMoveRepository {
  const changed = async (sql: string, params: readonly unknown[]) =>
    ((await writeRows(db, sql, params)).rowCount ?? 0) > 0;
  return {
    async find(feedId) {
      const [row] = await readRows<MoveTableRow>(db, "SELECT * FROM feed_store_moves WHERE feed_id = $1", [feedId]);
      return row === undefined ? undefined : toMove(row);
    },
    async unfinished() {
      const rows = await readRows<{ feed_id: number }>(
        db,
        "SELECT feed_id FROM feed_store_moves WHERE state IN ('copying', 'deleting') ORDER BY feed_id",
      );
      return rows.map((row) => row.feed_id);
    },
    async begin(feedId, from, to, totals, now) {
      // SQLite's INSERT OR REPLACE: a new row in every column (what it does not name is back to its
      // default); nothing references feed_store_moves, so the replaced row cascades nowhere.
      await writeRows(
        db,
        `INSERT INTO feed_store_moves
           (feed_id, from_store, to_store, state, cursor, blobs_total, blobs_done, bytes_total, bytes_done, started_at, updated_at)
         VALUES ($1, $2, $3, 'copying', '', $4, 0, $5, 0, $6, $6)
         ON CONFLICT (feed_id) DO UPDATE SET from_store = excluded.from_store, to_store = excluded.to_store,
           state = excluded.state, failed_in = NULL, cursor = excluded.cursor, blobs_total = excluded.blobs_total,
           blobs_done = excluded.blobs_done, bytes_total = excluded.bytes_total, bytes_done = excluded.bytes_done,
           started_at = excluded.started_at, updated_at = excluded.updated_at, finished_at = NULL, error = NULL`,
        [feedId, from, to, totals.blobs, totals.bytes, now],
      );
    },
    progress: (feedId, p, now) =>
      changed(
        `UPDATE feed_store_moves SET cursor = $1, blobs_done = $2, bytes_done = $3, blobs_total = $4, bytes_total = $5,
           updated_at = $6 WHERE feed_id = $7`,
        [p.cursor, p.blobsDone, p.bytesDone, p.blobsTotal, p.bytesTotal, now, feedId],
      ),
    startDeleting: (feedId, now) =>
      changed("UPDATE feed_store_moves SET state = 'deleting', cursor = '', updated_at = $1 WHERE feed_id = $2", [
        now,
        feedId,
      ]),
    async finish(feedId, now) {
      await writeRows(
        db,
        "UPDATE feed_store_moves SET state = 'done', finished_at = $1, updated_at = $1, error = NULL WHERE feed_id = $2",
        [now, feedId],
      );
    },
    async fail(feedId, phase, error, now) {
      await writeRows(
        db,
        "UPDATE feed_store_moves SET state = 'failed', failed_in = $1, error = $2, updated_at = $3 WHERE feed_id = $4",
        [phase, error, now, feedId],
      );
    },
    async resume(feedId, now) {
      await writeRows(
        db,
        `UPDATE feed_store_moves SET state = coalesce(failed_in, 'copying'), failed_in = NULL, error = NULL,
           finished_at = NULL, updated_at = $1 WHERE feed_id = $2`,
        [now, feedId],
      );
    },
    async totals(feedId) {
      // sum() of bigint is numeric (read as text): cast back to bigint, read as a number.
      const [row] = await readRows<{ blobs: number; bytes: number | null }>(
        db,
        `SELECT count(*) AS blobs, sum(size)::bigint AS bytes FROM
           (SELECT sha256, max(size) AS size FROM (${FEED_BLOBS}) b WHERE feed_id = $1 GROUP BY sha256) s`,
        [feedId],
      );
      return { blobs: row?.blobs ?? 0, bytes: row?.bytes ?? 0 };
    },
    blobsOf: (feedId) =>
      readRows<FeedBlob>(
        db,
        // Address order as SQLite (and the mover's cursor) compares: bytewise.
        `SELECT sha256, max(size) AS size FROM (${FEED_BLOBS}) b WHERE feed_id = $1
          GROUP BY sha256 ORDER BY sha256 COLLATE "C"`,
        [feedId],
      ),
    async referencedBy(feedId, sha256) {
      const rows = await readRows(
        db,
        `SELECT 1 AS one FROM (${FEED_BLOBS}) b WHERE feed_id = $1 AND sha256 = $2 LIMIT 1`,
        [feedId, sha256],
      );
      return rows.length > 0;
    },
    async referencedElsewhere(feedId, sha256) {
      const rows = await readRows(
        db,
        `SELECT 1 AS one FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
           WHERE v.blob_sha256 = $1 AND p.feed_id <> $2
         UNION ALL
         SELECT 1 FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id
           JOIN upack_packages p ON p.id = v.package_id WHERE a.blob_sha256 = $1 AND p.feed_id <> $2
         UNION ALL
         SELECT 1 FROM asset_items WHERE blob_sha256 = $1 AND feed_id <> $2
         LIMIT 1`,
        [sha256, feedId],
      );
      return rows.length > 0;
    },
  };
}
