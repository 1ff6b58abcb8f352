import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type pg from "pg";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import {
  assertSchemaCurrent,
  latestPostgresVersion,
  migratePostgres,
  SchemaVersionError,
} from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/** The PostgreSQL schema's migrator: forward-only files, one at a time across nodes, all or nothing per file. */

describe.skipIf(!postgresInstalled())("PostgreSQL migrations", () => {
  let server: SharedPostgres;
  const pools: pg.Pool[] = [];
  const dirs: string[] = [];
  const open = (url: string) => {
    const pool = openPostgres(url, { applicationName: "wharf test" });
    pools.push(pool);
    return pool;
  };
  /** A migrations directory of the given files. */
  const migrationsDir = async (files: Record<string, string>) => {
    const dir = await mkdtemp(path.join(tmpdir(), "wharf-pg-migrations-"));
    dirs.push(dir);
    for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
    return dir;
  };
  const tables = async (pool: pg.Pool) =>
    (
      await pool.query<{ name: string }>(
        "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1",
      )
    ).rows.map((row) => row.name);

  beforeAll(async () => {
    server = testPostgres();
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.end()));
    await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  });
  it("brings a new database to this build's version, then has nothing to do", async () => {
    const pool = open(await server.createDatabase());
    const applied: string[] = [];
    const first = await migratePostgres(pool, undefined, (file) => applied.push(file));
    const latest = latestPostgresVersion();
    expect(latest).toBeGreaterThan(0);
    expect(first).toEqual({ from: 0, to: latest });
    expect(applied[0]).toBe("0001-baseline.sql");
    expect(await assertSchemaCurrent(pool)).toBe(latest);
    expect(await migratePostgres(pool)).toEqual({ from: latest, to: latest });
  });

  it("lets nodes starting together migrate one at a time: each file applied once", async () => {
    const dir = await migrationsDir({
      "0001-a.sql": "CREATE TABLE a (id bigint PRIMARY KEY); SELECT pg_sleep(0.2);",
      // Not idempotent: a second run of it would fail.
      "0002-b.sql": "CREATE TABLE b (id bigint PRIMARY KEY); INSERT INTO a VALUES (1);",
    });
    const url = await server.createDatabase();
    const results = await Promise.all([1, 2, 3, 4].map(() => migratePostgres(open(url), dir)));
    expect(results.filter((r) => r.from === 0)).toEqual([{ from: 0, to: 2 }]);
    expect(results.filter((r) => r.from === 2)).toHaveLength(3);
    const pool = open(url);
    const ledger = await pool.query<{ version: number }>(
      "SELECT version FROM wharf_schema_migrations ORDER BY version",
    );
    expect(ledger.rows.map((row) => row.version)).toEqual([1, 2]);
    expect((await pool.query("SELECT count(*)::int AS n FROM a")).rows[0]).toEqual({ n: 1 });
  });

  it("leaves nothing of a failing file behind and names it; the earlier ones stay", async () => {
    const dir = await migrationsDir({
      "0001-a.sql": "CREATE TABLE a (id bigint PRIMARY KEY);",
      "0002-broken.sql": "CREATE TABLE b (id bigint PRIMARY KEY); INSERT INTO nowhere VALUES (1);",
    });
    const pool = open(await server.createDatabase());
    await expect(migratePostgres(pool, dir)).rejects.toThrow(
      /0002-broken\.sql failed: relation "nowhere" does not exist/,
    );
    expect(await tables(pool)).toEqual(["a", "wharf_schema_migrations"]);
    await expect(assertSchemaCurrent(pool, dir)).rejects.toThrow(/version 1, this build needs 2: run 'wharf migrate'/);
    // The lock was released: a fixed file goes through.
    await writeFile(path.join(dir, "0002-broken.sql"), "CREATE TABLE b (id bigint PRIMARY KEY);");
    expect(await migratePostgres(pool, dir)).toEqual({ from: 1, to: 2 });
  });

  it("refuses a database newer than this build, and one never migrated", async () => {
    const dir = await migrationsDir({ "0001-a.sql": "CREATE TABLE a (id bigint PRIMARY KEY);" });
    const pool = open(await server.createDatabase());
    await expect(assertSchemaCurrent(pool, dir)).rejects.toThrow(SchemaVersionError);
    await migratePostgres(pool, dir);
    await pool.query("INSERT INTO wharf_schema_migrations (version, name) VALUES (7, '0007-from-a-newer-wharf.sql')");
    await expect(assertSchemaCurrent(pool, dir)).rejects.toThrow(
      /version 7, newer than this build knows \(1\): upgrade this node/,
    );
    // And does not touch it.
    expect(await migratePostgres(pool, dir)).toEqual({ from: 7, to: 7 });
  });
});
