import { attachCacheVersion } from "../metadata-db.js";
import { PostgresChangeWatch } from "./change-feed.js";
import { openPostgres } from "./connection.js";
import type { PostgresDb } from "./database.js";
import { assertSchemaCurrent, migratePostgres } from "./migrations.js";

export interface NodeDatabaseOptions {
  readonly url: string;
  readonly nodeId: string;
  /** Connections the node's pool keeps at most. */
  readonly poolSize?: number;
  /** Brings the schema up to date first (the first node of a new version to start does): `wharf migrate`'s work. */
  readonly migrate?: boolean;
  /** Idle connection errors and change-feed trouble: reported, never thrown. */
  readonly onError?: (error: Error, where: "pool" | "change feed") => void;
  readonly onMigrationApplied?: (name: string) => void;
}

export interface NodeDatabase {
  readonly db: PostgresDb;
  readonly watch: PostgresChangeWatch;
  close(): Promise<void>;
}

/**
 * One node's connection to the cluster's PostgreSQL: its pool, its change feed (attached, so that
 * every cache on the node keys on it: metadata-db.ts `cacheVersionOf`), and the schema checked
 * against this build. Throws SchemaVersionError for a schema of another version, and the driver's
 * error when the database cannot be reached: a node that cannot vouch for its data does not serve.
 */
export async function openNodeDatabase(options: NodeDatabaseOptions): Promise<NodeDatabase> {
  const pool = openPostgres(options.url, {
    applicationName: `wharf ${options.nodeId}`,
    ...(options.poolSize !== undefined ? { max: options.poolSize } : {}),
    onIdleError: (error) => options.onError?.(error, "pool"),
  });
  const watch = new PostgresChangeWatch({
    url: options.url,
    applicationName: `wharf ${options.nodeId} changes`,
    onError: (error) => options.onError?.(error, "change feed"),
  });
  // Before the pool's first connection (the migrations'), so that it knows every one of them.
  watch.trackPool(pool);
  try {
    if (options.migrate === true) await migratePostgres(pool, undefined, options.onMigrationApplied);
    await assertSchemaCurrent(pool);
    await watch.start();
  } catch (error) {
    await watch.close();
    await pool.end();
    throw error;
  }
  const db: PostgresDb = {
    pool,
    committed: (connection) => watch.localCommit(connection),
    notifiesNothing: (connection) => watch.notifiesNothing(connection),
  };
  attachCacheVersion(db, watch);
  return {
    db,
    watch,
    async close() {
      await watch.close();
      await pool.end();
    },
  };
}
