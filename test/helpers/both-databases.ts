import type pg from "pg";
import { afterAll, beforeAll, describe } from "vitest";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import type { PostgresDb } from "../../src/storage/postgres/database.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "./postgres.js";
import { testPostgres } from "./shared-postgres.js";

/**
 * One repository contract, two databases (docs/cluster-mode.md): `describeOnBothDatabases` runs
 * the same tests against a migrated SQLite database and a migrated PostgreSQL one (on the run's
 * server: shared-postgres.ts), each new for the block.
 */
export type TestDatabase =
  | { readonly kind: "sqlite"; readonly sqlite: Db; exec: Exec }
  | { readonly kind: "postgres"; readonly postgres: PostgresDb; exec: Exec; readonly commits: () => number };

/** Runs one statement written with `?` placeholders on either database; its rows. */
type Exec = (sql: string, params?: readonly unknown[]) => Promise<Record<string, unknown>[]>;

/** The value a look-up must have found, for the test's next step: a test's failure where it is missing. */
export function present<T>(value: T | undefined): T {
  if (value === undefined) throw new Error("expected a value");
  return value;
}

const toDollars = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

export function describeOnBothDatabases(title: string, tests: (database: () => TestDatabase) => void): void {
  describe(`${title} (SQLite)`, () => {
    let database: TestDatabase | undefined;
    beforeAll(() => {
      const sqlite = openDatabase(":memory:");
      database = {
        kind: "sqlite",
        sqlite,
        exec: async (sql, params = []) => {
          const statement = sqlite.prepare(sql);
          return statement.reader
            ? (statement.all(...params) as Record<string, unknown>[])
            : (statement.run(...params), []);
        },
      };
    });
    afterAll(() => {
      if (database?.kind === "sqlite") database.sqlite.close();
    });
    tests(() => database as TestDatabase);
  });

  describe.skipIf(!postgresInstalled())(`${title} (PostgreSQL)`, () => {
    let database: TestDatabase | undefined;
    let pool: pg.Pool | undefined;
    beforeAll(async () => {
      pool = openPostgres(await testPostgres().createDatabase(), { applicationName: "wharf test" });
      await migratePostgres(pool);
      let commits = 0;
      const opened = pool;
      database = {
        kind: "postgres",
        postgres: { pool: opened, committed: () => void commits++ },
        commits: () => commits,
        exec: async (sql, params = []) => (await opened.query(toDollars(sql), params as unknown[])).rows,
      };
    });
    afterAll(async () => {
      await pool?.end();
    });
    tests(() => database as TestDatabase);
  });
}
