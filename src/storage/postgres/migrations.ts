import fs from "node:fs";
import path from "node:path";
import type pg from "pg";
import { MIGRATIONS_DIR } from "../database.js";
import { ADVISORY_LOCKS, WHARF_LOCK_SPACE } from "./advisory-locks.js";

/** migrations/postgres/: PostgreSQL's own forward-only sequence, each change paired with SQLite's in migrations/. */
export const POSTGRES_MIGRATIONS_DIR = path.join(MIGRATIONS_DIR, "postgres");

interface MigrationFile {
  readonly version: number;
  readonly name: string;
  readonly file: string;
}

function migrationFiles(dir: string): MigrationFile[] {
  return fs
    .readdirSync(dir)
    .filter((name) => /^\d{4}-.+\.sql$/.test(name))
    .sort()
    .map((name) => ({ version: Number.parseInt(name.slice(0, 4), 10), name, file: path.join(dir, name) }));
}

/** The newest schema version this build knows. */
export function latestPostgresVersion(dir = POSTGRES_MIGRATIONS_DIR): number {
  return migrationFiles(dir).at(-1)?.version ?? 0;
}

const CREATE_LEDGER = `
  CREATE TABLE IF NOT EXISTS wharf_schema_migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
  )`;

async function appliedVersion(client: pg.ClientBase): Promise<number> {
  const exists = await client.query<{ present: boolean }>(
    "SELECT to_regclass('wharf_schema_migrations') IS NOT NULL AS present",
  );
  if (exists.rows[0]?.present !== true) return 0;
  const row = await client.query<{ version: number | null }>(
    "SELECT max(version) AS version FROM wharf_schema_migrations",
  );
  return row.rows[0]?.version ?? 0;
}

/**
 * Brings the database's schema up to date: each missing file in its own transaction, recorded in
 * wharf_schema_migrations. The whole run holds an advisory lock, so nodes starting together (or a
 * `wharf migrate` beside them) migrate one at a time; the others then find nothing left to do.
 * A database newer than this build is left alone (assertSchemaCurrent refuses to serve it).
 */
export async function migratePostgres(
  pool: pg.Pool,
  dir = POSTGRES_MIGRATIONS_DIR,
  onApplied: (file: string) => void = () => {},
): Promise<{ from: number; to: number }> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1, $2)", [WHARF_LOCK_SPACE, ADVISORY_LOCKS.migrate]);
    try {
      await client.query(CREATE_LEDGER);
      const from = await appliedVersion(client);
      let to = from;
      for (const migration of migrationFiles(dir)) {
        if (migration.version <= to) continue;
        const sql = fs.readFileSync(migration.file, "utf8");
        await client.query("BEGIN");
        try {
          await client.query(sql);
          await client.query("INSERT INTO wharf_schema_migrations (version, name) VALUES ($1, $2)", [
            migration.version,
            migration.name,
          ]);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK");
          throw new Error(`migration ${migration.name} failed: ${(error as Error).message}`, { cause: error });
        }
        to = migration.version;
        onApplied(migration.name);
      }
      return { from, to };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1, $2)", [WHARF_LOCK_SPACE, ADVISORY_LOCKS.migrate]);
    }
  } finally {
    client.release();
  }
}

export class SchemaVersionError extends Error {
  override readonly name = "SchemaVersionError";
}

/** The database's schema version against this build's; throws SchemaVersionError unless they match. */
export async function assertSchemaCurrent(pool: pg.Pool, dir = POSTGRES_MIGRATIONS_DIR): Promise<number> {
  const client = await pool.connect();
  let current: number;
  try {
    current = await appliedVersion(client);
  } finally {
    client.release();
  }
  const latest = latestPostgresVersion(dir);
  if (current < latest) {
    throw new SchemaVersionError(
      `the database's schema is at version ${current}, this build needs ${latest}: run 'wharf migrate' (with this build) first`,
    );
  }
  if (current > latest) {
    throw new SchemaVersionError(
      `the database's schema is at version ${current}, newer than this build knows (${latest}): upgrade this node to the version the other nodes run`,
    );
  }
  return current;
}
