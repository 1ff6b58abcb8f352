import { randomBytes } from "node:crypto";
import { BlobServiceClient } from "@azure/storage-blob";
import { inject } from "vitest";
import type { AppDeps } from "../../src/app.js";
import { joinCluster } from "../../src/cluster-node.js";
import type { Config } from "../../src/config.js";
import type { PostgresDb } from "../../src/storage/postgres/database.js";
import "./azurite-global.js";
import { testPostgres } from "./shared-postgres.js";

/**
 * buildTestApp's PostgreSQL mode (issue 18: the integration suites on both databases). With
 * WHARF_TEST_DATABASE=postgres, as the vitest project "postgres" sets (postgres-suites.ts), a test
 * app is one cluster node on a new database of the run's PostgreSQL, with a new container of the
 * run's Azurite for its package store (cluster mode refuses the data directory's disk).
 */
export const testsRunOnPostgres = (): boolean => process.env.WHARF_TEST_DATABASE === "postgres";

/** The settings of a one-node cluster of its own: a new database, a new container, a secret key. */
export async function postgresTestEnv(): Promise<Record<string, string>> {
  const connectionString = inject("azuriteConnectionString");
  if (connectionString === undefined) {
    throw new Error("no Azurite for this run: WHARF_TEST_DATABASE=postgres needs the global setup azurite-global.ts");
  }
  const containerName = `wharf-test-${randomBytes(4).toString("hex")}`;
  await BlobServiceClient.fromConnectionString(connectionString).getContainerClient(containerName).create();
  return {
    WHARF_DATABASE_URL: await testPostgres().createDatabase(),
    WHARF_SECRET_KEY: randomBytes(32).toString("base64"),
    WHARF_PACKAGE_STORE: "azure",
    WHARF_AZURE_CONNECTION_STRING: connectionString,
    WHARF_AZURE_CONTAINER_NAME: containerName,
    WHARF_AZURE_TARGET_PATH: "packages",
  };
}

export interface PostgresTestNode {
  readonly db: PostgresDb;
  readonly node: NonNullable<AppDeps["node"]>;
  close(): Promise<void>;
}

/** Joins the cluster `config` names as main.ts does: schema migrated, change feed listening, node registered. */
export async function joinTestCluster(config: Config): Promise<PostgresTestNode> {
  const databaseUrl = config.databaseUrl;
  if (databaseUrl === undefined) throw new Error("joinTestCluster: the configuration names no WHARF_DATABASE_URL");
  const quiet = { info: () => {}, warn: () => {} };
  const joined = await joinCluster({ ...config, databaseUrl }, quiet);
  return {
    db: joined.db,
    node: { id: joined.nodeId, changeFeed: joined.watch, databaseUrl },
    close: () => joined.close(),
  };
}
