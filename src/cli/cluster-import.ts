import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type pg from "pg";
import type { Config } from "../config.js";
import type { StorageConfig } from "../domain/package-store.js";
import type { Db } from "../storage/database.js";
import { copyBlobs, verifyBlobs } from "./cluster-import-blobs.js";
import { ForeignDataError, LEDGER_TABLE, openLedger, recordStep } from "./cluster-import-ledger.js";
import { type ImportProgress, importProgress } from "./cluster-import-progress.js";
import { copyTable, countDifferences, resetIdentities } from "./cluster-import-rows.js";
import { POSTGRES_ONLY_TABLES, quoted, type SharedTable, sharedTables } from "./cluster-import-schema.js";
import { importKey, SecretKeyMismatchError } from "./cluster-import-secrets.js";
import { formatBytes } from "./progress.js";

/**
 * `wharf cluster import` (issue 18, docs/cluster-mode.md "What is left" 4): moves a single-node
 * installation (the SQLite database and disk blobs of WHARF_DATA_DIR) into cluster mode (the
 * PostgreSQL of WHARF_DATABASE_URL and the object store of WHARF_PACKAGE_STORE). The single node
 * is stopped meanwhile (the command holds its data directory's lock). Blobs first, then the
 * rows that reference them, table by table; run again after an interruption, it goes on where it
 * stopped (cluster-import-ledger.ts). It ends by verifying both, and exits 0 only when verified.
 */

const USAGE = `Usage: wharf cluster import

Copies this single node's data into cluster mode, with the single node STOPPED:
  from  the SQLite database and the disk blobs of WHARF_DATA_DIR (only read),
  into  the PostgreSQL of WHARF_DATABASE_URL (migrated first, as 'wharf migrate' does; it must be
        empty or hold an unfinished import of this same data directory) and the object store of
        WHARF_PACKAGE_STORE (with its WHARF_S3_* or WHARF_AZURE_* settings).
Every table is copied with its ids, every blob checked by SHA-256 as it goes in; blobs already in
the object store are skipped. Interrupted, run it again: it goes on where it stopped. It ends by
comparing the row counts of every table and checking every referenced blob in the object store,
and exits 0 only when both agree (1 when not, 2 when it refuses to start).

Stored credentials are copied sealed: every cluster node must be given the data directory's
secret key as WHARF_SECRET_KEY (the command refuses a WHARF_SECRET_KEY that is another key).`;

export interface ClusterContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

/** A reason not to start, said with exit 2. */
class Refusal extends Error {
  override readonly name = "Refusal";
}

/** `wharf cluster <subcommand>`: only `import` so far. */
export async function clusterCommand(args: string[], ctx: ClusterContext): Promise<number> {
  if (args.length === 0 || args[0] === "help" || args.includes("--help") || args.includes("-h")) {
    ctx.out(USAGE);
    return args.length === 0 ? 2 : 0;
  }
  if (args[0] !== "import" || args.length > 1) {
    ctx.err(
      `wharf cluster: ${args[0] === "import" ? "import takes no arguments" : `unknown subcommand '${args[0]}'`}\n\n${USAGE}`,
    );
    return 2;
  }
  try {
    return await importIntoCluster(ctx);
  } catch (error) {
    if (error instanceof Refusal || error instanceof ForeignDataError || error instanceof SecretKeyMismatchError) {
      ctx.err(`wharf cluster import: refused: ${error.message}`);
      return 2;
    }
    ctx.err(`wharf cluster import: ${error instanceof Error ? error.message : String(error)}`);
    ctx.err("nothing copied so far is lost: run it again to go on");
    return 1;
  }
}

async function importIntoCluster(ctx: ClusterContext): Promise<number> {
  const { config } = ctx;
  const { url, store } = clusterSettings(config);
  const { dataPaths } = await import("../storage/data-paths.js");
  const file = dataPaths(config.dataDir).database;
  if (!fs.existsSync(file)) throw new Refusal(`there is no Wharf database in ${config.dataDir} (WHARF_DATA_DIR)`);
  const { lockDataDirIfFree } = await import("../storage/data-dir-lock.js");
  const unlock = lockDataDirIfFree(config.dataDir);
  if (unlock === undefined) throw new Refusal(`a Wharf server is running on ${config.dataDir}: stop it first`);
  try {
    const sqlite = await openReadOnly(file);
    try {
      return await importFrom(sqlite, url, store, ctx);
    } finally {
      sqlite.close();
    }
  } finally {
    unlock();
  }
}

