import type pg from "pg";
import { type PostgresDb, quietTransaction } from "./database.js";

/**
 * Statistics written in batches on PostgreSQL (cluster mode): storage/quiet-batches.ts's
 * counterpart, for one node. Entries are kept in memory by key, merged, and written in one quiet
 * transaction (`quietTransaction`: no node's cache version moves, caches never read these columns)
 * at most `intervalMs` after the first of them, and whenever a reader asks (`flush`). A crash
 * loses at most the last interval's entries of this node.
 *
 * A batch's writer may leave entries for later (the rows they belong to are busy: it locks them
 * with SKIP LOCKED rather than wait, so that a flush can neither deadlock with another writer nor
 * hold a read up behind one): they are pending again, as SQLite keeps a batch pending while
 * another process holds the write lock.
 */
export interface PostgresQuietBatches<K, V> {
  /** Merges the entry into the one pending under `key` (or adds it); written within the interval. */
  add(key: K, entry: V): void;
  /**
   * Writes every pending entry (after a write already under way, so that a caller that awaits it
   * sees every entry added before it was called, but those the writer left); throws when the
   * database refuses (they stay pending).
   */
  flush(): Promise<void>;
}

export interface PostgresQuietBatchesOptions<K, V> {
  readonly intervalMs: number;
  /**
   * Writes what it can of one batch, inside the quiet transaction; returns the entries it left for
   * a later write (a subset of the batch), or nothing when it wrote them all.
   */
  readonly write: (client: pg.PoolClient, batch: ReadonlyMap<K, V>) => Promise<ReadonlyMap<K, V> | undefined>;
  /** The entry pending under a key once another arrives (entries may be changed in place). */
  readonly merge: (pending: V, next: V) => V;
  /** Called with the entries of a batch that were not written (left by `write`, or all on a failure), pending again. */
  readonly kept?: (entries: ReadonlyMap<K, V>) => void;
}

export function createPostgresQuietBatches<K, V>(
  db: PostgresDb,
  options: PostgresQuietBatchesOptions<K, V>,
): PostgresQuietBatches<K, V> {
  let pending = new Map<K, V>();
  let timer: NodeJS.Timeout | undefined;
  /** The write under way (settled): flushes take turns, each after the one before. */
  let queue: Promise<void> = Promise.resolve();

  function keep(key: K, entry: V): void {
    const earlier = pending.get(key);
    pending.set(key, earlier === undefined ? entry : options.merge(earlier, entry));
  }

  /** Entries not written: pending again, for the timer's next attempt. */
  function putBack(entries: ReadonlyMap<K, V>): void {
    if (entries.size === 0) return;
    for (const [key, entry] of entries) keep(key, entry);
    options.kept?.(entries);
    schedule();
  }

  async function write(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    let left: ReadonlyMap<K, V> | undefined;
    try {
      left = await quietTransaction(db, (client) => options.write(client, batch));
    } catch (error) {
      putBack(batch);
      throw error;
    }
    if (left !== undefined) putBack(left);
  }

  function flush(): Promise<void> {
    const run = queue.then(write);
    queue = run.catch(() => undefined);
    return run;
  }

  function schedule(): void {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      // A pool ended meanwhile (tests, shutdown without an app) has nowhere to write to.
      if (db.pool.ending) return void pending.clear();
      // A failure is rescheduled by write; a timer has no caller to report to.
      flush().catch(() => undefined);
    }, options.intervalMs);
    // Pending entries never keep a process alive; graceful shutdown flushes them.
    timer.unref();
  }

  return {
    add(key, entry) {
      keep(key, entry);
      schedule();
    },
    flush,
  };
}
