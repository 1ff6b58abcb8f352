import type { Db } from "./database.js";

/**
 * Tells in-process caches whether the database may have changed, cheaply enough to ask on every
 * request:
 * - `total_changes()` counts every row this connection has inserted, updated or deleted, whatever
 *   code did it (repositories, bootstrap, test fixtures), rolled back or not; it costs ~50 ns and
 *   is read on every call;
 * - `PRAGMA data_version` moves whenever another connection, in this process or another one (the
 *   CLI, a second server, an administrator's sqlite3 shell), commits anything. It takes SQLite's
 *   shared lock (~2 µs, as much as a point query), so it is read once per unit of work: again
 *   after `refresh()` (app.ts calls it as each request starts) and in each event-loop turn.
 * So equal versions mean nothing has been written since, except writes made through `quietly`.
 * The check is coarse (any write anywhere invalidates), but it never misses a change that
 * committed before the request asking started: a cache keyed on it may be stale only for work
 * that started before the write committed, which could not have told the difference anyway.
 */
export interface ChangeWatch {
  /** Equal for two calls when nothing was written in between (see above). Synchronous on purpose. */
  version(): string;
  /** A new unit of work starts (an HTTP request): the next `version()` asks about other connections again. */
  refresh(): void;
  /**
   * As `refresh`, unless other connections were asked less than `maxAgeMs` ago: then that answer
   * stands. For the hot path only (http/hot-responses.ts): another process's commit is seen by
   * every request handled `maxAgeMs` or more after it; this process's own writes, at once.
   */
  refreshUnlessWithin(maxAgeMs: number): void;
  /**
   * Runs a synchronous write that no cache keyed on `version()` depends on (download counters,
   * last-used times), without moving the version. Only for writes to columns those caches never
   * read; a write that fails moves the version, which is always safe.
   */
  quietly<T>(write: () => T): T;
}

const watches = new WeakMap<Db, ChangeWatch>();

/** The connection's watch: one per connection, so that every cache sees every quiet write. */
export function changeWatchOf(db: Db): ChangeWatch {
  let watch = watches.get(db);
  if (watch === undefined) {
    watch = createChangeWatch(db);
    watches.set(db, watch);
  }
  return watch;
}

function createChangeWatch(db: Db): ChangeWatch {
  const totalChanges = db.prepare<[], number>("SELECT total_changes()").pluck();
  const dataVersion = db.prepare<[], number>("PRAGMA data_version").pluck();
  /** Rows changed by quiet writes: subtracted, so that they do not count as changes. */
  let quiet = 0;
  const changes = () => totalChanges.get() ?? 0;
  /** data_version as last read, and when (performance.now()). */
  let others = 0;
  let othersReadAt = Number.NEGATIVE_INFINITY;
  /** Whether `others` still stands for this unit of work: until refresh() or the end of the turn it was read in. */
  let current = false;
  let endOfTurnScheduled = false;
  const endOfTurn = () => {
    endOfTurnScheduled = false;
    current = false;
  };

  return {
    version() {
      if (!current) {
        others = dataVersion.get() ?? 0;
        othersReadAt = performance.now();
        current = true;
        if (!endOfTurnScheduled) {
          endOfTurnScheduled = true;
          setImmediate(endOfTurn);
        }
      }
      return `${changes() - quiet}:${others}`;
    },
    refresh() {
      current = false;
    },
    refreshUnlessWithin(maxAgeMs) {
      current = performance.now() - othersReadAt < maxAgeMs;
    },
    quietly(write) {
      const before = changes();
      const result = write();
      quiet += changes() - before;
      return result;
    },
  };
}

/**
 * A bounded map whose entries are valid for one version of a ChangeWatch: a `get` under another
 * version empties it. Use: take the version, `get`, and on a miss read and `set` under that same
 * version, the version taken before the read in the same tick, so that a write in between makes
 * the entry invalid at once instead of stale. A `set` under a version other than the one the
 * cache was last asked with is dropped: the value may be older than what others already saw.
 */
export class VersionedCache<K, V> {
  readonly #entries = new Map<K, V>();
  #version: string | undefined;

  constructor(private readonly maxEntries: number) {}

  get(key: K, version: string): V | undefined {
    if (version !== this.#version) {
      this.#entries.clear();
      this.#version = version;
      return undefined;
    }
    return this.#entries.get(key);
  }

  /** Whether an entry is kept for the key under the last version asked: a cheap "surely not" before taking a version. */
  mayHave(key: K): boolean {
    return this.#entries.has(key);
  }

  set(key: K, version: string, value: V): void {
    if (version !== this.#version) return;
    // Oldest first out: Map iterates in insertion order. Entries are cheap to rebuild.
    if (this.#entries.size >= this.maxEntries && !this.#entries.has(key)) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, value);
  }
}
