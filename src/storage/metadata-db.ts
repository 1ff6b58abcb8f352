import { type ChangeWatch, changeWatchOf } from "./change-watch.js";
import { type Db, isDatabaseUsable } from "./database.js";
import type { PostgresDb } from "./postgres/database.js";

/**
 * The metadata store a node works on: the data directory's SQLite (one machine, the default) or
 * the PostgreSQL a cluster shares (WHARF_DATABASE_URL: docs/cluster-mode.md). Services take either
 * and pick their repository with `byDatabase`; only the repositories know which one they are on.
 */
export type MetadataDb = Db | PostgresDb;

export function isPostgres(db: MetadataDb): db is PostgresDb {
  return "pool" in db;
}

/** The implementation for the database at hand: `byDatabase(db, createXRepository, createPostgresXRepository)`. */
export function byDatabase<T>(db: MetadataDb, sqlite: (db: Db) => T, postgres: (db: PostgresDb) => T): T {
  return isPostgres(db) ? postgres(db) : sqlite(db);
}

/**
 * What caches keyed on the database's changes read (ChangeWatch without `quietly`: on PostgreSQL a
 * quiet write is a property of its transaction, storage/postgres/database.ts `quietTransaction`).
 */
export type CacheVersion = Omit<ChangeWatch, "quietly">;

const postgresWatches = new WeakMap<PostgresDb, CacheVersion>();

/** Gives a node's PostgreSQL database its change feed (storage/postgres/node-database.ts does, once). */
export function attachCacheVersion(db: PostgresDb, watch: CacheVersion): void {
  postgresWatches.set(db, watch);
}

/** The database's change version: SQLite's own watch, or the change feed attached to the PostgreSQL one. */
export function cacheVersionOf(db: MetadataDb): CacheVersion {
  if (!isPostgres(db)) return changeWatchOf(db);
  const watch = postgresWatches.get(db);
  // A programming error, not an operator's: every node database is opened with its feed.
  if (watch === undefined) throw new Error("this PostgreSQL database has no change feed attached");
  return watch;
}

/** How long /health waits for PostgreSQL to answer before calling it unusable. */
const PROBE_TIMEOUT_MS = 2_000;

/** True when the database answers a trivial query (/health, the landing page). */
export async function databaseUsable(db: MetadataDb): Promise<boolean> {
  if (!isPostgres(db)) return isDatabaseUsable(db);
  try {
    await db.pool.query({ text: "SELECT 1", query_timeout: PROBE_TIMEOUT_MS } as { text: string });
    return true;
  } catch {
    return false;
  }
}
