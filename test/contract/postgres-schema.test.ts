import { randomBytes } from "node:crypto";
import pg from "pg";
import { SqliteError } from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/**
 * PostgreSQL's schema (migrations/postgres/) against SQLite's (migrations/): the same tables and
 * views, columns, keys, constraints, indexes and triggers, read from each database's catalog after
 * migrating, and the same behaviour where a translation could go wrong (CHECKs, JSON, triggers,
 * text order). SQLite is the reference: every failure reads "PostgreSQL has X where SQLite has Y".
 */

/**
 * Tables that only PostgreSQL has: cluster mode's own, which a single SQLite node does not need.
 * They are left out of every comparison. A later file in migrations/postgres that adds one lists
 * it here.
 */
const POSTGRES_ONLY_TABLES: readonly string[] = [
  "wharf_schema_migrations", // storage/postgres/migrations.ts: the migrations applied
  "cluster_nodes", // 0003-cluster-nodes.sql
  "job_leases", // 0004-job-leases.sql
  "blob_holds", // 0005-blob-holds.sql
  "asset_multipart_part_blobs", // 0008-multipart-in-object-store.sql
  "asset_multipart_claims", // 0008-multipart-in-object-store.sql
  "config_collection_nodes", // 0007-config-collection-nodes.sql
  "agent_work", // 0009-agent-work.sql
  "agent_polls", // 0010-agent-polls.sql
  "feed_store_move_nodes", // 0012-feed-store-move-nodes.sql
];

/**
 * Triggers that only PostgreSQL has, on tables of both schemas. `wharf_changes` and
 * `wharf_changes_truncate` (0002-change-notifications.sql) tell the other nodes of a cluster that a
 * table changed; SQLite's single node has no one to tell.
 */
const POSTGRES_ONLY_TRIGGERS: readonly string[] = ["wharf_changes", "wharf_changes_truncate"];

/**
 * Documents that SQLite's json_valid() accepts and wharf_json_valid() refuses, as jsonb does
 * (0001-baseline.sql, wharf_json_valid): PostgreSQL's JSON operators, the json type's too, cannot
 * read the escapes, so a CHECK that let them in would let a trigger or view fail on them later.
 * JSON.stringify writes such escapes only for a string holding NUL or a lone surrogate, which no
 * PostgreSQL text column can hold either.
 */
const JSON_VALID_ONLY_IN_SQLITE: readonly string[] = [
  String.raw`{"a":"\u0000"}`, // jsonb text cannot hold NUL
  String.raw`["\ud800"]`, // an unpaired surrogate escape
  "1e1000000", // beyond numeric's range
];

const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

type Value = string | number | null;
type Row = Record<string, unknown>;

interface TableModel {
  /** In column order: `name class[ NOT NULL][ DEFAULT value]`, class one of integer, text, real, blob. */
  columns: string[];
  primaryKey: string[];
  /** The column the database fills in when an insert leaves it out (SQLite's rowid alias). */
  assignedKey: string | null;
  /** Every unique column list, from unique indexes and constraints and the primary key: `(a, b)[ WHERE …]`. */
  unique: string[];
  /** `(from) -> table(to) ON DELETE action ON UPDATE action`. */
  foreignKeys: string[];
  checks: number;
  /** The indexes created by name (not those behind a constraint): `name[ UNIQUE] (a, b)[ WHERE …]`. */
  indexes: string[];
  /** `name: BEFORE|AFTER INSERT|DELETE|UPDATE[ OF a, b] FOR EACH ROW|STATEMENT`. */
  triggers: string[];
}

interface SchemaModel {
  tables: Record<string, TableModel>;
  /** View -> column -> type class; null for an untyped (expression) column, whose type is not compared. */
  views: Record<string, Record<string, string | null>>;
}

const EXPRESSION = "<expression>";
const sorted = (values: Iterable<string>) => [...values].sort();
const columnList = (columns: readonly string[]) => `(${columns.join(", ")})`;
const uniqueEntry = (columns: readonly string[], partial: boolean) => columnList(columns) + (partial ? " WHERE …" : "");
const indexEntry = (name: string, unique: boolean, columns: readonly string[], partial: boolean) =>
  `${name}${unique ? " UNIQUE" : ""} ${uniqueEntry(columns, partial)}`;
const columnEntry = (name: string, type: string | null, notNull: boolean, dflt: string | null) =>
  `${name} ${type ?? "untyped"}${notNull ? " NOT NULL" : ""}${dflt === null ? "" : ` DEFAULT ${dflt}`}`;
const pick = <K extends keyof TableModel>(model: SchemaModel, key: K): Record<string, TableModel[K]> =>
  Object.fromEntries(Object.entries(model.tables).map(([name, table]) => [name, table[key]]));

// SQLite ------------------------------------------------------------------------------------------

const SQLITE_CLASSES: Record<string, string> = { INTEGER: "integer", TEXT: "text", REAL: "real", BLOB: "blob" };

/** A STRICT table's declared type (exactly one of these), or null for a view's expression column. */
function sqliteClass(declared: string): string | null {
  if (declared === "") return null;
  return SQLITE_CLASSES[declared.toUpperCase()] ?? `SQLite ${declared}`;
}

interface SqliteColumn {
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
  hidden: number;
}
interface SqliteTable {
  schema: string;
  name: string;
  type: string;
  wr: number;
  strict: number;
}
interface SqliteForeignKey {
  id: number;
  seq: number;
  table: string;
  from: string;
  to: string | null;
  on_update: string;
  on_delete: string;
}
interface SqliteIndex {
  name: string;
  unique: number;
  origin: string;
  partial: number;
}
interface SqliteIndexColumn {
  seqno: number;
  cid: number;
  name: string | null;
  key: number;
}

/** SQLite's own objects (sqlite_schema, sqlite_sequence, sqlite_stat1...) are not Wharf's. */
function sqliteTables(db: Db): SqliteTable[] {
  return (db.pragma("table_list") as SqliteTable[]).filter((t) => t.schema === "main" && !t.name.startsWith("sqlite_"));
}

const sqlitePrimaryKey = (db: Db, table: string) =>
  (db.pragma(`table_xinfo("${table}")`) as SqliteColumn[])
    .filter((c) => c.pk > 0)
    .sort((a, b) => a.pk - b.pk)
    .map((c) => c.name);