/** WHARF_DATABASE_URL and an object store: what a cluster node needs too (postgres/cluster-mode.ts). */
function clusterSettings(config: Config): { url: string; store: StorageConfig } {
  if (config.databaseUrl === undefined) throw new Refusal("WHARF_DATABASE_URL must name the cluster's PostgreSQL");
  const store = config.defaultStorage;
  if (store === undefined || store.id === "disk") {
    throw new Refusal(
      "WHARF_PACKAGE_STORE must name the cluster's S3 or Azure store (with its WHARF_S3_* or WHARF_AZURE_* settings)",
    );
  }
  return { url: config.databaseUrl, store };
}

/** Read-only when SQLite allows it; at this build's schema version, which the cluster's schema equals. */
async function openReadOnly(file: string): Promise<Db> {
  const { default: Database } = await import("better-sqlite3");
  const { MIGRATIONS_DIR } = await import("../storage/database.js");
  const db = new Database(file, { readonly: true, fileMustExist: true });
  const version = db.pragma("user_version", { simple: true }) as number;
  const latest = Math.max(
    ...fs
      .readdirSync(MIGRATIONS_DIR)
      .filter((name) => /^\d{4}-.+\.sql$/.test(name))
      .map((name) => Number.parseInt(name.slice(0, 4), 10)),
  );
  if (version !== latest) {
    db.close();
    throw new Refusal(
      `the data directory's database is at schema version ${version}, this build's at ${latest}: ` +
        "start the single node once with this build (it migrates its database), stop it, then import",
    );
  }
  return db;
}

