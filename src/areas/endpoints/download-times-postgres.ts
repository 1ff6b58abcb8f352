import type pg from "pg";
import type { PostgresDb } from "../../storage/postgres/database.js";
import { createPostgresQuietBatches } from "../../storage/postgres/quiet-batches.js";
import { FLUSH_INTERVAL_MS, stampsDue } from "./download-times.js";

/**
 * Asset download times on PostgreSQL (cluster mode): download-times.ts's batching, for one node
 * (storage/postgres/quiet-batches.ts).
 * A file is stamped at most once a minute by this node; the stamps due are written in one quiet
 * transaction (no node's cache version moves: listings never read the column) at most
 * FLUSH_INTERVAL_MS after the first of them, and whenever a reader asks (`flush`: before a
 * retention preview, on shutdown). A crash loses at most the last second's stamps of this node.
 *
 * Locks: the feed row first, as every writer of an asset directory's tree takes it
 * (endpoints/repository-postgres.ts LOCK_TREE), and never waiting for it: a directory another
 * transaction is writing is skipped and its stamps kept for the next write, as SQLite keeps them
 * while another process holds the write lock. So a flush can neither deadlock with an upload or a
 * delete nor hold a download up behind one.
 */
export interface PostgresAssetDownloadTimes {
  /** As AssetDownloadTimes.record: a download of the file at `key` (a path_key), made at `at`. */
  record(feedId: number, key: string, at: Date): void;
  /**
   * Writes the stamps due now (after a write already under way), but those whose directory was
   * busy; throws when the database refuses (they then stay due).
   */
  flush(): Promise<void>;
}

interface Due {
  readonly feedId: number;
  readonly key: string;
  readonly at: string;
}

const recorders = new WeakMap<PostgresDb, PostgresAssetDownloadTimes>();

/** One recorder per PostgresDb (one per node), so that every reader of it can flush what it holds. */
export function postgresAssetDownloadTimesOf(db: PostgresDb): PostgresAssetDownloadTimes {
  let recorder = recorders.get(db);
  if (recorder === undefined) {
    recorder = createRecorder(db);
    recorders.set(db, recorder);
  }
  return recorder;
}

/** As flushAssetDownloadTimes: a failure leaves the stamps due for the timer (a read must not fail for them). */
export async function flushPostgresAssetDownloadTimes(db: PostgresDb): Promise<void> {
  try {
    await recorders.get(db)?.flush();
  } catch {
    // still due, see above
  }
}

function createRecorder(db: PostgresDb): PostgresAssetDownloadTimes {
  const due = stampsDue();
  // By `${feedId}/${key}`.
  const batches = createPostgresQuietBatches<string, Due>(db, {
    intervalMs: FLUSH_INTERVAL_MS,
    write: writeBatch,
    merge: (pending, next) => (next.at > pending.at ? next : pending),
  });

  return {
    record(feedId, key, at) {
      const id = due(feedId, key, at);
      if (id !== undefined) batches.add(id, { feedId, key, at: at.toISOString() });
    },
    flush: batches.flush,
  };
}

/** Writes what it can of the batch; the stamps left for a later write. */
async function writeBatch(client: pg.PoolClient, batch: ReadonlyMap<string, Due>): Promise<Map<string, Due>> {
  const feedIds = [...new Set([...batch.values()].map((entry) => entry.feedId))].sort((a, b) => a - b);
  const locked = new Set(
    (
      await client.query<{ id: number }>(
        "SELECT id FROM feeds WHERE id = ANY ($1::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED",
        [feedIds],
      )
    ).rows.map((row) => row.id),
  );
  const now = [...batch.values()].filter((entry) => locked.has(entry.feedId));
  const left = new Map([...batch].filter(([, entry]) => !locked.has(entry.feedId)));
  if (left.size > 0) {
    // Busy, or deleted since the download: then its files are gone with it, and there is nothing
    // to stamp (as SQLite's UPDATE of a deleted file changes nothing).
    const unlocked = [...new Set([...left.values()].map((entry) => entry.feedId))];
    const existing = new Set(
      (await client.query<{ id: number }>("SELECT id FROM feeds WHERE id = ANY ($1::bigint[])", [unlocked])).rows.map(
        (row) => row.id,
      ),
    );
    for (const [id, entry] of left) if (!existing.has(entry.feedId)) left.delete(id);
  }
  if (now.length > 0) {
    await client.query(
      `UPDATE asset_items i SET last_downloaded_at = b.at
         FROM unnest($1::bigint[], $2::text[], $3::text[]) AS b(feed_id, path_key, at)
        WHERE i.feed_id = b.feed_id AND i.path_key = b.path_key AND i.is_folder = 0`,
      [now.map((entry) => entry.feedId), now.map((entry) => entry.key), now.map((entry) => entry.at)],
    );
  }
  return left;
}
