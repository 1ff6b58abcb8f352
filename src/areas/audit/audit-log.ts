import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { AuditEntry, AuditRecord } from "./record.js";
import { createPostgresAuditRepository } from "./repository-postgres.js";
import { type AuditFilter, type AuditRepository, createAuditRepository } from "./repository.js";

export interface AuditPage {
  readonly records: AuditRecord[];
  /** Pass as `after` for the next (older) page; absent on the last page. */
  readonly next?: number;
}

/**
 * The append-only audit log. Appends are buffered and written together as soon as the event loop
 * is free (one short transaction for every request that ended meanwhile), quietly and without an
 * fsync (see createAuditLog): an audit record must never slow the request it describes, nor make
 * cached answers stale.
 */
export interface AuditLog {
  /** Queues the entry; it is stored within the current turn of the event loop (a query sees it). */
  append(entry: AuditEntry): void;
  /**
   * Stores what is queued now, and settles once that write and every write started before it have
   * ended (a query awaits it first, so that it reads its own writes). Never rejects: a batch the
   * database refuses is queued again (onWriteError) and retried.
   */
  flush(): Promise<void>;
  /** Newest first; `limit` records at most. */
  page(filter: AuditFilter, limit: number): Promise<AuditPage>;
  /** Every matching record, newest first, as JSON lines, a batch at a time. */
  exportLines(filter: AuditFilter): AsyncGenerator<string>;
  /** Deletes the records older than the retention period (none when it is 0); answers how many. */
  prune(): Promise<number>;
  /** Prunes now and then once a day; returns the stop. */
  schedulePruning(onError: (error: unknown) => void): () => void;
  /**
   * Stores what is queued and stops retrying (the app is closing). On SQLite the write is made
   * within the call; the app's onClose hook does not wait for more. On PostgreSQL it is a round
   * trip: await `flush()` after it, before the pool is ended.
   */
  close(): void;
}

export interface AuditLogDeps {
  /** The data directory's SQLite or a cluster's PostgreSQL. */
  readonly db: MetadataDb;
  readonly clock: Clock;
  /** Records older than this many days are pruned; 0 keeps them forever. */
  readonly retentionDays: number;
  readonly onWriteError?: (error: unknown, queued: number) => void;
}

const DAY_MS = 86_400_000;
const EXPORT_BATCH = 500;
/** Entries kept while the database refuses them (another process's lock, a full disk); then the oldest go. */
const MAX_QUEUED = 10_000;
const RETRY_MS = 250;

/**
 * Writes through the server's own connection, with two differences from its other writes
 * (the repository's `unsynced` writes, storage/unsynced-writes.ts):
 * - quietly (storage/change-watch.ts): no cache reads audit records, so appending them must not
 *   make every cached answer stale (a second connection's commit would, through data_version:
 *   every refused request would end the hot downloads' replays);
 * - with `synchronous = NORMAL` for the batch's commit: in WAL mode it then appends to the log
 *   without an fsync. A record so written survives a crash of the process at once, and a power cut
 *   from the connection's next ordinary commit on (`synchronous = FULL` syncs the whole log, these
 *   frames included). An fsync per batch would otherwise be paid a second time by every write
 *   request. Flushes run between requests, never inside another transaction.
 * The repository's methods are asynchronous; SQLite's store at once, when called, so that a batch
 * is written exactly where it was while they were synchronous. A write that has not ended yet (a
 * round trip, on PostgreSQL) is awaited by every later flush: a query still reads its own writes.
 * On PostgreSQL (cluster mode) the batch is one quiet transaction (repository-postgres.ts), and
 * pruning may run on several nodes at once: the repository's prune is safe under that.
 */
export function createAuditLog(deps: AuditLogDeps): AuditLog {
  const repository: AuditRepository = byDatabase(
    deps.db,
    (sqlite) => createAuditRepository(sqlite, { unsynced: true }),
    (postgres) => createPostgresAuditRepository(postgres, { unsynced: true }),
  );
  let queued: AuditEntry[] = [];
  let scheduled = false;
  let retry: NodeJS.Timeout | undefined;
  /**
   * The last batch's write, and how many batches are written or waiting to be. Batches are written
   * one after another, so that records are numbered in the order their requests ended (a page is
   * newest first by number): on PostgreSQL two batches written at once, on two connections, could
   * draw their numbers the other way round. A batch is taken out of the queue when its write is
   * chained; with nothing before it, it starts at once (on SQLite, within the call).
   */
  let lastWrite: Promise<void> = Promise.resolve();
  let unfinishedWrites = 0;

  /** Writes the batch; when the database refuses it, queues it again before what came since. Never rejects. */
  async function store(batch: AuditEntry[]): Promise<void> {
    try {
      await repository.insert(batch);
    } catch (error) {
      queued = [...batch, ...queued].slice(-MAX_QUEUED);
      deps.onWriteError?.(error, queued.length);
      retry ??= setTimeout(() => {
        retry = undefined;
        void flush();
      }, RETRY_MS).unref();
    }
  }

  function flush(): Promise<void> {
    scheduled = false;
    if (queued.length > 0) {
      const batch = queued;
      queued = [];
      const write = unfinishedWrites === 0 ? store(batch) : lastWrite.then(() => store(batch));
      unfinishedWrites += 1;
      lastWrite = write.finally(() => {
        unfinishedWrites -= 1;
      });
    }
    return lastWrite;
  }

  async function page(filter: AuditFilter, limit: number): Promise<AuditPage> {
    await flush();
    const records = await repository.page(filter, limit + 1);
    if (records.length <= limit) return { records };
    const shown = records.slice(0, limit);
    const last = shown.at(-1);
    return last === undefined ? { records: shown } : { records: shown, next: last.id };
  }

  async function prune(): Promise<number> {
    if (deps.retentionDays === 0) return 0;
    await flush();
    const before = new Date(deps.clock.now().getTime() - deps.retentionDays * DAY_MS).toISOString();
    return repository.prune(before);
  }

  return {
    append(entry) {
      queued.push(entry);
      if (scheduled) return;
      scheduled = true;
      // flush never rejects.
      setImmediate(() => void flush());
    },
    flush,
    page,
    async *exportLines(filter) {
      let after = filter.after;
      for (;;) {
        const { records, next } = await page({ ...filter, ...(after === undefined ? {} : { after }) }, EXPORT_BATCH);
        if (records.length > 0) yield records.map((record) => `${JSON.stringify(record)}\n`).join("");
        if (next === undefined) return;
        after = next;
        await yieldToEventLoop();
      }
    },
    prune,
    schedulePruning(onError) {
      const run = () => void prune().catch(onError);
      const first = setTimeout(run, 0).unref();
      const daily = setInterval(run, DAY_MS).unref();
      return () => {
        clearTimeout(first);
        clearInterval(daily);
      };
    },
    close() {
      if (retry !== undefined) clearTimeout(retry);
      // flush never rejects; on SQLite the batch is stored before it returns.
      void flush();
    },
  };
}
