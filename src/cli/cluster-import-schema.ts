import type pg from "pg";
import type { Db } from "../storage/database.js";

/**
 * Which tables `wharf cluster import` copies, and in what order: every table the data directory's
 * SQLite and the cluster's PostgreSQL share (migrations/ and migrations/postgres/ define the same
 * ones, test/contract/postgres-schema.test.ts keeps them so), parents before children, so that
 * the foreign keys PostgreSQL checks during the copy always find their row.
 */

/** Tables only a cluster has: nothing on a single node to copy into them. */
export const POSTGRES_ONLY_TABLES = new Set([
  "cluster_nodes",
  "job_leases",
  "blob_holds",
  "asset_multipart_part_blobs",
  "asset_multipart_claims",
  "config_collection_nodes",
  "agent_work",
  "agent_polls",
  "feed_store_move_nodes",
  "wharf_schema_migrations",
]);

export interface SharedTable {
  readonly name: string;
  /** The columns copied, as SQLite names them (PostgreSQL has each under the same name). */
  readonly columns: readonly string[];
  /** Columns referencing the table itself (an environment's parent): filled in after every row is in. */
  readonly selfReferences: readonly string[];
  /** Identity columns, whose sequence must pass the largest id copied. */
  readonly identities: readonly string[];
}

/** `"name"`: an identifier quoted for both databases. */
export function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The shared tables in an order that satisfies every foreign key. Throws when a SQLite table or
 * column has no PostgreSQL counterpart: the two schemas are of different versions.
 */
export async function sharedTables(
  sqlite: Db,
  client: pg.ClientBase,
  ignored: ReadonlySet<string>,
): Promise<SharedTable[]> {
  const sqliteTables = sqlite
    .prepare<[], { name: string }>(
      "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
    )
    .all()
    .map((row) => row.name);
  const columns = await client.query<{ table_name: string; column_name: string; is_identity: string }>(
    `SELECT table_name, column_name, is_identity FROM information_schema.columns
     WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  const postgresColumns = new Map<string, Map<string, boolean>>();
  for (const row of columns.rows) {
    const table = postgresColumns.get(row.table_name) ?? new Map<string, boolean>();
    table.set(row.column_name, row.is_identity === "YES");
    postgresColumns.set(row.table_name, table);
  }
  const foreignKeys = await client.query<{ child: string; parent: string; columns: string[] }>(
    `SELECT child.relname AS child, parent.relname AS parent,
            array(SELECT attname FROM pg_attribute WHERE attrelid = c.conrelid AND attnum = ANY (c.conkey)) AS columns
     FROM pg_constraint c
     JOIN pg_class child ON child.oid = c.conrelid
     JOIN pg_class parent ON parent.oid = c.confrelid
     WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace`,
  );

  const tables = new Map<string, SharedTable>();
  for (const name of sqliteTables) {
    if (ignored.has(name)) continue;
    const target = postgresColumns.get(name);
    if (target === undefined) throw new Error(`SQLite table ${name} has no PostgreSQL counterpart`);
    const own = sqlite
      .prepare<[], { name: string }>(`SELECT name FROM pragma_table_info(${quoteLiteral(name)})`)
      .all()
      .map((row) => row.name);
    const missing = own.filter((column) => !target.has(column));
    if (missing.length > 0) throw new Error(`PostgreSQL table ${name} lacks column(s) ${missing.join(", ")}`);
    tables.set(name, {
      name,
      columns: own,
      selfReferences: foreignKeys.rows
        .filter((key) => key.child === name && key.parent === name)
        .flatMap((key) => key.columns),
      identities: own.filter((column) => target.get(column) === true),
    });
  }
  return inForeignKeyOrder(
    tables,
    foreignKeys.rows.filter((key) => key.child !== key.parent),
  );
}

/** Kahn's topological sort, ties broken by name so that every run copies in the same order. */
function inForeignKeyOrder(
  tables: ReadonlyMap<string, SharedTable>,
  keys: readonly { child: string; parent: string }[],
): SharedTable[] {
  const parents = new Map<string, Set<string>>([...tables.keys()].map((name) => [name, new Set<string>()]));
  for (const { child, parent } of keys) {
    if (tables.has(child) && tables.has(parent)) parents.get(child)?.add(parent);
  }
  const ordered: SharedTable[] = [];
  const placed = new Set<string>();
  while (ordered.length < tables.size) {
    const ready = [...tables.keys()]
      .filter((name) => !placed.has(name) && [...(parents.get(name) ?? [])].every((parent) => placed.has(parent)))
      .sort();
    if (ready.length === 0) throw new Error("the foreign keys between the tables form a cycle");
    for (const name of ready) {
      placed.add(name);
      ordered.push(tables.get(name) as SharedTable);
    }
  }
  return ordered;
}

function quoteLiteral(text: string): string {
  return `'${text.replaceAll("'", "''")}'`;
}
