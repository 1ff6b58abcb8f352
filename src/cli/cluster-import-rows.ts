import type pg from "pg";
import type { Db } from "../storage/database.js";
import { recordStep } from "./cluster-import-ledger.js";
import { quoted, type SharedTable } from "./cluster-import-schema.js";

/**
 * The copy of one table's rows from SQLite into PostgreSQL, ids kept, in one transaction that
 * also records the table in the ledger: killed half-way, it leaves nothing of the table behind.
 *
 * The table's user triggers are disabled for the copy (ALTER TABLE ... DISABLE TRIGGER USER,
 * inside the transaction, so that a kill re-enables them by the rollback): PostgreSQL's triggers
 * would otherwise write rows of their own (a release's lifecycle event, a promotion's record,
 * the packages' search text) or refuse the copy (the audit log's append-only guards), and the
 * copy must end with exactly SQLite's rows, which its own triggers already wrote. Chosen over
 * `SET session_replication_role = replica` because it needs only the ownership of the tables
 * (the role that ran `wharf migrate`), not a superuser, and because it leaves the foreign keys
 * checked: a row whose parent is missing fails the import instead of landing.
 */

/** Rows per INSERT: well under PostgreSQL's 65535 parameters for Wharf's widest tables. */
const BATCH_ROWS = 500;

type Row = Record<string, unknown>;

/** Copies `table`; `onRows` hears the running count after each batch. Returns the rows copied. */
export async function copyTable(
  sqlite: Db,
  client: pg.ClientBase,
  table: SharedTable,
  onRows: (done: number) => void,
): Promise<number> {
  const name = quoted(table.name);
  const deferred = new Set(table.selfReferences);
  await client.query("BEGIN");
  try {
    await client.query(`ALTER TABLE ${name} DISABLE TRIGGER USER`);
    // The rows a migration seeded (built-in tasks, the audit cutoff) give way to SQLite's own.
    await client.query(`DELETE FROM ${name}`);
    let done = 0;
    let batch: Row[] = [];
    const later: Row[] = [];
    const select = sqlite.prepare<[], Row>(`SELECT ${table.columns.map(quoted).join(", ")} FROM ${name}`);
    for (const row of select.iterate()) {
      if (table.selfReferences.some((column) => row[column] !== null)) later.push(row);
      batch.push(row);
      if (batch.length === BATCH_ROWS) {
        await insertBatch(client, table, batch, deferred);
        done += batch.length;
        batch = [];
        onRows(done);
      }
    }
    if (batch.length > 0) {
      await insertBatch(client, table, batch, deferred);
      done += batch.length;
      onRows(done);
    }
    await restoreSelfReferences(client, table, later);
    await client.query(`ALTER TABLE ${name} ENABLE TRIGGER USER`);
    await recordStep(client, `table:${table.name}`, String(done));
    await client.query("COMMIT");
    return done;
  } catch (error) {
    await client.query("ROLLBACK");
    throw new Error(`copying table ${table.name} failed: ${(error as Error).message}`, { cause: error });
  }
}

/** One multi-row INSERT; self-references go in as NULL (their row may come later) and are set afterwards. */
async function insertBatch(
  client: pg.ClientBase,
  table: SharedTable,
  rows: readonly Row[],
  deferred: ReadonlySet<string>,
) {
  const values: unknown[] = [];
  const tuples = rows.map((row) => {
    const placeholders = table.columns.map((column) => {
      values.push(deferred.has(column) ? null : row[column]);
      return `$${values.length}`;
    });
    return `(${placeholders.join(", ")})`;
  });
  await client.query(
    `INSERT INTO ${quoted(table.name)} (${table.columns.map(quoted).join(", ")}) VALUES ${tuples.join(", ")}`,
    values,
  );
}

/** Sets the self-references once every row of the table is in (by primary key: the identity column). */
async function restoreSelfReferences(client: pg.ClientBase, table: SharedTable, rows: readonly Row[]) {
  if (rows.length === 0) return;
  const key = table.identities[0];
  if (key === undefined)
    throw new Error(`table ${table.name} refers to itself but has no identity column to find its rows by`);
  const assignments = table.selfReferences.map((column, i) => `${quoted(column)} = $${i + 2}`).join(", ");
  for (const row of rows) {
    await client.query(`UPDATE ${quoted(table.name)} SET ${assignments} WHERE ${quoted(key)} = $1`, [
      row[key],
      ...table.selfReferences.map((column) => row[column]),
    ]);
  }
}

/** Moves every identity's sequence past the largest id copied, so that the next insert takes a new one. */
export async function resetIdentities(client: pg.ClientBase, tables: readonly SharedTable[]): Promise<void> {
  for (const table of tables) {
    for (const column of table.identities) {
      // setval(seq, 1, false) on an empty table: the next id is 1, as on a new database.
      await client.query(
        `SELECT setval(pg_get_serial_sequence($1, $2), coalesce(max_id, 1), max_id IS NOT NULL)
         FROM (SELECT max(${quoted(column)}) AS max_id FROM ${quoted(table.name)}) AS largest`,
        [quoted(table.name), column],
      );
    }
  }
}

/** Tables whose row counts differ between the two databases, with both counts. */
export async function countDifferences(
  sqlite: Db,
  client: pg.ClientBase,
  tables: readonly SharedTable[],
): Promise<{ table: string; sqlite: number; postgres: number }[]> {
  const differences: { table: string; sqlite: number; postgres: number }[] = [];
  for (const table of tables) {
    const expected = (sqlite.prepare(`SELECT count(*) AS n FROM ${quoted(table.name)}`).get() as { n: number }).n;
    const found = await client.query<{ n: number }>(`SELECT count(*)::bigint AS n FROM ${quoted(table.name)}`);
    const actual = found.rows[0]?.n ?? 0;
    if (actual !== expected) differences.push({ table: table.name, sqlite: expected, postgres: actual });
  }
  return differences;
}
