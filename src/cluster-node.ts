import type { Config } from "./config.js";
import { describeDatabaseUrl } from "./storage/postgres/connection.js";
import { assertClusterConfig } from "./storage/postgres/cluster-mode.js";
import { defaultNodeId, NODE_HEARTBEAT_MS, registerNode } from "./storage/postgres/cluster-nodes.js";
import { type NodeDatabase, openNodeDatabase } from "./storage/postgres/node-database.js";
import { WHARF_VERSION } from "./version.js";

export interface ClusterNodeStart extends NodeDatabase {
  readonly nodeId: string;
}

interface Log {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/**
 * Joins this process to the cluster on WHARF_DATABASE_URL (docs/cluster-mode.md): checks what
 * cluster mode needs of the configuration, brings the schema up to date under the migration lock
 * (the first node of a new version to start does it; `wharf migrate` may have done it already),
 * refuses a schema of another version, starts the change feed and registers the node with its
 * heartbeat. `close()` unregisters the node (a graceful stop is not a crash) and closes its
 * connections.
 */
export async function joinCluster(config: Config & { databaseUrl: string }, log: Log): Promise<ClusterNodeStart> {
  assertClusterConfig(config);
  const nodeId = defaultNodeId();
  const database = await openNodeDatabase({
    url: config.databaseUrl,
    nodeId,
    migrate: true,
    onError: (error, where) => log.warn({ err: error, where }, "the cluster database reported an error"),
    onMigrationApplied: (name) => log.info({ migration: name }, "applied a schema migration"),
  });
  try {
    const registration = await registerNode(database.db.pool, {
      nodeId,
      version: WHARF_VERSION,
      ...(config.baseUrl !== undefined ? { url: config.baseUrl } : {}),
      heartbeatMs: NODE_HEARTBEAT_MS,
      onError: (error) => log.warn({ err: error }, "this node's heartbeat failed"),
    });
    log.info({ node: nodeId, database: describeDatabaseUrl(config.databaseUrl) }, "joined the cluster");
    return {
      ...database,
      nodeId,
      async close() {
        await registration.stop();
        await database.close();
      },
    };
  } catch (error) {
    await database.close();
    throw error;
  }
}
