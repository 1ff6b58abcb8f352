import type pg from "pg";
import { markQuiet } from "./change-feed.js";

/**
 * What a repository on PostgreSQL works with: the node's pool, and what to tell once a write has
 * committed. The change feed hears every commit through NOTIFY, the node's own included, but a
 * round trip later; `committed` moves this node's cache version at once, so that a client that
 * wrote through this node reads its write on its next request (storage/postgres/change-feed.ts).
 *
 * The helpers below also tell the change feed which connection committed (only once its COMMIT
 * answered, before releasing it) and which checkouts notify nothing (`notifiesNothing`), so that
 * the commit's own notification does not empty the node's caches a second time. Code that writes
 * on the pool itself calls `committed()` without a connection: its notifications count as ever.
 */
export interface PostgresDb {
  readonly pool: pg.Pool;
  readonly committed: (connection?: pg.ClientBase) => void;
  /** The checkout of `connection` only reads, or writes quietly: called before it sends anything. */
  readonly notifiesNothing?: (connection: pg.ClientBase) => void;
}

/**
 * Rows of one read, as the SQLite repositories read them (int8 as numbers: connection.ts). For
 * reads: the change feed takes the connection's use for one that notifies nothing. A statement
 * that turns out to be no SELECT (an INSERT given here by mistake) still moves the cache version
 * once it answered, as writeRows would.
 */
export async function readRows<Row extends pg.QueryResultRow>(
  db: PostgresDb,
  sql: string,
  params: readonly unknown[] = [],
): Promise<Row[]> {
  const result = await onOneConnection(db, "read", (client) => client.query<Row>(sql, params as unknown[]));
  if (result.command !== "SELECT") db.committed();
  return result.rows;
}

/** One write in a transaction of its own; its RETURNING rows, or [] . */
export async function writeRows<Row extends pg.QueryResultRow>(
  db: PostgresDb,
  sql: string,
  params: readonly unknown[] = [],
): Promise<pg.QueryResult<Row>> {
  return onOneConnection(db, "write", (client) => client.query<Row>(sql, params as unknown[]));
}

/**
 * One statement on a connection of the pool, as `pool.query` runs it (a connection whose statement
 * failed is dropped, as pool.query drops it), telling the change feed about it.
 */
async function onOneConnection<T>(
  db: PostgresDb,
  kind: "read" | "write",
  statement: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await db.pool.connect();
  if (kind === "read") db.notifiesNothing?.(client);
  let result: T;
  try {
    result = await statement(client);
  } catch (error) {
    // Also after a failure: whether it committed is unknown when the connection broke, and a
    // needless move of the version only costs caches a refill.
    if (kind === "write") db.committed();
    client.release(error instanceof Error ? error : true);
    throw error;
  }
  if (kind === "write") db.committed(client);
  client.release();
  return result;
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
  // Nothing notifies: snapshots are READ ONLY (the server refuses writes), and a quiet
  // transaction's writes notify no node (markQuiet is its first statement).
  if (quiet) db.notifiesNothing?.(client);
  let broken = false;
  try {
    await client.query(kind === "snapshot" ? "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY" : "BEGIN");
    if (kind === "quiet") await markQuiet(client);
    let result: T;
    let answered = false;
    try {
      result = await work(client);
      await client.query("COMMIT");
      answered = true;
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw error;
    } finally {
      // The connection only once COMMIT answered: then the commit was visible before the count.
      if (!quiet) db.committed(answered ? client : undefined);
    }
    return result;
  } finally {
    // A connection whose ROLLBACK failed is in an unknown state: the pool drops it.
    client.release(broken);
  }
}
