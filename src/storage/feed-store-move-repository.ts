import type { Db } from "./database.js";

export type MoveState = "copying" | "deleting" | "done" | "failed";
export type MovePhase = "copying" | "deleting";

/** The row of a feed's latest move (migrations/0014-feed-store-moves.sql). */
export interface MoveRow {
  readonly feedId: number;
  readonly fromStore: string;
  readonly toStore: string;
  readonly state: MoveState;
  /** The phase a failed move stopped in. */
  readonly failedIn?: MovePhase;
  readonly cursor: string;
  readonly blobsTotal: number;
  readonly blobsDone: number;
  readonly bytesTotal: number;
  readonly bytesDone: number;
  readonly startedAt: string;
  readonly updatedAt: string;
  readonly finishedAt?: string;
  readonly error?: string;
}

/** One blob a feed's rows reference, with its size as the rows record it. */
export interface FeedBlob {
  readonly sha256: string;
  readonly size: number;
}

/** Where a phase stands: what it has finished, up to which address. */
export interface MoveProgress {
  readonly cursor: string;
  readonly blobsDone: number;
  readonly bytesDone: number;
  /** Grows when the feed gained blobs since the move began. */
  readonly blobsTotal: number;
  readonly bytesTotal: number;
}

/** SQL of `feed_store_moves` and of the blobs a feed's rows reference (upack versions, assembled packages, asset files). */
export interface FeedStoreMoveRepository {
  find(feedId: number): Promise<MoveRow | undefined>;
  /**
   * Feeds whose move is under way and no running process runs, now this process's to run, in id
   * order. On one machine: every such move (the process that ran them stopped). In a cluster: the
   * moves recorded as this node's and, with `orphans`, those of nodes that are gone or of none.
   */
  claimUnfinished(orphans: boolean): Promise<number[]>;
  /** Starts (or restarts) the feed's move: any earlier row is replaced. */
  begin(feedId: number, from: string, to: string, totals: { blobs: number; bytes: number }, now: string): Promise<void>;
  /**
   * Records progress; false when the row is gone (the feed was deleted) or, in a cluster, another
   * node took the move over (this node was taken for gone). startDeleting, finish and fail write
   * nothing then either.
   */
  progress(feedId: number, progress: MoveProgress, now: string): Promise<boolean>;
  /** Enters the deleting phase with its cursor reset. */
  startDeleting(feedId: number, now: string): Promise<boolean>;
  finish(feedId: number, now: string): Promise<void>;
  fail(feedId: number, phase: MovePhase, error: string, now: string): Promise<void>;
  /** A failed move resumes in the phase it stopped in. */
  resume(feedId: number, now: string): Promise<void>;
  /** How many distinct blobs the feed's rows reference and their bytes. */
  totals(feedId: number): Promise<{ blobs: number; bytes: number }>;
  /**
   * Every blob of the feed, in address order. One query for the whole feed: a page at a time would
   * scan the feed's rows again for each page (about half a second per page at 100,000 files).
   */
  blobsOf(feedId: number): Promise<FeedBlob[]>;
  /** Whether a row of this feed references the blob. */
  referencedBy(feedId: number, sha256: string): Promise<boolean>;
  /** Whether a row of a feed other than this one references the blob. */
  referencedElsewhere(feedId: number, sha256: string): Promise<boolean>;
}

export interface MoveTableRow {
  feed_id: number;
  from_store: string;
  to_store: string;
  state: MoveState;
  failed_in: MovePhase | null;
  cursor: string;
  blobs_total: number;
  blobs_done: number;
  bytes_total: number;
  bytes_done: number;
  started_at: string;
  updated_at: string;
  finished_at: string | null;
  error: string | null;
}

/** Every (feed, blob, size) a row keeps: the tables the `blob_references` view lists (migration 0006). */
export const FEED_BLOBS = `
  SELECT p.feed_id AS feed_id, v.blob_sha256 AS sha256, v.size AS size
    FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
  UNION ALL
  SELECT p.feed_id, a.blob_sha256, a.size
    FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id JOIN upack_packages p ON p.id = v.package_id
  UNION ALL
  SELECT feed_id, blob_sha256, size FROM asset_items WHERE blob_sha256 IS NOT NULL`;

