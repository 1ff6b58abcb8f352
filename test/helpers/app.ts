import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import type { FastifyInstance } from "fastify";
import { type AppDeps, buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { type Config, loadConfig } from "../../src/config.js";
import { type Clock, systemClock } from "../../src/domain/clock.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { isPostgres, type MetadataDb } from "../../src/storage/metadata-db.js";
import { execute } from "./fixtures.js";
import { joinTestCluster, postgresTestEnv, testsRunOnPostgres } from "./postgres-test-app.js";

export interface TestApp {
  readonly app: FastifyInstance;
  /** The app's metadata database: SQLite, or PostgreSQL under WHARF_TEST_DATABASE=postgres. */
  readonly database: MetadataDb;
  /**
   * The data directory's SQLite, for tests that read or write it directly: they run on SQLite
   * alone. On PostgreSQL it throws "this test reads SQLite directly" at its first use.
   */
  readonly db: Db;
  readonly config: Config;
  readonly dataDir: string;
  /** A full-control System API key. */
  readonly adminKey: string;
  close(): Promise<void>;
}

/**
 * What every test app (this file's, and each node of cluster-app.ts) runs with unless a test asks
 * otherwise through its env:
 * - Failed sign-ins are not slowed: tests send wrong keys and passwords from one address on purpose
 *   (auth-guessing.test.ts passes the production defaults back).
 * - No routine configuration checks: their first round falls anywhere in the first interval (an
 *   hour by default), so across the suite's hundreds of apps one would now and then hand an agent's
 *   poll work, or add a collection, that the test did not ask for.
 */
export const TEST_APP_ENV = {
  WHARF_AUTH_ADDRESS_FAILURES: "10000",
  WHARF_AUTH_USER_FREE_FAILURES: "10000",
  WHARF_CONFIG_CHECK_MINUTES: "0",
} as const;

/** The app's database and, on PostgreSQL, its seat in the cluster; closed after the app. */
interface Metadata {
  readonly database: MetadataDb;
  readonly node?: AppDeps["node"];
  close(): Promise<void>;
}

async function openMetadata(config: Config): Promise<Metadata> {
  if (config.databaseUrl !== undefined) {
    const cluster = await joinTestCluster(config);
    return { database: cluster.db, node: cluster.node, close: cluster.close };
  }
  const db = openDatabase(path.join(config.dataDir, "wharf.sqlite"));
  return {
    database: db,
    close: async () => {
      db.close();
    },
  };
}

const SQLITE_ONLY =
  "this test reads SQLite directly (t.db): it cannot run on PostgreSQL, leave it off postgres-suites.ts";

/**
 * On PostgreSQL, a stand-in for the SQLite connection that throws at its first use: a test that
 * takes `t.db` up front but uses it in some steps alone still runs the steps that go through the API.
 */
export const noSqlite: Db = new Proxy({} as Db, {
  get: () => {
    throw new Error(SQLITE_ONLY);
  },
  has: () => {
    throw new Error(SQLITE_ONLY);
  },
});

/**
 * A real app on a fresh temp data dir (file database, real blob store), for inject()-based tests;
 * `dataDir` (not there yet) puts it elsewhere, e.g. on a small filesystem. Removed on close. With
 * WHARF_TEST_DATABASE=postgres, a cluster node on a PostgreSQL database and an Azurite container
 * of its own instead (postgres-test-app.ts).
 */
export async function buildTestApp(
  options: { env?: Record<string, string>; clock?: Clock; logger?: AppDeps["logger"]; dataDir?: string } = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), "wharf-test-")));
  const adminKey = `test-admin-${randomBytes(12).toString("hex")}`;
  const cluster = testsRunOnPostgres() ? await postgresTestEnv() : {};
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_LOG_LEVEL: "silent",
    ...cluster,
    ...TEST_APP_ENV,
    ...options.env,
  });
  const metadata = await openMetadata(config);
  const { database } = metadata;
  const clock = options.clock ?? systemClock;
  const removeAll = async () => {
    await metadata.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  };
  let app: FastifyInstance | undefined;
  try {
    await bootstrapAdminKey(database, dataDir, adminKey, clock);
    app = await buildApp(config, {
      db: database,
      ...(metadata.node ? { node: metadata.node } : {}),
      blobs: createFileBlobStore(dataDir),
      clock,
      logger: options.logger ?? false,
    });
    await app.ready();
  } catch (error) {
    // A PostgreSQL node left open would keep its connections and heartbeat after the file.
    await app?.close();
    await removeAll();
    throw error;
  }
  const built = app;
  return {
    app: built,
    database,
    db: isPostgres(database) ? noSqlite : database,
    config,
    dataDir,
    adminKey,
    async close() {
      await built.close();
      await removeAll();
    },
  };
}

/**
 * Runs one statement (`?` placeholders, SQL that means the same on both databases) as another
 * process would: on SQLite through a second connection to the app's database file (the CLI), on
 * PostgreSQL through the pool, where every client's write notifies the nodes alike.
 */
export async function writeFromOutside(t: TestApp, sql: string, ...params: unknown[]): Promise<void> {
  if (isPostgres(t.database)) {
    await execute(t.database, sql, params);
    return;
  }
  const other = new Database(path.join(t.dataDir, "wharf.sqlite"));
  try {
    other.prepare(sql).run(...params);
  } finally {
    other.close();
  }
}