async function importFrom(sqlite: Db, url: string, store: StorageConfig, ctx: ClusterContext): Promise<number> {
  const { describeDatabaseUrl, openPostgres } = await import("../storage/postgres/connection.js");
  const { migratePostgres } = await import("../storage/postgres/migrations.js");
  const where = describeDatabaseUrl(url);
  const pool = openPostgres(url, { applicationName: "wharf cluster import", max: 1 });
  const spool = fs.mkdtempSync(path.join(os.tmpdir(), "wharf-cluster-import-"));
  try {
    const { to } = await migratePostgres(pool, undefined, (name) => ctx.err(`applied ${name}`));
    ctx.err(`PostgreSQL ${where}: schema at version ${to}`);
    const client = await pool.connect();
    try {
      await holdImportLock(client, ctx);
      return await runImport(sqlite, client, store, spool, where, ctx);
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
    fs.rmSync(spool, { recursive: true, force: true });
  }
}

/** One import at a time per database (ADVISORY_LOCKS.clusterImport), released when the session ends. */
async function holdImportLock(client: pg.ClientBase, ctx: ClusterContext): Promise<void> {
  const { ADVISORY_LOCKS, WHARF_LOCK_SPACE } = await import("../storage/postgres/advisory-locks.js");
  const IMPORT_LOCK = ADVISORY_LOCKS.clusterImport;
  const taken = await client.query<{ ok: boolean }>("SELECT pg_try_advisory_lock($1, $2) AS ok", [
    WHARF_LOCK_SPACE,
    IMPORT_LOCK,
  ]);
  if (taken.rows[0]?.ok === true) return;
  // A run killed a moment ago may keep its session until PostgreSQL notices: wait for it.
  ctx.err("another import holds this database (or one just killed has not let go yet): waiting for it");
  await client.query("SELECT pg_advisory_lock($1, $2)", [WHARF_LOCK_SPACE, IMPORT_LOCK]);
}

async function runImport(
  sqlite: Db,
  client: pg.ClientBase,
  store: StorageConfig,
  spool: string,
  where: string,
  ctx: ClusterContext,
): Promise<number> {
  const { config } = ctx;
  const ignored = new Set([...POSTGRES_ONLY_TABLES, LEDGER_TABLE]);
  const tables = await sharedTables(sqlite, client, ignored);
  const key = importKey(config, sqlite, tables);
  const ledger = await openLedger(client, fs.realpathSync(config.dataDir), tables);
  const progress = importProgress(ctx.err);
  if (ledger.verifiedAt !== undefined) {
    progress.say(
      `this data directory was imported and verified at ${ledger.verifiedAt}: verifying again (no table is copied twice)`,
    );
  } else if (ledger.resumed)
    progress.say(`resuming: ${ledger.copied.size}/${tables.length} tables were copied by an earlier run`);

  const { createFileBlobStore } = await import("../storage/file-blob-store.js");
  const { createObjectStore, storeKeyOf } = await import("../storage/store-factory.js");
  const storeKey = storeKeyOf(store);
  const disk = createFileBlobStore(config.dataDir);
  const target = createObjectStore(store, storeKey, spool, config.outboundProxy);
  // Blobs first: no row lands before the bytes it references.
  const blobs = await copyBlobs(disk, target, (state) => progress.blobs(state));

  const rowsTotal = await copyRows(sqlite, client, tables, ledger.copied, progress);
  await resetIdentities(client, tables);

  progress.say("verifying: row counts of every table, and every referenced blob in the object store");
  const differences = await countDifferences(sqlite, client, tables);
  const blobCheck = await verifyBlobs(client, disk, target);
  for (const { table, sqlite: expected, postgres } of differences) {
    ctx.err(`table ${table}: ${expected} rows in SQLite, ${postgres} in PostgreSQL`);
  }
  for (const problem of blobCheck.problems.slice(0, 20)) ctx.err(`blob ${problem}`);
  if (blobCheck.problems.length > 20) ctx.err(`... and ${blobCheck.problems.length - 20} more blobs`);

  ctx.out(`imported ${config.dataDir} into PostgreSQL ${where} and object store ${storeKey}`);
  ctx.out(`rows: ${rowsTotal} in ${tables.length} tables`);
  ctx.out(
    `blobs: ${blobs.total.blobs} (${formatBytes(blobs.total.bytes)}), ` +
      `${blobs.total.blobs - blobs.skipped} copied, ${blobs.skipped} already in the object store`,
  );
  if (blobCheck.elsewhere > 0)
    ctx.out(`${blobCheck.elsewhere} referenced blobs stay in the stores of their feeds' own storage settings`);
  for (const feed of feedsOnDisk(sqlite)) {
    ctx.out(
      `warning: feed ${feed} names the disk store, which cluster nodes refuse: set its storage to an object store`,
    );
  }
  ctx.out(
    key.id === undefined
      ? "secret key: the data directory has none and stores no credentials: give every cluster node the same new WHARF_SECRET_KEY"
      : `secret key ${key.id}: every cluster node must use it as WHARF_SECRET_KEY (from ${key.source}); ` +
          `${key.sealedValues} stored credentials are sealed under it`,
  );
  if (differences.length > 0 || blobCheck.problems.length > 0) {
    ctx.out(
      `NOT verified: ${differences.length} tables with other row counts, ${blobCheck.problems.length} blobs missing or of another size`,
    );
    return 1;
  }
  await recordStep(client, "verified", new Date().toISOString());
  ctx.out(
    `verified: every table has its ${rowsTotal} rows, and all ${blobCheck.referenced} referenced blobs are in the object store`,
  );
  return 0;
}

/** Every table not copied yet, in order; the rows of all tables (copied now or before). */
async function copyRows(
  sqlite: Db,
  client: pg.ClientBase,
  tables: readonly SharedTable[],
  copied: ReadonlySet<string>,
  progress: ImportProgress,
): Promise<number> {
  const counts = new Map(tables.map((table) => [table.name, rowCount(sqlite, table.name)]));
  const rowsTotal = [...counts.values()].reduce((sum, n) => sum + n, 0);
  let rowsDone = tables
    .filter((table) => copied.has(table.name))
    .reduce((sum, t) => sum + (counts.get(t.name) ?? 0), 0);
  let tablesDone = copied.size;
  for (const table of tables) {
    if (copied.has(table.name)) continue;
    const before = rowsDone;
    const rows = () => ({ done: rowsDone, total: rowsTotal });
    progress.rows({ table: table.name, tables: { done: tablesDone, total: tables.length }, rows: rows() });
    await copyTable(sqlite, client, table, (done) => {
      rowsDone = before + done;
      progress.rows({ table: table.name, tables: { done: tablesDone, total: tables.length }, rows: rows() });
    });
    tablesDone++;
    progress.rows({ table: table.name, tables: { done: tablesDone, total: tables.length }, rows: rows() });
  }
  return rowsTotal;
}

function rowCount(sqlite: Db, table: string): number {
  return (sqlite.prepare(`SELECT count(*) AS n FROM ${quoted(table)}`).get() as { n: number }).n;
}

/** Feeds whose own storage setting is the disk: a node would refuse them (DISK_STORE_IN_CLUSTER). */
function feedsOnDisk(sqlite: Db): string[] {
  return sqlite
    .prepare<[], { name: string }>(
      "SELECT name FROM feeds WHERE json_extract(settings, '$.storage.id') = 'disk' ORDER BY name",
    )
    .all()
    .map((row) => row.name);
}