export function createFeedStoreMoveRepository(db: Db): FeedStoreMoveRepository {
  const select = db.prepare<[number], MoveTableRow>("SELECT * FROM feed_store_moves WHERE feed_id = ?");
  const selectUnfinished = db.prepare<[], { feed_id: number }>(
    "SELECT feed_id FROM feed_store_moves WHERE state IN ('copying', 'deleting') ORDER BY feed_id",
  );
  const upsert = db.prepare<[number, string, string, number, number, string, string]>(
    `INSERT OR REPLACE INTO feed_store_moves
       (feed_id, from_store, to_store, state, cursor, blobs_total, blobs_done, bytes_total, bytes_done, started_at, updated_at)
     VALUES (?, ?, ?, 'copying', '', ?, 0, ?, 0, ?, ?)`,
  );
  const updateProgress = db.prepare<[string, number, number, number, number, string, number]>(
    `UPDATE feed_store_moves SET cursor = ?, blobs_done = ?, bytes_done = ?, blobs_total = ?, bytes_total = ?,
       updated_at = ? WHERE feed_id = ?`,
  );
  const updateDeleting = db.prepare<[string, number]>(
    "UPDATE feed_store_moves SET state = 'deleting', cursor = '', updated_at = ? WHERE feed_id = ?",
  );
  const updateDone = db.prepare<[string, string, number]>(
    "UPDATE feed_store_moves SET state = 'done', finished_at = ?, updated_at = ?, error = NULL WHERE feed_id = ?",
  );
  const updateFailed = db.prepare<[MovePhase, string, string, number]>(
    "UPDATE feed_store_moves SET state = 'failed', failed_in = ?, error = ?, updated_at = ? WHERE feed_id = ?",
  );
  const updateResumed = db.prepare<[string, number]>(
    `UPDATE feed_store_moves SET state = coalesce(failed_in, 'copying'), failed_in = NULL, error = NULL,
       finished_at = NULL, updated_at = ? WHERE feed_id = ?`,
  );
  const selectTotals = db.prepare<[number], { blobs: number; bytes: number | null }>(
    `SELECT count(*) AS blobs, sum(size) AS bytes FROM
       (SELECT sha256, max(size) AS size FROM (${FEED_BLOBS}) WHERE feed_id = ? GROUP BY sha256)`,
  );
  const selectBlobs = db.prepare<[number], FeedBlob>(
    `SELECT sha256, max(size) AS size FROM (${FEED_BLOBS}) WHERE feed_id = ? GROUP BY sha256 ORDER BY sha256`,
  );
  const selectReferenced = db.prepare<[number, string], { one: number }>(
    `SELECT 1 AS one FROM (${FEED_BLOBS}) WHERE feed_id = ? AND sha256 = ? LIMIT 1`,
  );
  const selectElsewhere = db.prepare<[string, number, string, number, string, number], { one: number }>(
    `SELECT 1 AS one FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
       WHERE v.blob_sha256 = ? AND p.feed_id <> ?
     UNION ALL
     SELECT 1 FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id
       JOIN upack_packages p ON p.id = v.package_id WHERE a.blob_sha256 = ? AND p.feed_id <> ?
     UNION ALL
     SELECT 1 FROM asset_items WHERE blob_sha256 = ? AND feed_id <> ?
     LIMIT 1`,
  );

  return {
    async find(feedId) {
      const row = select.get(feedId);
      return row === undefined ? undefined : toMove(row);
    },
    claimUnfinished: async () => selectUnfinished.all().map((row) => row.feed_id),
    async begin(feedId, from, to, totals, now) {
      upsert.run(feedId, from, to, totals.blobs, totals.bytes, now, now);
    },
    async progress(feedId, p, now) {
      return (
        updateProgress.run(p.cursor, p.blobsDone, p.bytesDone, p.blobsTotal, p.bytesTotal, now, feedId).changes > 0
      );
    },
    startDeleting: async (feedId, now) => updateDeleting.run(now, feedId).changes > 0,
    async finish(feedId, now) {
      updateDone.run(now, now, feedId);
    },
    async fail(feedId, phase, error, now) {
      updateFailed.run(phase, error, now, feedId);
    },
    async resume(feedId, now) {
      updateResumed.run(now, feedId);
    },
    async totals(feedId) {
      const row = selectTotals.get(feedId);
      return { blobs: row?.blobs ?? 0, bytes: row?.bytes ?? 0 };
    },
    blobsOf: async (feedId) => selectBlobs.all(feedId),
    referencedBy: async (feedId, sha256) => selectReferenced.get(feedId, sha256) !== undefined,
    referencedElsewhere: async (feedId, sha256) =>
      selectElsewhere.get(sha256, feedId, sha256, feedId, sha256, feedId) !== undefined,
  };
}

/** A row as the mover reads it (both databases). */
export function toMove(row: MoveTableRow): MoveRow {
  return {
    feedId: row.feed_id,
    fromStore: row.from_store,
    toStore: row.to_store,
    state: row.state,
    ...(row.failed_in === null ? {} : { failedIn: row.failed_in }),
    cursor: row.cursor,
    blobsTotal: row.blobs_total,
    blobsDone: row.blobs_done,
    bytesTotal: row.bytes_total,
    bytesDone: row.bytes_done,
    startedAt: row.started_at,
    updatedAt: row.updated_at,
    ...(row.finished_at === null ? {} : { finishedAt: row.finished_at }),
    ...(row.error === null ? {} : { error: row.error }),
  };
}
