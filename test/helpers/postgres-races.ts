import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { afterAll, it } from "vitest";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import type { PostgresDb } from "../../src/storage/postgres/database.js";
import type { TestDatabase } from "./both-databases.js";

/**
 * Races between the nodes of a cluster on one PostgreSQL database (docs/cluster-mode.md), for the
 * repository contract tests (both-databases.ts): other nodes, each on a pool of its own as another
 * process would be; a third session that holds rows until the racing writers queue behind it; what
 * each racer ended with. SQLite has no such races: its writers take turns.
 */

/** Another node on the test's PostgreSQL database: a pool of its own, which the caller ends. */
function openOtherNode(database: TestDatabase): PostgresDb {
  if (database.kind !== "postgres") throw new Error("PostgreSQL only");
  const pool = openPostgres(database.postgres.pool.options.connectionString as string, {
    applicationName: "wharf test, other node",
  });
  return { pool, committed: () => undefined };
}

/**
 * Runs `use` with a repository (made by `open`) on another node of the test's PostgreSQL database,
 * and ends the node's pool after: for one test's race.
 */
export async function onOtherNode<R, T>(
  database: TestDatabase,
  open: (node: PostgresDb) => R,
  use: (repository: R) => Promise<T>,
): Promise<T> {
  const node = openOtherNode(database);
  try {
    return await use(open(node));
  } finally {
    await node.pool.end();
  }
}

/**
 * For the races of a describe block: the function returned opens another node on the block's
 * PostgreSQL database at each call (PostgreSQL only), and all of them are ended after the block.
 */
export function otherNodesForBlock(database: () => TestDatabase): () => PostgresDb {
  const pools: pg.Pool[] = [];
  afterAll(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
  });
  return () => {
    const node = openOtherNode(database());
    pools.push(node.pool);
    return node;
  };
}

/** An `it` for races between nodes: the test is skipped on SQLite, which has none. */
export function itOnPostgres(database: () => TestDatabase): (name: string, test: () => Promise<void>) => void {
  return (name, test) =>
    it(name, async (context) => {
      if (database().kind !== "postgres") context.skip();
      await test();
    });
}

/**
 * Resolves once `count` sessions of the pool's database wait for a lock (polling for up to 10 s,
 * then failing): the racers have all started, and queue behind what a third session holds.
 */
export async function untilWaitingOnLocks(pool: pg.Pool, count: number): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    const { rows } = await pool.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
    );
    if ((rows[0]?.n ?? 0) >= count) return;
    await sleep(10);
  }
  throw new Error(`fewer than ${count} sessions ever waited for a lock`);
}

/**
 * Starts `race` while a third session (a connection of `pool`) holds what `hold` locks in its
 * transaction, and commits once `waiters` sessions wait for a lock: so that every racer has
 * started, and read what it reads, before any can go on. The race's result.
 */
export async function whileHeld<T>(
  pool: pg.Pool,
  {
    hold,
    race,
    waiters,
  }: {
    readonly hold: (holder: pg.PoolClient) => Promise<unknown>;
    readonly race: () => Promise<T>;
    readonly waiters: number;
  },
): Promise<T> {
  const holder = await pool.connect();
  let racing: Promise<T> | undefined;
  try {
    await holder.query("BEGIN");
    await hold(holder);
    racing = race();
    await untilWaitingOnLocks(pool, waiters);
    await holder.query("COMMIT");
  } catch (error) {
    // The connection goes, and what it held with it: the racers finish, whatever they make of it.
    holder.release(true);
    void racing?.catch(() => undefined);
    throw error;
  }
  holder.release();
  return racing as Promise<T>;
}

/** What each of several concurrent calls ended with: its value, or its error's kind and code. */
export async function outcomes<T>(calls: Promise<T>[]): Promise<({ value: T } | { kind: unknown; code: unknown })[]> {
  return (await Promise.allSettled(calls)).map((settled) =>
    settled.status === "fulfilled"
      ? { value: settled.value }
      : { kind: (settled.reason as { kind?: unknown }).kind, code: (settled.reason as { code?: unknown }).code },
  );
}
