import type pg from "pg";
import { POSTGRES_ONLY_TABLES, quoted, type SharedTable } from "./cluster-import-schema.js";

/**
 * What `wharf cluster import` has done, kept in the PostgreSQL it imports into, so that a run
 * killed at any point and run again goes on where it stopped: each table is copied in one
 * transaction that also records it here, so a table is either wholly copied and recorded or not
 * there at all. The first row names the data directory imported, so that a database holding
 * anything else is refused rather than mixed with it.
 */
export const LEDGER_TABLE = "wharf_cluster_import";

/**
 * Rows PostgreSQL's migrations insert themselves (the built-in tasks, the audit log's pruning
 * cutoff): a database holding only these is empty. The copy replaces them by SQLite's own.
 */
const SEEDED_TABLES = new Set(["tasks", "audit_retention"]);

export class ForeignDataError extends Error {
  override readonly name = "ForeignDataError";
}

export interface Ledger {
  /** The tables already copied (a run before this one was interrupted after them). */
  readonly copied: ReadonlySet<string>;
  /** True when an earlier run began this import. */
  readonly resumed: boolean;
  /** When an earlier run ended verified (ISO-8601): the cluster may have changed since. */
  readonly verifiedAt?: string;
}

/**
 * Opens the ledger for `source` (the data directory), creating it on an empty database. Throws
 * ForeignDataError when the database holds rows of its own (a cluster already in use, another
 * import, another application's data) or an import of another data directory.
 */
export async function openLedger(
  client: pg.ClientBase,
  source: string,
  tables: readonly SharedTable[],
): Promise<Ledger> {
  await client.query("BEGIN");
  try {
    const exists = await client.query<{ present: boolean }>("SELECT to_regclass($1) IS NOT NULL AS present", [
      LEDGER_TABLE,
    ]);
    if (exists.rows[0]?.present === true) {
      const steps = await client.query<{ step: string; detail: string }>(`SELECT step, detail FROM ${LEDGER_TABLE}`);
      const importedFrom = steps.rows.find((row) => row.step === "source")?.detail;
      if (importedFrom !== source) {
        throw new ForeignDataError(
          `this database holds an import of another data directory (${importedFrom ?? "unknown"}), not of ${source}`,
        );
      }
      await client.query("COMMIT");
      const copied = steps.rows.filter((row) => row.step.startsWith("table:")).map((row) => row.step.slice(6));
      const verifiedAt = steps.rows.find((row) => row.step === "verified")?.detail;
      return { copied: new Set(copied), resumed: true, ...(verifiedAt === undefined ? {} : { verifiedAt }) };
    }
    const occupied = await tablesWithData(client, tables);
    if (occupied.length > 0) {
      throw new ForeignDataError(
        `this database already holds data that did not come from an import of ${source} (rows in ${occupied.join(", ")})`,
      );
    }
    await client.query(
      `CREATE TABLE ${LEDGER_TABLE} (
         step text PRIMARY KEY,
         detail text NOT NULL,
         done_at timestamptz NOT NULL DEFAULT now()
       )`,
    );
    await recordStep(client, "source", source);
    await client.query("COMMIT");
    return { copied: new Set(), resumed: false };
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}

/** Records a step done, inside the caller's transaction (a table's copy), or alone. */
export async function recordStep(client: pg.ClientBase, step: string, detail: string): Promise<void> {
  await client.query(
    `INSERT INTO ${LEDGER_TABLE} (step, detail) VALUES ($1, $2)
     ON CONFLICT (step) DO UPDATE SET detail = EXCLUDED.detail, done_at = now()`,
    [step, detail],
  );
}

/**
 * The tables holding rows a fresh migration did not put there. A cluster that ever ran holds at
 * least its nodes' rows, its admin key and audit records; the seeded tables count only when they
 * hold something else than what the migrations wrote.
 */
async function tablesWithData(client: pg.ClientBase, tables: readonly SharedTable[]): Promise<string[]> {
  const occupied: string[] = [];
  // The migrations' own ledger is filled by every migration: not data.
  const ownTables = [...POSTGRES_ONLY_TABLES].filter((name) => name !== "wharf_schema_migrations");
  const names = [...tables.map((table) => table.name), ...ownTables];
  for (const name of names) {
    if (SEEDED_TABLES.has(name)) continue;
    const found = await client.query(`SELECT 1 FROM ${quoted(name)} LIMIT 1`);
    if (found.rowCount !== 0) occupied.push(name);
  }
  const ownTasks = await client.query("SELECT 1 FROM tasks WHERE built_in = 0 LIMIT 1");
  if (ownTasks.rowCount !== 0) occupied.push("tasks");
  const cutoff = await client.query("SELECT 1 FROM audit_retention WHERE prune_before <> '' LIMIT 1");
  if (cutoff.rowCount !== 0) occupied.push("audit_retention");
  return occupied;
}
