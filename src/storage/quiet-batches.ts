import { changeWatchOf } from "./change-watch.js";
import type { Db } from "./database.js";

/**
 * Statistics written in batches (download counts, last-download stamps). With synchronous=FULL
 * every committed write is an fsync, and one write per download made the fsync the most expensive
 * part of serving a small file. Entries are therefore kept in memory by key, merged, and written in
 * one quiet transaction (ChangeWatch.quietly: caches never read these columns) at most `intervalMs`
 * after the first of them, and whenever a reader asks (`flush`). A crash loses at most the last
 * interval's entries; everything else still commits, fsynced, before it is acknowledged.
 * PostgreSQL's counterpart (cluster mode) is storage/postgres/quiet-batches.ts.
 */
export interface QuietBatches<K, V> {
  /** Merges the entry into the one pending under `key` (or adds it); written within the interval. */
  add(key: K, entry: V): void;
  /** Writes every pending entry now, in one transaction; throws when the database refuses (they stay pending). */
  flush(): void;
}

export interface QuietBatchesOptions<K, V> {
  readonly intervalMs: number;
  /** Writes one batch; runs inside the transaction. */
  readonly write: (batch: ReadonlyMap<K, V>) => void;
  /** The entry pending under a key once another arrives (entries may be changed in place). */
  readonly merge: (pending: V, next: V) => V;
  /** Called after a batch committed. */
  readonly written?: (batch: ReadonlyMap<K, V>) => void;
}

export function createQuietBatches<K, V>(db: Db, options: QuietBatchesOptions<K, V>): QuietBatches<K, V> {
  const watch = changeWatchOf(db);
  const write = db.transaction(options.write);
  let pending = new Map<K, V>();
  let timer: NodeJS.Timeout | undefined;

  function add(key: K, entry: V): void {
    const earlier = pending.get(key);
    pending.set(key, earlier === undefined ? entry : options.merge(earlier, entry));
  }

  function flush(): void {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    try {
      watch.quietly(() => write.immediate(batch));
    } catch (error) {
      // Kept for the next attempt (the database may be busy with another process's write).
      for (const [key, entry] of batch) add(key, entry);
      schedule();
      throw error;
    }
    options.written?.(batch);
  }

  function schedule(): void {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      // A connection closed meanwhile (tests, shutdown without an app) has nowhere to write to.
      if (!db.open) return void pending.clear();
      try {
        flush();
      } catch {
        // rescheduled by flush; a timer has no caller to report to
      }
    }, options.intervalMs);
    // Pending entries never keep a process alive; graceful shutdown flushes them.
    timer.unref();
  }

  return {
    add(key, entry) {
      add(key, entry);
      schedule();
    },
    flush,
  };
}
