import type { Db } from "../../../storage/database.js";
import { createQuietBatches } from "../../../storage/quiet-batches.js";

/**
 * Download counters, batched (storage/quiet-batches.ts): written in one transaction at most
 * FLUSH_INTERVAL_MS after the first download, and whenever someone asks (`flush`: before reads
 * that show counts, on graceful shutdown).
 *
 * The trade-off, accepted on purpose: a crash or power cut loses at most the downloads counted
 * in the last FLUSH_INTERVAL_MS (about one second). Package data is never at risk: uploads,
 * deletes and every other write still commit, fsynced, before they are acknowledged; only these
 * statistics wait.
 */
export interface DownloadCounter {
  /**
   * Counts one download of the version and its package, made at `at` (ISO-8601 UTC: the version's
   * last_downloaded_at, which retention reads); written within FLUSH_INTERVAL_MS.
   */
  add(feedId: number, versionId: number, packageId: number, at: string): void;
  /** Writes every pending count now, in one transaction; does nothing when none is pending. */
  flush(): void;
  /**
   * Downloads of the feed written by this counter so far: part of the feed's listing generation,
   * since its writes are quiet (see ChangeWatch.quietly) and so move no other version.
   */
  writtenFor(feedId: number): number;
}

export const FLUSH_INTERVAL_MS = 1_000;

interface Pending {
  readonly feedId: number;
  readonly packageId: number;
  count: number;
  /** The latest download counted, ISO-8601 UTC. */
  at: string;
}

const counters = new WeakMap<Db, DownloadCounter>();

/** One counter per connection, so that every reader of the connection can flush what it holds. */
export function downloadCounterOf(db: Db): DownloadCounter {
  let counter = counters.get(db);
  if (counter === undefined) {
    counter = createDownloadCounter(db);
    counters.set(db, counter);
  }
  return counter;
}

/**
 * Writes the connection's pending download counts, if any: called before every read that shows
 * counts, so that a download is visible in the next listing. A failure (another process holding
 * the write lock) leaves them pending for the timer's next attempt and is not thrown: a read must
 * not fail because a statistic could not be written yet.
 */
export function flushDownloadCounts(db: Db): void {
  try {
    counters.get(db)?.flush();
  } catch {
    // still pending, see above
  }
}

function createDownloadCounter(db: Db): DownloadCounter {
  // The same statement stamps the last download (migration 0018): no extra write per download.
  const countVersion = db.prepare<[number, string, number]>(
    "UPDATE upack_versions SET downloads = downloads + ?, last_downloaded_at = ? WHERE id = ?",
  );
  const countPackage = db.prepare<[number, number]>("UPDATE upack_packages SET downloads = downloads + ? WHERE id = ?");
  const written = new Map<number, number>();
  // By version id.
  const batches = createQuietBatches<number, Pending>(db, {
    intervalMs: FLUSH_INTERVAL_MS,
    write(batch) {
      for (const [versionId, { packageId, count, at }] of batch) {
        // A version deleted since it was looked up updates nothing, and then neither does its package.
        if (countVersion.run(count, at, versionId).changes > 0) countPackage.run(count, packageId);
      }
    },
    merge(pending, next) {
      pending.count += next.count;
      if (next.at > pending.at) pending.at = next.at;
      return pending;
    },
    written(batch) {
      for (const { feedId, count } of batch.values()) written.set(feedId, (written.get(feedId) ?? 0) + count);
    },
  });

  return {
    add: (feedId, versionId, packageId, at) => batches.add(versionId, { feedId, packageId, count: 1, at }),
    flush: batches.flush,
    writtenFor: (feedId) => written.get(feedId) ?? 0,
  };
}
