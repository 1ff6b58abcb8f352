import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, beforeEach, expect, it } from "vitest";
import { changeWatchOf } from "../../src/storage/change-watch.js";
import { createPostgresQuietBatches } from "../../src/storage/postgres/quiet-batches.js";
import { createQuietBatches } from "../../src/storage/quiet-batches.js";
import { describeOnBothDatabases, type TestDatabase } from "../helpers/both-databases.js";

/**
 * Statistics written in batches, on both databases: storage/quiet-batches.ts (SQLite) and its
 * counterpart storage/postgres/quiet-batches.ts, which the download counters and the asset
 * download times use. Entries merge by key, are written in one quiet transaction at most the
 * interval after the first, or when asked, and stay pending when the write fails.
 */

interface Batches {
  add(key: string, n: number): void;
  flush(): Promise<void>;
  /** Every batch written (or attempted), as key=n lists. */
  readonly attempts: string[][];
}

interface Options {
  readonly intervalMs?: number;
  /** Makes the next write attempts throw (after reaching the database). */
  failures?: number;
  /** PostgreSQL only: keys the writer leaves for a later write. */
  leave?: Set<string>;
}

const merge = (pending: { n: number }, next: { n: number }) => {
  pending.n += next.n;
  return pending;
};

function batchesOn(database: TestDatabase, options: Options): Batches {
  const attempts: string[][] = [];
  const describe = (batch: ReadonlyMap<string, { n: number }>) =>
    [...batch].map(([key, { n }]) => `${key}=${n}`).sort();
  const fail = () => {
    if ((options.failures ?? 0) > 0) {
      options.failures = (options.failures ?? 0) - 1;
      throw new Error("refused");
    }
  };
  const intervalMs = options.intervalMs ?? 60_000;
  if (database.kind === "sqlite") {
    const upsert = database.sqlite.prepare<[string, number]>(
      "INSERT INTO batch_test (k, n) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET n = n + excluded.n",
    );
    const batches = createQuietBatches<string, { n: number }>(database.sqlite, {
      intervalMs,
      merge,
      write(batch) {
        attempts.push(describe(batch));
        for (const [key, { n }] of batch) upsert.run(key, n);
        fail();
      },
    });
    return { add: (key, n) => batches.add(key, { n }), flush: async () => batches.flush(), attempts };
  }
  const batches = createPostgresQuietBatches<string, { n: number }>(database.postgres, {
    intervalMs,
    merge,
    async write(client, batch) {
      attempts.push(describe(batch));
      const now = [...batch].filter(([key]) => !(options.leave?.has(key) ?? false));
      await client.query(
        `INSERT INTO batch_test (k, n) SELECT * FROM unnest($1::text[], $2::bigint[])
         ON CONFLICT (k) DO UPDATE SET n = batch_test.n + EXCLUDED.n`,
        [now.map(([key]) => key), now.map(([, { n }]) => n)],
      );
      fail();
      return new Map([...batch].filter(([key]) => options.leave?.has(key) ?? false));
    },
  });
  return { add: (key, n) => batches.add(key, { n }), flush: batches.flush, attempts };
}

describeOnBothDatabases("Quiet batches", (database) => {
  const rows = async () =>
    (await database().exec("SELECT k, n FROM batch_test ORDER BY k")).map((row) => `${String(row.k)}=${Number(row.n)}`);
  /** What moves when a write is not quiet: SQLite's change watch, PostgreSQL's commit announcements. */
  const loudness = () => {
    const db = database();
    return db.kind === "sqlite" ? changeWatchOf(db.sqlite).version() : String(db.commits());
  };

  beforeAll(async () => {
    await database().exec("CREATE TABLE batch_test (k TEXT PRIMARY KEY, n BIGINT NOT NULL)");
  });
  beforeEach(async () => {
    await database().exec("DELETE FROM batch_test");
  });

  it("merges entries by key and writes them in one quiet transaction when asked", async () => {
    const batches = batchesOn(database(), {});
    batches.add("a", 1);
    batches.add("b", 5);
    batches.add("a", 2);
    expect(await rows()).toEqual([]);
    const before = loudness();
    await batches.flush();
    expect(await rows()).toEqual(["a=3", "b=5"]);
    expect(batches.attempts).toEqual([["a=3", "b=5"]]);
    expect(loudness()).toBe(before);
    await batches.flush();
    expect(batches.attempts).toHaveLength(1);
  });

  it("writes by itself at most the interval after the first entry", async () => {
    const batches = batchesOn(database(), { intervalMs: 50 });
    batches.add("a", 1);
    await sleep(20);
    batches.add("a", 1);
    expect(await rows()).toEqual([]);
    const until = Date.now() + 2_000;
    while ((await rows()).length === 0 && Date.now() < until) await sleep(10);
    expect(await rows()).toEqual(["a=2"]);
    expect(batches.attempts).toEqual([["a=2"]]);
  });

  it("keeps a batch the database refused pending, merged with later entries, for the next write", async () => {
    const options: Options = { failures: 1 };
    const batches = batchesOn(database(), options);
    batches.add("a", 1);
    await expect(batches.flush()).rejects.toThrow("refused");
    expect(await rows()).toEqual([]);
    batches.add("a", 4);
    batches.add("c", 1);
    await batches.flush();
    expect(await rows()).toEqual(["a=5", "c=1"]);
    expect(batches.attempts).toEqual([["a=1"], ["a=5", "c=1"]]);
  });

  it("keeps the entries the writer leaves (rows busy) pending, and writes them later (PostgreSQL)", async (context) => {
    if (database().kind !== "postgres") return context.skip();
    const options: Options = { leave: new Set(["busy"]) };
    const batches = batchesOn(database(), options);
    batches.add("busy", 1);
    batches.add("free", 1);
    await batches.flush();
    expect(await rows()).toEqual(["free=1"]);
    batches.add("busy", 2);
    options.leave = new Set();
    await batches.flush();
    expect(await rows()).toEqual(["busy=3", "free=1"]);
  });

  it("runs flushes one after another: a flush called during a write also writes what came after it (PostgreSQL)", async (context) => {
    if (database().kind !== "postgres") return context.skip();
    const batches = batchesOn(database(), {});
    batches.add("a", 1);
    const first = batches.flush();
    while (batches.attempts.length === 0) await sleep(1);
    // The first batch is being written: this entry waits for the next one.
    batches.add("a", 10);
    const second = batches.flush();
    await Promise.all([first, second]);
    expect(await rows()).toEqual(["a=11"]);
    expect(batches.attempts).toEqual([["a=1"], ["a=10"]]);
  });
});
