import {
  FEED_BLOBS,
  type FeedBlob,
  type FeedStoreMoveRepository,
  type MoveTableRow,
  toMove,
} from "./feed-store-move-repository.js";
import { NODE_GONE_AFTER_MS } from "./postgres/cluster-nodes.js";
import { type PostgresDb, readRows, writeRows } from "./postgres/database.js";

/**
 * The moves under way that no other live node runs, with the node each records: this node's ($1),
 * and when orphans are wanted ($2) those of nodes that are gone (no cluster_nodes row, or a
 * heartbeat older than $3 ms) or of none (imported from SQLite, begun before 0012). Liveness is
 * read as the configuration checks' restart rule reads it (collections-repository-postgres.ts).
 */
const UNFINISHED_UNLESS_LIVE = `
  SELECT m.feed_id, runs.node_id FROM feed_store_moves m
    LEFT JOIN feed_store_move_nodes runs ON runs.feed_id = m.feed_id
    LEFT JOIN cluster_nodes node ON node.node_id = runs.node_id
   WHERE m.state IN ('copying', 'deleting')
     AND (runs.node_id = $1
          OR ($2 AND (node.node_id IS NULL
                      OR node.last_heartbeat_at <= now() - make_interval(secs => $3::float8 / 1000))))`;

/** Takes those moves for this node, checking again as it writes: RETURNING lists what it now runs. */
const CLAIM_UNFINISHED = `
  WITH claimed AS (${UNFINISHED_UNLESS_LIVE})
  INSERT INTO feed_store_move_nodes (feed_id, node_id) SELECT feed_id, $1 FROM claimed
  ON CONFLICT (feed_id) DO UPDATE SET node_id = excluded.node_id
  RETURNING feed_id`;

/** The move's node: this one, in the statement that begins or resumes it ($NODE: the last parameter). */
const runHere = (write: string, node: string) => `
  WITH moved AS (${write} RETURNING feed_id)
  INSERT INTO feed_store_move_nodes (feed_id, node_id) SELECT feed_id, ${node} FROM moved
  ON CONFLICT (feed_id) DO UPDATE SET node_id = excluded.node_id`;

/** A write of a running move's row holds only while no other node has taken the move over ($NODE). */
const notTakenOver = (node: string) =>
  `NOT EXISTS (SELECT 1 FROM feed_store_move_nodes runs WHERE runs.feed_id = feed_store_moves.feed_id AND runs.node_id <> ${node})`;

/**
 * FeedStoreMoveRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite, and
 * which node runs each move (feed_store_move_nodes, 0012): `nodeId`, this node's cluster_nodes
 * node_id, is recorded as the move begins or resumes, and a node that stopped loses its moves to
 * the leader's claim. Every method is one statement, but claimUnfinished, which reads before it
 * writes a claim and checks again in the write.
 */
export function createPostgresFeedStoreMoveRepository(db: PostgresDb, nodeId: string): FeedStoreMoveRepository {
  const changed = async (sql: string, params: readonly unknown[]) =>
    ((await writeRows(db, sql, params)).rowCount ?? 0) > 0;
  return {
    async find(feedId) {
      const [row] = await readRows<MoveTableRow>(db, "SELECT * FROM feed_store_moves WHERE feed_id = $1", [feedId]);
      return row === undefined ? undefined : toMove(row);
    },
    async claimUnfinished(orphans) {
      const params = [nodeId, orphans, NODE_GONE_AFTER_MS];
      const ids = (rows: ReadonlyArray<{ feed_id: number }>) => rows.map((row) => row.feed_id).sort((a, b) => a - b);
      // Read first: the leader asks every few seconds, and a write of nothing new would move this
      // node's cache version each time.
      const found = await readRows<{ feed_id: number; node_id: string | null }>(db, UNFINISHED_UNLESS_LIVE, params);
      if (found.every((row) => row.node_id === nodeId)) return ids(found);
      return ids((await writeRows<{ feed_id: number }>(db, CLAIM_UNFINISHED, params)).rows);
    },
    async begin(feedId, from, to, totals, now) {
      // SQLite's INSERT OR REPLACE: a new row in every column (what it does not name is back to its
      // default); the row keeps its feed_store_move_nodes row, which names this node from now on.
      await writeRows(
        db,
        runHere(
          `INSERT INTO feed_store_moves
             (feed_id, from_store, to_store, state, cursor, blobs_total, blobs_done, bytes_total, bytes_done, started_at, updated_at)
           VALUES ($1, $2, $3, 'copying', '', $4, 0, $5, 0, $6, $6)
           ON CONFLICT (feed_id) DO UPDATE SET from_store = excluded.from_store, to_store = excluded.to_store,
             state = excluded.state, failed_in = NULL, cursor = excluded.cursor, blobs_total = excluded.blobs_total,
             blobs_done = excluded.blobs_done, bytes_total = excluded.bytes_total, bytes_done = excluded.bytes_done,
             started_at = excluded.started_at, updated_at = excluded.updated_at, finished_at = NULL, error = NULL`,
          "$7",
        ),
        [feedId, from, to, totals.blobs, totals.bytes, now, nodeId],
      );
    },
    progress: (feedId, p, now) =>
      changed(
        `UPDATE feed_store_moves SET cursor = $1, blobs_done = $2, bytes_done = $3, blobs_total = $4, bytes_total = $5,
           updated_at = $6 WHERE feed_id = $7 AND ${notTakenOver("$8")}`,
        [p.cursor, p.blobsDone, p.bytesDone, p.blobsTotal, p.bytesTotal, now, feedId, nodeId],
      ),
    startDeleting: (feedId, now) =>
      changed(
        `UPDATE feed_store_moves SET state = 'deleting', cursor = '', updated_at = $1
          WHERE feed_id = $2 AND ${notTakenOver("$3")}`,
        [now, feedId, nodeId],
      ),
    async finish(feedId, now) {
      await writeRows(
        db,
        `UPDATE feed_store_moves SET state = 'done', finished_at = $1, updated_at = $1, error = NULL
          WHERE feed_id = $2 AND ${notTakenOver("$3")}`,
        [now, feedId, nodeId],
      );
    },
    async fail(feedId, phase, error, now) {
      await writeRows(
        db,
        `UPDATE feed_store_moves SET state = 'failed', failed_in = $1, error = $2, updated_at = $3
          WHERE feed_id = $4 AND ${notTakenOver("$5")}`,
        [phase, error, now, feedId, nodeId],
      );
    },
    async resume(feedId, now) {
      await writeRows(
        db,
        runHere(
          `UPDATE feed_store_moves SET state = coalesce(failed_in, 'copying'), failed_in = NULL, error = NULL,
             finished_at = NULL, updated_at = $1 WHERE feed_id = $2`,
          "$3",
        ),
        [now, feedId, nodeId],
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