function sqliteTrigger(sql: string): string {
  const match =
    /^CREATE\s+TRIGGER\s+(\w+)\s+(BEFORE|AFTER|INSTEAD\s+OF)?\s*(INSERT|DELETE|UPDATE)(?:\s+OF\s+([\w\s,]+?))?\s+ON\s+\w+/i.exec(
      sql,
    );
  if (match === null) throw new Error(`unreadable trigger: ${sql}`);
  const [, name, timing = "BEFORE", event = "", columns] = match;
  const names = columns?.split(",").map((c) => c.trim());
  const of = names === undefined ? "" : ` OF ${names.join(", ")}`;
  return `${name}: ${timing.toUpperCase()} ${event.toUpperCase()}${of} FOR EACH ROW`;
}

function sqliteModel(db: Db): SchemaModel {
  const objects = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master").all() as {
    type: string;
    name: string;
    tbl_name: string;
    sql: string | null;
  }[];
  const model: SchemaModel = { tables: {}, views: {} };
  for (const table of sqliteTables(db)) {
    const columns = db.pragma(`table_xinfo("${table.name}")`) as SqliteColumn[];
    if (table.type === "view") {
      model.views[table.name] = Object.fromEntries(columns.map((c) => [c.name, sqliteClass(c.type)]));
      continue;
    }
    const sql = objects.find((o) => o.type === "table" && o.name === table.name)?.sql ?? "";
    const primaryKey = sqlitePrimaryKey(db, table.name);
    const references = db.pragma(`foreign_key_list("${table.name}")`) as SqliteForeignKey[];
    const foreignKeys = new Map<number, SqliteForeignKey[]>();
    for (const fk of references) foreignKeys.set(fk.id, [...(foreignKeys.get(fk.id) ?? []), fk]);
    const referencing = new Set(references.map((fk) => fk.from));
    // A rowid alias (a rowid table's INTEGER PRIMARY KEY) is filled in when left out, except that
    // one which is also a foreign key: its value is always the referenced row's, given by the code.
    const onlyKey = primaryKey.length === 1 ? columns.find((c) => c.name === primaryKey[0]) : undefined;
    const assignedKey =
      table.wr === 0 && onlyKey?.type.toUpperCase() === "INTEGER" && !referencing.has(onlyKey.name)
        ? onlyKey.name
        : null;
    const unique = new Set<string>(primaryKey.length > 0 ? [uniqueEntry(primaryKey, false)] : []);
    const indexes: string[] = [];
    for (const index of db.pragma(`index_list("${table.name}")`) as SqliteIndex[]) {
      const keyColumns = (db.pragma(`index_xinfo("${index.name}")`) as SqliteIndexColumn[])
        .filter((c) => c.key === 1)
        .sort((a, b) => a.seqno - b.seqno)
        .map((c) => (c.cid === -2 ? EXPRESSION : (c.name ?? "rowid")));
      if (index.unique === 1) unique.add(uniqueEntry(keyColumns, index.partial === 1));
      if (index.origin === "c")
        indexes.push(indexEntry(index.name, index.unique === 1, keyColumns, index.partial === 1));
    }
    model.tables[table.name] = {
      // Primary key columns are NOT NULL: a rowid alias is never NULL, and STRICT tables (all of
      // Wharf's: a test below checks it) refuse NULL in every other primary key column.
      columns: columns.map((c) => columnEntry(c.name, sqliteClass(c.type), c.notnull === 1 || c.pk > 0, c.dflt_value)),
      primaryKey,
      assignedKey,
      unique: sorted(unique),
      foreignKeys: sorted(
        [...foreignKeys.values()].map((parts) => {
          const ordered = parts.sort((a, b) => a.seq - b.seq);
          const first = ordered[0];
          if (first === undefined) throw new Error("empty foreign key");
          const target = ordered.some((p) => p.to === null)
            ? sqlitePrimaryKey(db, first.table)
            : ordered.map((p) => p.to);
          return `${columnList(ordered.map((p) => p.from))} -> ${first.table}${columnList(target.map(String))} ON DELETE ${first.on_delete} ON UPDATE ${first.on_update}`;
        }),
      ),
      checks: (sql.replace(/--[^\n]*/g, "").match(/\bCHECK\s*\(/gi) ?? []).length,
      indexes: sorted(indexes),
      triggers: sorted(
        objects.filter((o) => o.type === "trigger" && o.tbl_name === table.name).map((o) => sqliteTrigger(o.sql ?? "")),
      ),
    };
  }
  return model;
}

// PostgreSQL --------------------------------------------------------------------------------------

const POSTGRES_CLASSES: Record<string, string> = {
  smallint: "integer",
  integer: "integer",
  bigint: "integer",
  text: "text",
  "double precision": "real",
  bytea: "blob",
};
const postgresClass = (type: string) => POSTGRES_CLASSES[type] ?? `PostgreSQL ${type}`;

/** pg_constraint's action letters, as SQLite's foreign_key_list spells them. */
const ACTIONS: Record<string, string> = {
  a: "NO ACTION",
  r: "RESTRICT",
  c: "CASCADE",
  n: "SET NULL",
  d: "SET DEFAULT",
};

/** A column's default as SQLite prints it: `'None'::text` is `'None'`. */
const postgresDefault = (expression: string | null) => expression?.replace(/::[a-z ]+$/, "") ?? null;

function postgresTrigger(name: string, type: number, columns: readonly string[]): string {
  // pg_trigger.tgtype's bits (PostgreSQL's trigger.h)
  const timing = type & 2 ? "BEFORE" : type & 64 ? "INSTEAD OF" : "AFTER";
  const events: [number, string][] = [
    [4, "INSERT"],
    [8, "DELETE"],
    [16, columns.length > 0 ? `UPDATE OF ${columns.join(", ")}` : "UPDATE"],
    [32, "TRUNCATE"],
  ];
  const fired = events.filter(([bit]) => (type & bit) !== 0).map(([, event]) => event);
  return `${name}: ${timing} ${fired.join(" OR ")} FOR EACH ${type & 1 ? "ROW" : "STATEMENT"}`;
}

