import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { BlobServiceClient } from "@azure/storage-blob";
import type { FastifyInstance } from "fastify";
import { type AppDeps, buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { joinCluster } from "../../src/cluster-node.js";
import { type Config, loadConfig } from "../../src/config.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import type { PostgresDb } from "../../src/storage/postgres/database.js";
import { systemClock } from "../../src/domain/clock.js";
import { TEST_APP_ENV } from "./app.js";
import type { AzuriteServer } from "./azurite.js";

/** What every node of one test cluster shares: the database, the object store and the secret key. */
export interface TestCluster {
  readonly databaseUrl: string;
  /** WHARF_PACKAGE_STORE and its properties: one Azurite container. */
  readonly storeEnv: Record<string, string>;
  readonly secretKey: string;
  /** A full-control System key, the same on every node (WHARF_ADMIN_API_KEY). */
  readonly adminKey: string;
}

/** A cluster on `databaseUrl` (a new database) whose package store is a new container on `azurite`. */
export async function testCluster(databaseUrl: string, azurite: AzuriteServer): Promise<TestCluster> {
  const containerName = `wharf-cluster-${randomBytes(4).toString("hex")}`;
  const connectionString = azurite.connectionString();
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName).create();
  return {
    databaseUrl,
    storeEnv: {
      WHARF_PACKAGE_STORE: "azure",
      WHARF_AZURE_CONNECTION_STRING: connectionString,
      WHARF_AZURE_CONTAINER_NAME: containerName,
      WHARF_AZURE_TARGET_PATH: "packages",
    },
    secretKey: randomBytes(32).toString("base64"),
    adminKey: `test-admin-${randomBytes(12).toString("hex")}`,
  };
}

export interface ClusterTestApp {
  readonly app: FastifyInstance;
  readonly db: PostgresDb;
  readonly nodeId: string;
  readonly config: Config;
  readonly adminKey: string;
  close(): Promise<void>;
}

/**
 * One node of `cluster` in this process (inject()-based, as buildTestApp), joined as main.ts joins
 * it: schema migrated, change feed listening, node registered. Its data directory is its own.
 * `deps` are the test seams of the app (a feed move's hooks, a wrapped object store).
 */
export async function buildClusterTestApp(
  cluster: TestCluster,
  options: { env?: Record<string, string>; deps?: Pick<AppDeps, "feedStoreMoveHooks" | "createObjectStore"> } = {},
): Promise<ClusterTestApp> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-node-"));
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_LOG_LEVEL: "silent",
    WHARF_DATABASE_URL: cluster.databaseUrl,
    WHARF_SECRET_KEY: cluster.secretKey,
    WHARF_ADMIN_API_KEY: cluster.adminKey,
    ...cluster.storeEnv,
    ...TEST_APP_ENV,
    ...options.env,
  });
  const quiet = { info: () => {}, warn: () => {} };
  const node = await joinCluster({ ...config, databaseUrl: cluster.databaseUrl }, quiet);
  try {
    const app = await buildApp(config, {
      db: node.db,
      blobs: createFileBlobStore(dataDir),
      node: { id: node.nodeId, changeFeed: node.watch, databaseUrl: cluster.databaseUrl },
      logger: false,
      ...options.deps,
    });
    await bootstrapAdminKey(node.db, dataDir, cluster.adminKey, systemClock);
    await app.ready();
    return {
      app,
      db: node.db,
      nodeId: node.nodeId,
      config,
      adminKey: cluster.adminKey,
      async close() {
        await app.close();
        await node.close();
        await fs.rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await node.close();
    await fs.rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}
