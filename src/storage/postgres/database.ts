import type pg from "pg";
import { markQuiet } from "./change-feed.js";

/**
 * What a repository on PostgreSQL works with: the node's pool, and what to tell once a write has
 * committed. The change feed hears every commit through NOTIFY, the node's own included, but a
 * round trip later; `committed` moves this node's cache version at once, so that a client that
 * wrote through this node reads its write on its next request (storage/postgres/change-feed.ts).
 */
export interface PostgresDb {
  readonly pool: pg.Pool;
  readonly committed: () => void;
}

/** Rows of one read, as the SQLite repositories read them (int8 as numbers: connection.ts). */
export async function readRows<Row extends pg.QueryResultRow>(
  db: PostgresDb,
  sql: string,
  params: readonly unknown[] = [],
): Promise<Row[]> {
  return (await db.pool.query<Row>(sql, params as unknown[])).rows;
}

/** One write in a transaction of its own; its RETURNING rows, or [] . */
export async function writeRows<Row extends pg.QueryResultRow>(
  db: PostgresDb,
  sql: string,
  params: readonly unknown[] = [],
): Promise<pg.QueryResult<Row>> {
  try {
    return await db.pool.query<Row>(sql, params as unknown[]);
  } finally {
    // Also after a failure: whether it committed is unknown when the connection broke, and a
    // needless move of the version only costs caches a refill.
    db.committed();
  }
}

/**
 * Runs `work` in one transaction on one connection: COMMIT when it returns, ROLLBACK when it
 * throws (the error is rethrown). READ COMMITTED, as each repository method was written for
 * SQLite's one writer at a time: a method that reads and then writes what it read must lock what
 * it read (SELECT ... FOR UPDATE) or make the write conditional.
 */
export async function inTransaction<T>(db: PostgresDb, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return transaction(db, work, "write");
}

/**
 * As inTransaction, for writes no cache reads (download counters, last-used times): they notify
 * no node and leave this node's cache version alone, as ChangeWatch.quietly does on SQLite.
 */
export async function quietTransaction<T>(db: PostgresDb, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return transaction(db, work, "quiet");
}

/**
 * Reads in one REPEATABLE READ, READ ONLY transaction: every statement sees the same moment, as
 * SQLite's reads in one transaction do, while other nodes write. Writes nothing, so it tells no cache.
 */
export async function inSnapshot<T>(db: PostgresDb, reads: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return transaction(db, reads, "snapshot");
}

async function transaction<T>(
  db: PostgresDb,
  work: (client: pg.PoolClient) => Promise<T>,
  kind: "write" | "quiet" | "snapshot",
): Promise<T> {
  const quiet = kind !== "write";
  const client = await db.pool.connect();
  let broken = false;
  try {
    await client.query(kind === "snapshot" ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN");
    if (kind === "quiet") await markQuiet(client);
    let result: T;
    try {
      result = await work(client);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      if (!quiet) db.committed();
    }
    return result;
  } finally {
    // A connection whose ROLLBACK failed is in an unknown state: the pool drops it.
    client.release(broken);
  }
}
