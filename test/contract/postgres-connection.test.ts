import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/** What a node's pool does to every statement (storage/postgres/connection.ts). */
describe.skipIf(!postgresInstalled())("a node's PostgreSQL connections", () => {
  let pool: pg.Pool;
  beforeAll(async () => {
    pool = openPostgres(await testPostgres().createDatabase(), { applicationName: "wharf connection test" });
    await pool.query("CREATE TABLE notes (id bigint PRIMARY KEY, body text NOT NULL)");
  });
  afterAll(async () => pool?.end());

  it("stores U+0000, which PostgreSQL's text refuses, as U+FFFD: through pool.query, a client and a query config", async () => {
    await pool.query("INSERT INTO notes VALUES ($1, $2)", [1, "a\u0000b"]);
    const client = await pool.connect();
    try {
      await client.query("INSERT INTO notes VALUES ($1, $2)", [2, "\u0000"]);
      await client.query({ text: "INSERT INTO notes VALUES ($1, $2)", values: [3, "c\u0000\u0000"] });
    } finally {
      client.release();
    }
    const rows = (await pool.query<{ id: number; body: string }>("SELECT id, body FROM notes ORDER BY id")).rows;
    expect(rows).toEqual([
      { id: 1, body: "a\uFFFDb" },
      { id: 2, body: "\uFFFD" },
      { id: 3, body: "c\uFFFD\uFFFD" },
    ]);
    // Other values pass as they are: numbers, buffers, null, and strings without U+0000.
    const echoed = await pool.query("SELECT $1::int AS n, $2::bytea AS b, $3::text AS t, $4::text AS s", [
      7,
      Buffer.from([0, 1]),
      null,
      "plain",
    ]);
    expect(echoed.rows[0]).toEqual({ n: 7, b: Buffer.from([0, 1]), t: null, s: "plain" });
  });

  it("goes on when the server ends a checked-out connection: its statements fail, the pool serves again", async () => {
    const pidOf = async (client: pg.PoolClient) =>
      (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid;
    const ended = (client: pg.PoolClient) => new Promise((resolve) => client.once("end", resolve));

    // Between two statements (as in a transaction awaiting the caller): pg emits 'error' on the
    // client, which would end the process without a listener.
    const between = await pool.connect();
    const betweenEnded = ended(between);
    await pool.query("SELECT pg_terminate_backend($1)", [await pidOf(between)]);
    await betweenEnded;
    await expect(between.query("SELECT 1")).rejects.toThrow();
    between.release(true);

    // During a statement: the statement fails.
    const during = await pool.connect();
    const pid = await pidOf(during);
    // Its failure is taken at once: it may come before the terminating statement's answer.
    const sleeping = during.query("SELECT pg_sleep(10)").then(
      () => "finished",
      (error: Error) => error.message,
    );
    await pool.query("SELECT pg_terminate_backend($1)", [pid]);
    expect(await sleeping).toMatch(/terminating connection/);
    during.release(true);

    expect((await pool.query<{ one: number }>("SELECT 1 AS one")).rows).toEqual([{ one: 1 }]);
  });
});
