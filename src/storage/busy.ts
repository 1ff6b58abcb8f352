import { setTimeout as sleep } from "node:timers/promises";
import { SqliteError } from "better-sqlite3";
import { DomainError } from "../domain/errors.js";
import type { Db } from "./database.js";

/**
 * Another process (the `wharf` CLI, a backup tool, an administrator's sqlite3 shell) may hold the
 * database's write lock. better-sqlite3 is synchronous, so SQLite's own busy wait (busy_timeout)
 * would spin on the thread that runs the event loop and stall every request, reads included. A
 * server's connection therefore never waits inside SQLite (busy_timeout 0: a statement that
 * needs the lock fails at once with SQLITE_BUSY); the writes wait here instead, asynchronously,
 * and give up with a 503 that says why. Reads never need the lock (WAL), so they keep flowing.
 */

/** How long a write keeps trying when nothing else was said (see neverBlockOnLocks). */
const DEFAULT_WAIT_MS = 0;
const FIRST_DELAY_MS = 5;
/** Attempts are cheap (a failed BEGIN IMMEDIATE), so a released lock is noticed within this. */
const MAX_DELAY_MS = 100;
const RETRY_AFTER_SECONDS = 1;

const waits = new WeakMap<Db, number>();

/**
 * Makes the connection fit a server: a statement that finds another process's lock fails at once
 * instead of blocking the event loop, and writes made through retryWhileBusy (every repository
 * wrapped by withBusyRetries) wait up to `maxWaitMs` for the lock, without blocking, before
 * failing with DATABASE_BUSY. A one-shot process (the CLI) keeps openDatabase's blocking wait.
 */
export function neverBlockOnLocks(db: Db, maxWaitMs: number): void {
  db.pragma("busy_timeout = 0");
  waits.set(db, maxWaitMs);
}

/** SQLITE_BUSY and its extended codes (BUSY_SNAPSHOT, BUSY_RECOVERY, BUSY_TIMEOUT): a lock is taken. */
export function isBusy(error: unknown): boolean {
  return error instanceof SqliteError && error.code.startsWith("SQLITE_BUSY");
}

/** 503 with Retry-After: the write can succeed as it is once the other process lets go. `cause`: the SQLITE_BUSY. */
export const databaseBusy = (cause?: unknown) =>
  new DomainError(
    "unavailable",
    "DATABASE_BUSY",
    "The database is busy (another process holds its write lock); try again shortly.",
    { cause, retryAfterSeconds: RETRY_AFTER_SECONDS },
  );

/**
 * Runs `attempt` until it does not fail with SQLITE_BUSY, sleeping 5, 10, 20 ... up to 100 ms
 * between attempts, for at most the connection's wait (neverBlockOnLocks) or `maxWaitMs`; then
 * throws databaseBusy(). `attempt` must be safe to run again after SQLITE_BUSY: one transaction
 * (rolled back whole) or one statement, with nothing done before it that a second run repeats.
 */
export async function retryWhileBusy<T>(
  db: Db,
  attempt: () => T | Promise<T>,
  maxWaitMs = waits.get(db) ?? DEFAULT_WAIT_MS,
): Promise<T> {
  const deadline = performance.now() + maxWaitMs;
  for (let delay = FIRST_DELAY_MS; ; delay = Math.min(delay * 2, MAX_DELAY_MS)) {
    try {
      return await attempt();
    } catch (error) {
      if (!isBusy(error)) throw error;
      const left = deadline - performance.now();
      if (left <= 0) throw databaseBusy(error);
      await sleep(Math.min(delay, left));
    }
  }
}

/**
 * The repository with every method that returns a Promise run through retryWhileBusy, after a
 * first attempt made as before (a method that succeeds costs one more promise, nothing else).
 * Sound because a repository method is one transaction or one statement (docs/STYLE.md); synchronous
 * methods are left as they are.
 */
export function withBusyRetries<T extends object>(db: Db, repository: T): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, member] of Object.entries(repository)) {
    if (typeof member !== "function") {
      wrapped[name] = member;
      continue;
    }
    const method = member as (...args: unknown[]) => unknown;
    wrapped[name] = (...args: unknown[]) => {
      const first = method.apply(repository, args);
      if (!(first instanceof Promise)) return first;
      return first.catch((error: unknown) => {
        if (!isBusy(error)) throw error;
        return retryWhileBusy(db, () => method.apply(repository, args));
      });
    };
  }
  return wrapped as T;
}

/**
 * Runs a write that may be skipped (bookkeeping, a cache): undefined when the database is busy,
 * at once, so that the request it serves neither waits nor fails for it.
 */
export function unlessBusy<T>(write: () => T): T | undefined {
  try {
    return write();
  } catch (error) {
    if (isBusy(error)) return undefined;
    throw error;
  }
}