/** The catalog rows of Wharf's schema (the connection's current schema). */
const POSTGRES_QUERIES = {
  relations: `
    SELECT c.relname AS name, c.relkind::text AS kind
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v')`,
  columns: `
    SELECT c.relname AS rel, a.attname AS name, format_type(a.atttypid, NULL) AS type, a.attnotnull AS not_null,
      a.attidentity::text AS identity, pg_get_expr(d.adbin, d.adrelid) AS dflt, co.collname AS collation
    FROM pg_attribute a
    JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
    LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 0
    WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v') AND a.attnum > 0 AND NOT a.attisdropped
    ORDER BY c.relname, a.attnum`,
  indexes: `
    SELECT c.relname AS rel, i.relname AS name, x.indisunique AS is_unique, x.indisprimary AS is_primary,
      x.indpred IS NOT NULL AS partial,
      EXISTS (SELECT 1 FROM pg_constraint k
              WHERE k.conindid = x.indexrelid AND k.conrelid = x.indrelid AND k.contype IN ('p', 'u', 'x')) AS for_constraint,
      ARRAY(SELECT CASE WHEN k.attnum = 0 THEN '${EXPRESSION}' ELSE a.attname::text END
            FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, position)
            LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum
            WHERE k.position <= x.indnkeyatts ORDER BY k.position) AS columns
    FROM pg_index x
    JOIN pg_class c ON c.oid = x.indrelid
    JOIN pg_class i ON i.oid = x.indexrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema()`,
  constraints: `
    SELECT c.relname AS rel, k.contype::text AS type, f.relname AS ref, k.confdeltype::text AS on_delete,
      k.confupdtype::text AS on_update,
      ARRAY(SELECT a.attname::text FROM unnest(k.conkey) WITH ORDINALITY AS u(attnum, position)
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.attnum ORDER BY u.position) AS columns,
      ARRAY(SELECT a.attname::text FROM unnest(k.confkey) WITH ORDINALITY AS u(attnum, position)
            JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = u.attnum ORDER BY u.position) AS ref_columns
    FROM pg_constraint k
    JOIN pg_class c ON c.oid = k.conrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_class f ON f.oid = k.confrelid
    WHERE n.nspname = current_schema() AND k.contype IN ('f', 'c')`,
  triggers: `
    SELECT c.relname AS rel, t.tgname AS name, t.tgtype::integer AS type, p.proname AS function,
      ARRAY(SELECT a.attname::text FROM unnest(t.tgattr::int2[]) WITH ORDINALITY AS u(attnum, position)
            JOIN pg_attribute a ON a.attrelid = t.tgrelid AND a.attnum = u.attnum ORDER BY u.position) AS columns
    FROM pg_trigger t
    JOIN pg_class c ON c.oid = t.tgrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_proc p ON p.oid = t.tgfoid
    WHERE n.nspname = current_schema() AND NOT t.tgisinternal`,
};

interface PostgresCatalog {
  relations: { name: string; kind: string }[];
  columns: {
    rel: string;
    name: string;
    type: string;
    not_null: boolean;
    identity: string;
    dflt: string | null;
    collation: string | null;
  }[];
  indexes: {
    rel: string;
    name: string;
    is_unique: boolean;
    is_primary: boolean;
    partial: boolean;
    for_constraint: boolean;
    columns: string[];
  }[];
  constraints: {
    rel: string;
    type: string;
    ref: string | null;
    on_delete: string;
    on_update: string;
    columns: string[];
    ref_columns: string[];
  }[];
  triggers: { rel: string; name: string; type: number; function: string; columns: string[] }[];
}

async function postgresCatalog(pool: pg.Pool): Promise<PostgresCatalog> {
  const read = async <K extends keyof PostgresCatalog>(key: K) =>
    (await pool.query(POSTGRES_QUERIES[key])).rows as PostgresCatalog[K];
  const catalog: PostgresCatalog = {
    relations: await read("relations"),
    columns: await read("columns"),
    indexes: await read("indexes"),
    constraints: await read("constraints"),
    triggers: await read("triggers"),
  };
  const ours = (row: { rel: string }) => !POSTGRES_ONLY_TABLES.includes(row.rel);
  return {
    relations: catalog.relations.filter((r) => !POSTGRES_ONLY_TABLES.includes(r.name)),
    columns: catalog.columns.filter(ours),
    indexes: catalog.indexes.filter(ours),
    constraints: catalog.constraints.filter(ours),
    triggers: catalog.triggers.filter(ours),
  };
}

function postgresModel(catalog: PostgresCatalog): SchemaModel {
  const model: SchemaModel = { tables: {}, views: {} };
  for (const relation of catalog.relations) {
    const columns = catalog.columns.filter((c) => c.rel === relation.name);
    if (relation.kind === "v") {
      model.views[relation.name] = Object.fromEntries(columns.map((c) => [c.name, postgresClass(c.type)]));
      continue;
    }
    const indexes = catalog.indexes.filter((i) => i.rel === relation.name);
    const constraints = catalog.constraints.filter((k) => k.rel === relation.name);
    const identities = columns.filter((c) => c.identity !== "");
    model.tables[relation.name] = {
      columns: columns.map((c) =>
        columnEntry(c.name, postgresClass(c.type), c.not_null, c.identity === "" ? postgresDefault(c.dflt) : null),
      ),
      primaryKey: indexes.find((i) => i.is_primary)?.columns ?? [],
      // GENERATED BY DEFAULT ('d') takes an explicit value too, as SQLite's rowid does; ALWAYS would not.
      assignedKey:
        identities.length === 0
          ? null
          : identities.map((c) => (c.identity === "d" ? c.name : `${c.name} GENERATED ALWAYS`)).join(", "),
      unique: sorted(new Set(indexes.filter((i) => i.is_unique).map((i) => uniqueEntry(i.columns, i.partial)))),
      foreignKeys: sorted(
        constraints
          .filter((k) => k.type === "f")
          .map(
            (k) =>
              `${columnList(k.columns)} -> ${k.ref}${columnList(k.ref_columns)} ON DELETE ${ACTIONS[k.on_delete]} ON UPDATE ${ACTIONS[k.on_update]}`,
          ),
      ),
      checks: constraints.filter((k) => k.type === "c").length,
      indexes: sorted(
        indexes.filter((i) => !i.for_constraint).map((i) => indexEntry(i.name, i.is_unique, i.columns, i.partial)),
      ),
      triggers: sorted(
        catalog.triggers
          .filter((t) => t.rel === relation.name && !POSTGRES_ONLY_TRIGGERS.includes(t.name))
          .map((t) => postgresTrigger(t.name, t.type, t.columns)),
      ),
    };
  }
  return model;
}

