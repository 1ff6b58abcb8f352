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

export interface TestApp {
  readonly app: FastifyInstance;
  readonly db: Db;
  readonly config: Config;
  readonly dataDir: string;
  /** A full-control System API key. */
  readonly adminKey: string;
  close(): Promise<void>;
}

/**
 * Tests send wrong keys and passwords from one address on purpose: failed sign-ins are slowed only
 * where a test asks for it (auth-guessing.test.ts passes the production defaults back).
 */
const UNTHROTTLED = { WHARF_AUTH_ADDRESS_FAILURES: "10000", WHARF_AUTH_USER_FREE_FAILURES: "10000" } as const;

/**
 * A real app on a fresh temp data dir (file database, real blob store), for inject()-based tests;
 * `dataDir` (not there yet) puts it elsewhere, e.g. on a small filesystem. Removed on close.
 */
export async function buildTestApp(
  options: { env?: Record<string, string>; clock?: Clock; logger?: AppDeps["logger"]; dataDir?: string } = {},
): Promise<TestApp> {
  const dataDir = options.dataDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), "wharf-test-")));
  const adminKey = `test-admin-${randomBytes(12).toString("hex")}`;
  const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", ...UNTHROTTLED, ...options.env });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  const blobs = createFileBlobStore(dataDir);
  const clock = options.clock ?? systemClock;
  bootstrapAdminKey(db, dataDir, adminKey, clock);
  const app = await buildApp(config, { db, blobs, clock, logger: options.logger ?? false });
  await app.ready();
  return {
    app,
    db,
    config,
    dataDir,
    adminKey,
    async close() {
      await app.close();
      db.close();
      await fs.rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Runs one statement through a second connection to the app's database file, as another process (the CLI) would. */
export function writeFromOutside(t: TestApp, sql: string, ...params: unknown[]): void {
  const other = new Database(path.join(t.dataDir, "wharf.sqlite"));
  try {
    other.prepare(sql).run(...params);
  } finally {
    other.close();
  }
}
