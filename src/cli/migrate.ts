import type { Config } from "../config.js";

interface MigrateContext {
  readonly config: Config;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
}

const USAGE = `Usage: wharf migrate

Brings the metadata database's schema up to date and says its version: the PostgreSQL database of
WHARF_DATABASE_URL (cluster mode: run it once, with the new version, before starting the nodes;
nodes starting together would each wait for the first), else the SQLite database in WHARF_DATA_DIR
(which 'wharf serve' also migrates as it starts).`;

/** `wharf migrate`: exit 0 migrated (or nothing to do), 1 failed, 2 bad usage. */
export async function migrateCommand(args: string[], ctx: MigrateContext): Promise<number> {
  if (args.length === 1 && (args[0] === "--help" || args[0] === "-h")) {
    ctx.out(USAGE);
    return 0;
  }
  if (args.length > 0) {
    ctx.err(USAGE);
    return 2;
  }
  if (ctx.config.databaseUrl !== undefined) return migrateCluster(ctx.config.databaseUrl, ctx);
  const { assertWritableDataDir } = await import("../storage/data-dir-access.js");
  const { dataPaths } = await import("../storage/data-paths.js");
  const { openDatabase } = await import("../storage/database.js");
  assertWritableDataDir(ctx.config.dataDir);
  const file = dataPaths(ctx.config.dataDir).database;
  const db = openDatabase(file);
  try {
    ctx.out(`SQLite ${file}: schema at version ${String(db.pragma("user_version", { simple: true }))}`);
  } finally {
    db.close();
  }
  return 0;
}

async function migrateCluster(url: string, ctx: MigrateContext): Promise<number> {
  const { describeDatabaseUrl, openPostgres } = await import("../storage/postgres/connection.js");
  const { migratePostgres } = await import("../storage/postgres/migrations.js");
  const where = describeDatabaseUrl(url);
  const pool = openPostgres(url, { applicationName: "wharf migrate", max: 1 });
  try {
    const { from, to } = await migratePostgres(pool, undefined, (file) => ctx.out(`applied ${file}`));
    ctx.out(
      from === to
        ? `PostgreSQL ${where}: schema at version ${to}, nothing to do`
        : `PostgreSQL ${where}: schema at version ${to} (was ${from})`,
    );
    return 0;
  } catch (error) {
    // pg's messages name the host and the failure, never the password.
    ctx.err(`wharf migrate: PostgreSQL ${where}: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  } finally {
    await pool.end();
  }
}