// Both databases at once ------------------------------------------------------------------------

interface Failure {
  code: string;
  message: string;
}

/** A fresh SQLite and a fresh PostgreSQL database, both migrated, driven by the same statements. */
interface Twin {
  readonly sqlite: Db;
  readonly pool: pg.Pool;
  /** Runs the statement (`?` placeholders) on both; either failing fails the test. */
  run(sql: string, ...params: Value[]): Promise<void>;
  /** The rows of a query (`?` placeholders) from each. */
  rows(sql: string, ...params: Value[]): Promise<{ sqlite: Row[]; postgres: Row[] }>;
  /** How the statement fails in each (null: it did not). */
  failure(sql: string, ...params: Value[]): Promise<{ sqlite: Failure | null; postgres: Failure | null }>;
}

/** `?` placeholders as PostgreSQL's `$1`, `$2`... (the statements here hold no `?` in literals). */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

function runSqlite(db: Db, sql: string, params: Value[]): Row[] {
  const statement = db.prepare(sql);
  if (statement.reader) return statement.all(...params) as Row[];
  statement.run(...params);
  return [];
}

function twinOf(sqlite: Db, pool: pg.Pool): Twin {
  const both = async (sql: string, params: Value[]) => ({
    sqlite: runSqlite(sqlite, sql, params),
    postgres: (await pool.query(numbered(sql), params)).rows as Row[],
  });
  return {
    sqlite,
    pool,
    run: async (sql, ...params) => void (await both(sql, params)),
    rows: (sql, ...params) => both(sql, params),
    async failure(sql, ...params) {
      let sqliteFailure: Failure | null = null;
      let postgresFailure: Failure | null = null;
      try {
        runSqlite(sqlite, sql, params);
      } catch (error) {
        if (!(error instanceof SqliteError)) throw error;
        sqliteFailure = { code: error.code, message: error.message };
      }
      try {
        await pool.query(numbered(sql), params);
      } catch (error) {
        if (!(error instanceof pg.DatabaseError)) throw error;
        postgresFailure = { code: error.code ?? "", message: error.message };
      }
      return { sqlite: sqliteFailure, postgres: postgresFailure };
    },
  };
}

const NOW = "2024-05-01T12:00:00.000Z";

/** One feed (id 1) in both databases. */
const addFeed = (twin: Twin, name = "Main") =>
  twin.run(
    "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (?, 'universal', ?, '{}', ?, ?)",
    name,
    `store-${name}`,
    NOW,
    NOW,
  );

