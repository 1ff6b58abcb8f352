// First: an unsupported Node.js stops here with a message, before a native addon could crash it.
import "./supported-node.js";
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { pino, type LoggerOptions } from "pino";
import { type AppDeps, buildApp } from "./app.js";
import { joinCluster } from "./cluster-node.js";
import { loggerOptions } from "./http/logging.js";
import { byDatabase, isPostgres, type MetadataDb } from "./storage/metadata-db.js";
import { postgresBlobReferenceCheck } from "./storage/blob-keeper-postgres.js";
import { removeOrphanMultipartSpools } from "./areas/endpoints/index.js";
import { bootstrapAdminKey } from "./areas/security/bootstrap.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { systemClock } from "./domain/clock.js";
import { retryWhileBusy } from "./storage/busy.js";
import { blobReferenceCheck } from "./storage/blob-keeper.js";
import { assertWritableDataDir, DataDirUnwritableError } from "./storage/data-dir-access.js";
import { DataDirInUseError, lockDataDir } from "./storage/data-dir-lock.js";
import { dataPaths } from "./storage/data-paths.js";
import { openDatabase } from "./storage/database.js";
import { createFileBlobStore } from "./storage/file-blob-store.js";
import { ensurePrivateDirectory } from "./storage/private-files.js";
import { removeCrashLeftovers } from "./storage/startup-sweep.js";
import { collectSocketBuffersYoung } from "./young-buffers.js";
import { SchemaVersionError } from "./storage/postgres/migrations.js";
import { assertClusterConfig } from "./storage/postgres/cluster-mode.js";

/** The metadata database this process serves from, and how to let go of it. */
interface Metadata {
  readonly db: MetadataDb;
  readonly node: AppDeps["node"];
  close(): Promise<void>;
}

/** The data directory's SQLite (one machine), or a seat in the cluster on WHARF_DATABASE_URL. */
async function openMetadata(config: Config): Promise<Metadata> {
  if (config.databaseUrl === undefined) {
    const db = openDatabase(dataPaths(config.dataDir).database);
    return {
      db,
      node: undefined,
      close: async () => {
        db.close();
      },
    };
  }
  const log = pino(loggerOptions(config.logLevel) as LoggerOptions);
  const cluster = await joinCluster({ ...config, databaseUrl: config.databaseUrl }, log);
  return {
    db: cluster.db,
    node: { id: cluster.nodeId, changeFeed: cluster.watch, databaseUrl: config.databaseUrl },
    close: () => cluster.close(),
  };
}

/** Process entry: configuration, storage, bootstrap, listen; graceful close on SIGTERM/SIGINT. */
export async function serve(config: Config): Promise<void> {
  collectSocketBuffersYoung();
  // Before anything is created: a node missing what a cluster needs stops with the reason (exit 2).
  if (config.databaseUrl !== undefined) assertClusterConfig(config);
  // Everything the server writes (database, blobs, spools, key files) is its user's alone (docs/PRODUCT.md).
  process.umask(0o077);
  assertWritableDataDir(config.dataDir);
  const privateDataDir = ensurePrivateDirectory(config.dataDir);
  // Held for the process's life: another server's sweep would take this one's uploads for leftovers.
  const unlockDataDir = lockDataDir(config.dataDir);
  const metadata = await openMetadata(config);
  const { db } = metadata;
  const blobs = createFileBlobStore(config.dataDir);
  // Before the app exists, so that nothing can be writing yet: what a crashed process left goes.
  const leftovers = await removeCrashLeftovers(blobs, byDatabase(db, blobReferenceCheck, postgresBlobReferenceCheck));
  const spools = await removeOrphanMultipartSpools(db, config.dataDir);
  const app = await buildApp(config, { db, blobs, ...(metadata.node ? { node: metadata.node } : {}) });
  if (!privateDataDir)
    app.log.warn({ dataDir: config.dataDir }, "the data directory could not be made private (chmod 700)");
  if (leftovers.tempFiles + leftovers.blobs + spools.files > 0) {
    const removed = { ...leftovers, spools: spools.files, spoolBytes: spools.bytes };
    app.log.info(removed, "removed temporary files and unreferenced blobs left by an earlier process");
  }

  // The app made SQLite's connection non-blocking: a CLI holding the lock right now delays, not fails, the start.
  const generated = isPostgres(db)
    ? await bootstrapAdminKey(db, config.dataDir, config.adminApiKey, systemClock)
    : await retryWhileBusy(db, () => bootstrapAdminKey(db, config.dataDir, config.adminApiKey, systemClock));
  if (generated) {
    // Printed once, on the first start only; it is also in the file, readable by the owner alone.
    process.stdout.write(
      `\nA full-control API key was created for you (also saved in ${dataPaths(config.dataDir).adminApiKey}):\n\n    ${generated}\n\n`,
    );
  }

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down: finishing in-flight requests");
    // close() reaps idle keep-alive sockets once; a request still in flight at that moment leaves
    // its socket open afterwards for the keep-alive timeout (72 s). Keep reaping until closed.
    const reaper = setInterval(() => app.server.closeIdleConnections(), 100);
    reaper.unref();
    try {
      await app.close(); // stops accepting, waits for in-flight requests
      clearInterval(reaper);
      await metadata.close();
      unlockDataDir();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, "error while shutting down");
      process.exit(1);
    }
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));

  const address = await app.listen({ port: config.port, host: config.host });
  app.log.info({ url: config.baseUrl ?? address, dataDir: config.dataDir }, `Wharf listening on ${address}`);
}

/** True when this file is the process entry (`node dist/src/main.js`, `tsx src/main.ts`), not merely imported (the CLI). */
function isProcessEntry(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return fs.realpathSync(script) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isProcessEntry()) {
  try {
    await serve(loadConfig(process.env));
  } catch (error) {
    if (error instanceof ConfigError || error instanceof SchemaVersionError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof DataDirInUseError || error instanceof DataDirUnwritableError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
}
