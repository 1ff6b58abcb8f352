import type pg from "pg";
import type { PostgresDb } from "../../../storage/postgres/database.js";
import { createPostgresQuietBatches } from "../../../storage/postgres/quiet-batches.js";
import { FLUSH_INTERVAL_MS } from "../download/counts.js";

/**
 * Download counters on PostgreSQL (cluster mode): download/counts.ts's batching, for one node
 * (storage/postgres/quiet-batches.ts).
 * Counts are kept in memory by version, merged, and written in one quiet transaction (no node's
 * cache version moves: storage/postgres/change-feed.ts, markQuiet) at most FLUSH_INTERVAL_MS after
 * the first download, and whenever a read that shows counts asks (`flush`). A crash loses at most
 * the last interval's downloads of this node, as on SQLite.
 *
 * Locks: the package row before its versions' rows, as every writer of a package's versions takes
 * them (upack/repository-postgres.ts), and never waiting for one: a package another transaction
 * holds (a save or delete under way, another node's counter) is skipped and its counts kept for
 * the next write, as SQLite keeps them when another process holds the write lock. So a flush can
 * neither deadlock with a save nor hold a read up behind one.
 */
export interface PostgresDownloadCounter {
  /** As DownloadCounter.add: one download of the version, made at `at` (ISO-8601 UTC). */
  add(feedId: number, versionId: number, packageId: number, at: string): void;
  /**
   * Writes every pending count (after a write already under way, so that a read that awaits it
   * sees every count added before it was called, but those whose package was busy); throws when
   * the database refuses (they stay pending).
   */
  flush(): Promise<void>;
  /**
   * Part of the feed's listing generation (UpackQueryRepository.generation): moves when a download
   * of the feed is counted, and when a count of the feed could not be written when asked, so that a
   * listing read meanwhile is not served once the count is written.
   */
  stateOf(feedId: number): number;
}

interface Pending {
  readonly feedId: number;
  readonly packageId: number;
  count: number;
  /** The latest download counted, ISO-8601 UTC. */
  at: string;
}

const counters = new WeakMap<PostgresDb, PostgresDownloadCounter>();

/** One counter per PostgresDb (one per node), so that every reader of it can flush what it holds. */
export function postgresDownloadCounterOf(db: PostgresDb): PostgresDownloadCounter {
  let counter = counters.get(db);
  if (counter === undefined) {
    counter = createCounter(db);
    counters.set(db, counter);
  }
  return counter;
}

/**
 * As flushDownloadCounts: writes the node's pending download counts, if any, before a read that
 * shows them; a failure leaves them pending for the timer and is not thrown (a read must not fail
 * because a statistic could not be written yet).
 */
export async function flushPostgresDownloadCounts(db: PostgresDb): Promise<void> {
  try {
    await counters.get(db)?.flush();
  } catch {
    // still pending, see above
  }
}

function createCounter(db: PostgresDb): PostgresDownloadCounter {
  const states = new Map<number, number>();
  const moved = (feedId: number) => states.set(feedId, (states.get(feedId) ?? 0) + 1);
  // By version id.
  const batches = createPostgresQuietBatches<number, Pending>(db, {
    intervalMs: FLUSH_INTERVAL_MS,
    write: writeBatch,
    merge(pending, next) {
      pending.count += next.count;
      if (next.at > pending.at) pending.at = next.at;
      return pending;
    },
    // Counts not written: their feeds' listings read meanwhile are not to be kept.
    kept(entries) {
      for (const entry of entries.values()) moved(entry.feedId);
    },
  });

  return {
    add(feedId, versionId, packageId, at) {
      batches.add(versionId, { feedId, packageId, count: 1, at });
      moved(feedId);
    },
    flush: batches.flush,
    stateOf: (feedId) => states.get(feedId) ?? 0,
  };
}

/** Writes what it can of the batch; the entries left for a later write. */
async function writeBatch(client: pg.PoolClient, batch: ReadonlyMap<number, Pending>): Promise<Map<number, Pending>> {
  const packageIds = [...new Set([...batch.values()].map((entry) => entry.packageId))].sort((a, b) => a - b);
  const locked = new Set(
    (
      await client.query<{ id: number }>(
        "SELECT id FROM upack_packages WHERE id = ANY ($1::bigint[]) ORDER BY id FOR NO KEY UPDATE SKIP LOCKED",
        [packageIds],
      )
    ).rows.map((row) => row.id),
  );
  const now = new Map([...batch].filter(([, entry]) => locked.has(entry.packageId)));
  const left = new Map([...batch].filter(([, entry]) => !locked.has(entry.packageId)));
  if (left.size > 0) {
    // Busy, or deleted since the download was looked up: then its versions are gone with it, and
    // there is nothing to count (as SQLite's UPDATE of a deleted version changes nothing).
    const unlocked = [...new Set([...left.values()].map((entry) => entry.packageId))];
    const existing = new Set(
      (
        await client.query<{ id: number }>("SELECT id FROM upack_packages WHERE id = ANY ($1::bigint[])", [unlocked])
      ).rows.map((row) => row.id),
    );
    for (const [versionId, entry] of left) if (!existing.has(entry.packageId)) left.delete(versionId);
  }
  if (now.size === 0) return left;
  // The same statement stamps the last download (migration 0018): no extra write per download.
  const counted = await client.query<{ id: number }>(
    `UPDATE upack_versions v SET downloads = v.downloads + b.count, last_downloaded_at = b.at
       FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS b(id, count, at)
      WHERE v.id = b.id
     RETURNING v.id`,
    [[...now.keys()], [...now.values()].map((entry) => entry.count), [...now.values()].map((entry) => entry.at)],
  );
  // A version deleted since it was looked up updates nothing, and then neither does its package.
  const byPackage = new Map<number, number>();
  for (const { id } of counted.rows) {
    const entry = now.get(id);
    if (entry !== undefined) byPackage.set(entry.packageId, (byPackage.get(entry.packageId) ?? 0) + entry.count);
  }
  if (byPackage.size > 0) {
    await client.query(
      `UPDATE upack_packages p SET downloads = p.downloads + b.count
         FROM unnest($1::bigint[], $2::bigint[]) AS b(id, count)
        WHERE p.id = b.id`,
      [[...byPackage.keys()], [...byPackage.values()]],
    );
  }
  return left;
}