describe.skipIf(!postgresInstalled())("PostgreSQL's schema matches SQLite's", () => {
  let server: SharedPostgres;
  let sqlite: SchemaModel;
  let postgres: SchemaModel;
  let sqliteDb: Db;
  let mainPool: pg.Pool;
  const pools: pg.Pool[] = [];
  const sqliteDbs: Db[] = [];

  const open = (url: string) => {
    const pool = openPostgres(url, { applicationName: "wharf schema test", max: 2 });
    pools.push(pool);
    return pool;
  };
  const migrated = async (url: string) => {
    const pool = open(url);
    await migratePostgres(pool);
    return pool;
  };
  const newTwin = async () => {
    const db = openDatabase(":memory:");
    sqliteDbs.push(db);
    return twinOf(db, await migrated(await server.createDatabase()));
  };

  beforeAll(async () => {
    server = testPostgres();
    sqliteDb = openDatabase(":memory:");
    sqliteDbs.push(sqliteDb);
    mainPool = await migrated(await server.createDatabase());
    sqlite = sqliteModel(sqliteDb);
    postgres = postgresModel(await postgresCatalog(mainPool));
  });
  afterAll(async () => {
    await Promise.all(pools.map((pool) => pool.end()));
    for (const db of sqliteDbs) db.close();
  });

  describe("structure", () => {
    it("has the same tables and views", () => {
      expect(sorted(Object.keys(postgres.tables))).toEqual(sorted(Object.keys(sqlite.tables)));
      expect(sorted(Object.keys(postgres.views))).toEqual(sorted(Object.keys(sqlite.views)));
      expect(Object.keys(sqlite.tables)).toHaveLength(55);
    });

    it("reads SQLite's tables as STRICT, without a declared collation", () => {
      // The column comparison relies on it: STRICT tables refuse NULL primary keys and values of
      // another type. COLLATE "C" on every PostgreSQL text column stands for SQLite's BINARY.
      const notStrict = sqliteTables(sqliteDb).filter((t) => t.type === "table" && t.strict !== 1);
      expect(notStrict.map((t) => t.name)).toEqual([]);
      const sql = sqliteDb.prepare("SELECT name, sql FROM sqlite_master WHERE sql LIKE '%COLLATE%'").all();
      expect(sql).toEqual([]);
    });

    it("has the same columns: order, type class, NOT NULL and default", () => {
      expect(pick(postgres, "columns")).toEqual(pick(sqlite, "columns"));
    });

    it('gives every text column of a table COLLATE "C" (SQLite\'s BINARY order and lower())', async () => {
      const catalog = await postgresCatalog(mainPool);
      const tables = new Set(catalog.relations.filter((r) => r.kind === "r").map((r) => r.name));
      const other = catalog.columns
        .filter((c) => tables.has(c.rel) && c.type === "text" && c.collation !== "C")
        .map((c) => `${c.rel}.${c.name} ${c.collation ?? "(none)"}`);
      expect(other).toEqual([]);
    });

    it("has the same view columns", () => {
      // An untyped SQLite column (an expression) is compared by name only.
      const typed = Object.fromEntries(
        Object.entries(postgres.views).map(([view, columns]) => [
          view,
          Object.fromEntries(
            Object.entries(columns).map(([name, type]) => [name, sqlite.views[view]?.[name] === null ? null : type]),
          ),
        ]),
      );
      expect(typed).toEqual(sqlite.views);
    });

    it("has the same primary keys, and assigns the same keys when an insert leaves them out", () => {
      expect(pick(postgres, "primaryKey")).toEqual(pick(sqlite, "primaryKey"));
      expect(pick(postgres, "assignedKey")).toEqual(pick(sqlite, "assignedKey"));
    });

    it("has the same unique column lists", () => {
      expect(pick(postgres, "unique")).toEqual(pick(sqlite, "unique"));
    });

    it("has the same foreign keys and actions", () => {
      expect(pick(postgres, "foreignKeys")).toEqual(pick(sqlite, "foreignKeys"));
    });

    it("has as many CHECK constraints per table", () => {
      expect(pick(postgres, "checks")).toEqual(pick(sqlite, "checks"));
    });

    it("has the same named indexes, on the same columns", () => {
      expect(pick(postgres, "indexes")).toEqual(pick(sqlite, "indexes"));
    });

    it("has the same triggers, with the same timing, events and columns", () => {
      expect(pick(postgres, "triggers")).toEqual(pick(sqlite, "triggers"));
    });

    it("runs each translated trigger in a function of its own, <trigger>_fn", async () => {
      const catalog = await postgresCatalog(mainPool);
      const misnamed = catalog.triggers
        .filter((t) => !POSTGRES_ONLY_TRIGGERS.includes(t.name) && t.function !== `${t.name}_fn`)
        .map((t) => `${t.name} -> ${t.function}`);
      expect(misnamed).toEqual([]);
    });
  });

  describe("behaviour", () => {
    it("seeds the same rows (built-in tasks, the audit pruning cutoff)", async () => {
      const twin = await newTwin();
      const tasks = await twin.rows("SELECT * FROM tasks ORDER BY id");
      expect(tasks.postgres).toEqual(tasks.sqlite);
      expect(tasks.sqlite).toHaveLength(4);
      const retention = await twin.rows("SELECT * FROM audit_retention");
      expect(retention.postgres).toEqual(retention.sqlite);
    });

    it("refuses the same rows, with the same kind of error", async () => {
      const twin = await newTwin();
      await addFeed(twin);
      await twin.run(
        "INSERT INTO applications (name, name_key, release_usage, build_number_scheme, created_at) VALUES ('App', 'app', 'optional', 'sequential', ?)",
        NOW,
      );
      await twin.run(
        "INSERT INTO releases (application_id, number, number_key, name, sequence, status, created_by, created_on) VALUES (1, '1.0', '1.0', '1.0', 1, 'active', 'a', ?)",
        NOW,
      );
      await twin.run(
        "INSERT INTO builds (application_id, number, number_key, sequence, status, created_by, created_on) VALUES (1, '7', '7', 1, 'active', 'a', ?)",
        NOW,
      );
      await twin.run(
        "INSERT INTO servers (name, name_key, server_type, created_at, modified_at) VALUES ('s', 's', 'local', ?, ?)",
        NOW,
        NOW,
      );
      await twin.run("INSERT INTO config_collections (server_id, status, started_at) VALUES (1, 'executing', ?)", NOW);
      const webhook = (events: string, headers: string) =>
        twin.failure(
          `INSERT INTO webhooks (name, events, url_template, headers, secret, created_by, created_at, updated_at)
           VALUES ('w', ?, 'http://127.0.0.1/', ?, 's', 'a', ?, ?)`,
          events,
          headers,
          NOW,
          NOW,
        );
      const job = (payload: string) =>
        twin.failure("INSERT INTO jobs (kind, payload, created_at) VALUES ('k', ?, ?)", payload, NOW);
      const cases: Record<string, () => ReturnType<Twin["failure"]>> = {
        "a flag other than 0 or 1": () =>
          twin.failure(
            "INSERT INTO applications (name, name_key, active, release_usage, build_number_scheme, created_at) VALUES ('B', 'b', 2, 'none', 'unique', ?)",
            NOW,
          ),
        "a value outside an IN list": () =>
          twin.failure(
            "INSERT INTO applications (name, name_key, release_usage, build_number_scheme, created_at) VALUES ('B', 'b', 'never', 'unique', ?)",
            NOW,
          ),
        "a personal key without a user": () =>
          twin.failure("INSERT INTO api_keys (key_hash, key_type, created_at) VALUES ('h', 'Personal', ?)", NOW),
        "a folder with content": () =>
          twin.failure(
            "INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, created_at, modified_at) VALUES (1, 'd', 'd', '', 1, 'x', 1, ?, ?)",
            NOW,
            NOW,
          ),
        "a variable of no owner": () =>
          twin.failure("INSERT INTO release_variables (name, name_key, value) VALUES ('v', 'v', 'x')"),
        "a variable of two owners": () =>
          twin.failure(
            "INSERT INTO release_variables (release_id, build_id, name, name_key, value) VALUES (1, 1, 'v', 'v', 'x')",
          ),
        "a configuration item of a role and a server": () =>
          twin.failure(
            "INSERT INTO config_items (server_id, role_id, position, type, key, definition) VALUES (1, NULL, 0, 't', 'k', '{x')",
          ),
        "a job payload that is not JSON": () => job("{not json"),
        "a job payload with a trailing comma": () => job('{"a": 1,}'),
        "an empty job payload": () => job(""),
        "webhook events that are not JSON": () => webhook("[", "{}"),
        "webhook events that are not an array": () => webhook('{"a": 1}', "{}"),
        "webhook headers that are not an object": () => webhook("[]", "[]"),
        "a retention run's plan that is not JSON": () =>
          twin.failure(
            "INSERT INTO retention_runs (feed_id, trigger, requested_by, created_at, planned) VALUES (1, 'manual', 'a', ?, 'nope')",
            NOW,
          ),
        "a missing NOT NULL value": () =>
          twin.failure(
            "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (NULL, 'x', 'k2', '{}', '', '')",
          ),
        "a storage key taken": () =>
          twin.failure(
            "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('x', 'x', 'store-Main', '{}', '', '')",
          ),
        "a build number taken (no release: COALESCE(release_id, 0))": () =>
          twin.failure(
            "INSERT INTO builds (application_id, number, number_key, sequence, status, created_by, created_on) VALUES (1, '7', '7', 2, 'active', 'a', ?)",
            NOW,
          ),
        "a second executing check of a server (partial unique index)": () =>
          twin.failure(
            "INSERT INTO config_collections (server_id, status, started_at) VALUES (1, 'executing', ?)",
            NOW,
          ),
        "a name of no feed": () =>
          twin.failure("INSERT INTO feed_names (name_key, feed_id, is_primary, name) VALUES ('x', 99, 0, 'x')"),
      };
      const kinds: Record<string, string> = {
        SQLITE_CONSTRAINT_CHECK: "CHECK",
        "23514": "CHECK",
        SQLITE_CONSTRAINT_NOTNULL: "NOT NULL",
        "23502": "NOT NULL",
        SQLITE_CONSTRAINT_UNIQUE: "UNIQUE",
        SQLITE_CONSTRAINT_PRIMARYKEY: "UNIQUE",
        "23505": "UNIQUE",
        SQLITE_CONSTRAINT_FOREIGNKEY: "FOREIGN KEY",
        "23503": "FOREIGN KEY",
      };
      const kind = (failure: Failure | null) =>
        failure === null ? "accepted" : (kinds[failure.code] ?? `${failure.code}: ${failure.message}`);
      const outcomes: Record<string, { sqlite: string; postgres: string }> = {};
      for (const [name, attempt] of Object.entries(cases)) {
        const { sqlite: s, postgres: p } = await attempt();
        outcomes[name] = { sqlite: kind(s), postgres: kind(p) };
      }
      // The same kind of refusal in both, and a refusal in SQLite (else the case proves nothing).
      const expected = Object.fromEntries(
        Object.entries(outcomes).map(([name, { sqlite: s }]) => [name, { sqlite: s, postgres: s }]),
      );
      expect(outcomes).toEqual(expected);
      expect(Object.values(outcomes).filter((o) => o.sqlite === "accepted")).toEqual([]);

      // ...and accepts the same rows
      const accepted = {
        "webhook events and headers": await webhook('["package.added"]', '{"X-A": "b"}'),
        "a retention run without a plan": await twin.failure(
          "INSERT INTO retention_runs (feed_id, trigger, requested_by, created_at, planned) VALUES (1, 'schedule', 'a', ?, NULL)",
          NOW,
        ),
        "a completed check beside the executing one": await twin.failure(
          "INSERT INTO config_collections (server_id, status, started_at) VALUES (1, 'completed', ?)",
          NOW,
        ),
        "a job payload with spaces around it": await job(' {"a": [1, 2.5, "x", null, true]} '),
      };
      expect(accepted).toEqual(
        Object.fromEntries(Object.keys(accepted).map((name) => [name, { sqlite: null, postgres: null }])),
      );
    });

    it("judges JSON as SQLite's json_valid() does, but for the documents jsonb cannot hold", async () => {
      const twin = await newTwin();
      const documents = [
        "{}",
        "[]",
        "0",
        '"text"',
        "null",
        "true",
        ' { "a" : [1, -2.5e3, "x\\ny"] } ',
        '{"a":1,"a":2}',
        "{x",
        "",
        " ",
        "{'a': 1}",
        "[1,]",
        "NaN",
        "01",
        '"\\x41"',
        ...JSON_VALID_ONLY_IN_SQLITE,
      ];
      const sqliteValid = (doc: string) =>
        (twin.sqlite.prepare("SELECT json_valid(?) AS valid").get(doc) as { valid: number }).valid === 1;
      const postgresValid = async (doc: string | null) =>
        (await twin.pool.query<{ valid: boolean | null }>("SELECT wharf_json_valid($1) AS valid", [doc])).rows[0]
          ?.valid;
      const verdicts: Record<string, { sqlite: boolean; postgres: boolean | null | undefined }> = {};
      for (const doc of documents) verdicts[doc] = { sqlite: sqliteValid(doc), postgres: await postgresValid(doc) };
      const expected = Object.fromEntries(
        documents.map((doc) => [
          doc,
          {
            sqlite: verdicts[doc]?.sqlite,
            postgres: JSON_VALID_ONLY_IN_SQLITE.includes(doc) ? false : verdicts[doc]?.sqlite,
          },
        ]),
      );
      expect(verdicts).toEqual(expected);
      for (const doc of JSON_VALID_ONLY_IN_SQLITE) expect(verdicts[doc]?.sqlite, doc).toBe(true);
      // NULL is neither valid nor invalid: `planned IS NULL OR json_valid(planned)` leans on it.
      expect(twin.sqlite.prepare("SELECT json_valid(NULL) AS valid").get()).toEqual({ valid: null });
      expect(await postgresValid(null)).toBeNull();
      // A refused document fails its CHECK, not a cast.
      const refused = await twin.failure(
        "INSERT INTO lifecycle_events (occurred_at, type, actor, data) VALUES (?, 'x', 'a', ?)",
        NOW,
        JSON_VALID_ONLY_IN_SQLITE[0] ?? "",
      );
      expect(refused.postgres?.code).toBe("23514");
    });

    it("raises the same lifecycle events for releases, builds and deployments", async () => {
      const twin = await newTwin();
      const statements: [string, ...Value[]][] = [
        [
          "INSERT INTO applications (name, name_key, release_usage, build_number_scheme, created_at) VALUES ('Shop', 'shop', 'optional', 'sequential', ?)",
          NOW,
        ],
        ["INSERT INTO pipelines (name, name_key, created_at, modified_at) VALUES ('Main', 'main', ?, ?)", NOW, NOW],
        ["INSERT INTO environments (name, name_key) VALUES ('Prod', 'prod')"],
        [
          "INSERT INTO releases (application_id, number, number_key, name, sequence, pipeline_id, status, created_by, created_on) VALUES (1, '1.0', '1.0', 'First', 1, 1, 'active', 'alice', ?)",
          NOW,
        ],
        [
          "INSERT INTO builds (application_id, release_id, pipeline_id, number, number_key, sequence, status, created_by, created_on) VALUES (1, 1, 1, '1', '1', 1, 'active', 'alice', ?)",
          NOW,
        ],
        [
          "INSERT INTO builds (application_id, number, number_key, sequence, status, created_by, created_on) VALUES (1, 'b-2', 'b-2', 2, 'active', 'API', ?)",
          NOW,
        ],
        [
          "INSERT INTO deployments (build_id, pipeline_name, stage_name, stage_position, environment_id, environment_name, status, created_by, created_on) VALUES (1, 'Main', 'Test', 0, 1, 'Prod', 'pending', 'bob', ?)",
          NOW,
        ],
        [
          "INSERT INTO deployments (build_id, pipeline_name, stage_name, stage_position, status, created_by, created_on) VALUES (2, 'Main', 'Test', 0, 'pending', 'bob', ?)",
          NOW,
        ],
        ["UPDATE deployments SET status = 'executing' WHERE id = 1"],
        ["UPDATE deployments SET status = 'failed', canceled_by = 'carol', canceled_on = ? WHERE id = 1", NOW],
        ["UPDATE deployments SET status = 'failed' WHERE id = 1"], // unchanged: no event
        ["UPDATE deployments SET log = 'x' WHERE id = 2"], // status not set: no event
        ["UPDATE deployments SET status = 'succeeded' WHERE id = 2"],
        ["UPDATE builds SET status = 'rejected', rejected_by = 'dave' WHERE id = 2"],
        ["UPDATE builds SET status = 'deployed' WHERE id = 1"],
        ["UPDATE releases SET status = 'canceled', canceled_by = 'erin' WHERE id = 1"],
        ["UPDATE releases SET status = 'canceled' WHERE id = 1"], // unchanged: no event
        ["UPDATE releases SET status = 'active' WHERE id = 1"],
      ];
      for (const [sql, ...params] of statements) await twin.run(sql, ...params);
      const events = await twin.rows("SELECT * FROM lifecycle_events ORDER BY id");
      const comparable = (rows: Row[]) =>
        rows.map(({ occurred_at, data, ...rest }) => {
          expect(occurred_at).toMatch(ISO_INSTANT);
          // The same object with its keys in the same order; the spacing of the text may differ.
          return { ...rest, data: JSON.stringify(JSON.parse(String(data))) };
        });
      expect(comparable(events.postgres)).toEqual(comparable(events.sqlite));
      expect(events.sqlite).toHaveLength(12);
    });

    it("records the same promotions and repackagings from their events", async () => {
      const twin = await newTwin();
      const events: [string, number | null, string | null, string | null, string | null, string | null, string][] = [
        [
          "package.promoted",
          2,
          "Prod",
          "Grp/Sub",
          "ÀPkg-Name", // lower() folds ASCII only, in both
          "1.0.0-RC",
          '{"fromFeed":"Dev","fromFeedId":1,"fromVersionId":17,"sha1":"ab","sha256":"cd","comments":"ship it"}',
        ],
        ["package.promoted", null, null, null, "pkg", "2.0", '{"fromFeedId":"3"}'],
        // nested values as SQLite's json_extract gives them: compact, keys in their order
        ["package.promoted", 1, "A", "", "p", "1", '{"comments":{"z":1,"a":[1,2]},"sha1":5,"fromFeed":null}'],
        [
          "package.added",
          2,
          "Prod",
          "",
          "Pkg",
          "1.1",
          '{"repackagedFrom":{"feed":"Dev","feedId":1,"group":"","name":"Pkg","version":"1.1-rc","sha1":"a","sha256":"b"},"comments":"final"}',
        ],
        ["package.overwritten", 2, "Prod", "G", "Pkg", "1.1", '{"repackagedFrom":{}}'],
        ["package.added", 2, "Prod", "", "Pkg", "1.2", '{"repackagedFrom":"Dev"}'], // not an object: no record
        ["package.deleted", 2, "Prod", "", "Pkg", "1.2", '{"repackagedFrom":{"feed":"Dev"}}'], // another type
        ["package.added", 2, "Prod", "", "Pkg", "1.3", "{}"],
      ];
      for (const [type, feedId, feedName, group, name, version, data] of events) {
        await twin.run(
          `INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name,
             package_version, actor, data) VALUES (?, ?, ?, ?, ?, ?, ?, 'alice', ?)`,
          NOW,
          type,
          feedId,
          feedName,
          group,
          name,
          version,
          data,
        );
      }
      const promotions = await twin.rows("SELECT * FROM package_promotions ORDER BY id");
      expect(promotions.postgres).toEqual(promotions.sqlite);
      expect(promotions.sqlite).toHaveLength(3);
      expect(promotions.sqlite[0]).toMatchObject({ name_key: "Àpkg-name", version_key: "1.0.0-rc" });
      const repackagings = await twin.rows("SELECT * FROM package_repackagings ORDER BY id");
      expect(repackagings.postgres).toEqual(repackagings.sqlite);
      expect(repackagings.sqlite).toHaveLength(2);
    });

    it("keeps the same search text for packages", async () => {
      const twin = await newTwin();
      await addFeed(twin);
      const addVersion = (version: string, manifest: string) =>
        twin.run(
          `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
             file_list, is_virtual, published_at) VALUES (1, ?, ?, ?, ?, 'h', 's', 1, '[]', 0, ?)`,
          version,
          version,
          version,
          manifest,
          NOW,
        );
      const snapshots: { sqlite: Row[]; postgres: Row[] }[] = [];
      const snapshot = async () =>
        snapshots.push(await twin.rows("SELECT id, search_text FROM upack_packages ORDER BY id"));
      await twin.run(
        "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (1, '', 'app', '', 'app')",
      );
      await addVersion(
        "1.0.0",
        JSON.stringify({ name: "app", title: "Äpp", description: "line 1\nline 2", tags: ["web", "cli"] }),
      );
      await addVersion("2.0.0", JSON.stringify({ name: "app", shortDescription: "short", title: null }));
      await addVersion("3.0.0", "not json");
      await snapshot();
      await twin.run("UPDATE upack_packages SET latest_version_id = 1 WHERE id = 1");
      await snapshot();
      await twin.run("UPDATE upack_packages SET latest_version_id = 2 WHERE id = 1");
      await snapshot();
      await twin.run(
        "UPDATE upack_versions SET manifest = ? WHERE id = 2",
        JSON.stringify({ name: "app", description: 5, tags: [1, "x", { b: 1, a: [2, 3] }], extra: { title: "no" } }),
      );
      await snapshot();
      await twin.run("UPDATE upack_versions SET manifest = ? WHERE id = 1", JSON.stringify({ title: "not latest" }));
      await snapshot();
      await twin.run("UPDATE upack_packages SET latest_version_id = 3 WHERE id = 1");
      await snapshot();
      await twin.run(
        "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key, latest_version_id) VALUES (1, 'g', 'new', 'g', 'new', 1)",
      );
      await snapshot();
      expect(snapshots.map((s) => s.postgres)).toEqual(snapshots.map((s) => s.sqlite));
      expect(snapshots[1]?.sqlite[0]).toEqual({ id: 1, search_text: "Äpp\nline 1\nline 2\n\nweb\ncli" });
    });

    it("keeps the audit log append-only with the same errors", async () => {
      const twin = await newTwin();
      const record = (at: string, id: number | null = null) =>
        twin.failure(
          `INSERT INTO audit_records (${id === null ? "" : "id, "}at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
           VALUES (${id === null ? "" : "?, "}?, 'user', 'alice', '127.0.0.1', 'PUT /x', '', 200, 'success', 'r')`,
          ...(id === null ? [at] : [id, at]),
        );
      expect(await record("2000-01-01T00:00:00.000Z")).toEqual({ sqlite: null, postgres: null });
      expect(await record("2999-01-01T00:00:00.000Z")).toEqual({ sqlite: null, postgres: null });
      const attempts = {
        "update a record": await twin.failure("UPDATE audit_records SET actor_name = 'mallory' WHERE id = 1"),
        "delete a record before any cutoff": await twin.failure("DELETE FROM audit_records WHERE id = 1"),
        "replace a record": await record("2001-01-01T00:00:00.000Z", 1),
        "move the cutoff past a day ago": await twin.failure(
          "UPDATE audit_retention SET prune_before = ? WHERE id = 1",
          new Date(Date.now() - 3_600_000).toISOString(),
        ),
        "change the cutoff's id": await twin.failure("UPDATE audit_retention SET id = 2"),
        "add a cutoff": await twin.failure("INSERT INTO audit_retention (id, prune_before) VALUES (2, '')"),
        "delete the cutoff": await twin.failure("DELETE FROM audit_retention"),
      };
      await twin.run("UPDATE audit_retention SET prune_before = '2001-01-01T00:00:00.000Z' WHERE id = 1");
      Object.assign(attempts, {
        "move the cutoff back": await twin.failure(
          "UPDATE audit_retention SET prune_before = '2000-06-01T00:00:00.000Z' WHERE id = 1",
        ),
        "delete a record after the cutoff": await twin.failure("DELETE FROM audit_records WHERE id = 2"),
      });
      // RAISE(ABORT) is a constraint error in SQLite; in PostgreSQL, SQLSTATE 23000 with the same message.
      const translated = Object.fromEntries(
        Object.entries(attempts).map(([name, { sqlite: s }]) => [
          name,
          { sqlite: s, postgres: s === null ? null : { code: "23000", message: s.message } },
        ]),
      );
      expect(attempts).toEqual(translated);
      expect(Object.values(attempts).map((a) => a.sqlite?.code)).toEqual(
        Object.values(attempts).map(() => "SQLITE_CONSTRAINT_TRIGGER"),
      );
      // What lies before the cutoff may go.
      await twin.run("DELETE FROM audit_records WHERE at < '2001-01-01T00:00:00.000Z'");
      const left = await twin.rows("SELECT id FROM audit_records ORDER BY id");
      expect(left.postgres).toEqual(left.sqlite);
      expect(left.sqlite).toEqual([{ id: 2 }]);
    });

    it("writes the time as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ', 'now') does", async () => {
      const sqliteNow = (
        sqliteDb.prepare("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now') AS now").get() as { now: string }
      ).now;
      expect(sqliteNow).toMatch(ISO_INSTANT);
      const { rows } = await mainPool.query<{ now: string; day_ago: string }>(
        "SELECT wharf_now_iso() AS now, wharf_now_iso(interval '-1 day') AS day_ago",
      );
      const { now = "", day_ago = "" } = rows[0] ?? {};
      expect(now).toMatch(ISO_INSTANT);
      expect(day_ago).toMatch(ISO_INSTANT);
      expect(Math.abs(Date.parse(now) - Date.now())).toBeLessThan(10_000);
      expect(Math.abs(Date.parse(now) - Date.parse(day_ago) - 86_400_000)).toBeLessThan(1_000);
    });

    it("orders and compares text by code point, as SQLite does, in a database whose default collation does not", async () => {
      // An ICU database in English order (a < B), as a managed PostgreSQL may well be created.
      const name = `wharf_icu_${randomBytes(4).toString("hex")}`;
      const admin = open(server.url);
      await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`);
      const pool = await migrated(server.url.replace(/\/postgres$/, `/${name}`));
      const english = await pool.query<{ before: boolean }>("SELECT 'a' < 'B' AS before");
      expect(english.rows[0]?.before).toBe(true); // else this test proves nothing
      const db = openDatabase(":memory:");
      sqliteDbs.push(db);
      const twin = twinOf(db, pool);
      const actions = ["b", "B", "a-c", "ab", "é", "E", "a", "Z", "a\u{10FFFF}", "A-b", "_x", "10", "9"];
      for (const action of actions) {
        await twin.run(
          `INSERT INTO audit_records (at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
           VALUES (?, 'cli', 'Émile', 'local', ?, '', 0, 'success', 'r')`,
          NOW,
          action,
        );
      }
      const queries: [string, ...Value[]][] = [
        ["SELECT action FROM audit_records ORDER BY action, id"],
        // audit/repository.ts's prefix search
        ["SELECT action FROM audit_records WHERE action >= ? AND action < ? ORDER BY action", "a", "a\u{10FFFF}"],
        ["SELECT min(action) AS least, max(action) AS most FROM audit_records"],
        ["SELECT lower(actor_name) AS lower, upper(actor_name) AS upper FROM audit_records LIMIT 1"],
        ["SELECT count(*) AS count FROM audit_records WHERE action > 'Z'"],
      ];
      for (const [sql, ...params] of queries) {
        const result = await twin.rows(sql, ...params);
        // count(*) is a bigint, read as a number by Wharf's pool
        expect({ sql, rows: result.postgres }).toEqual({ sql, rows: result.sqlite });
      }
    });
  });
});
