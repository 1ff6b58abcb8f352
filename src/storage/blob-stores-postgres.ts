import type { StorageConfig } from "../domain/package-store.js";
import { type PostgresDb, readRows, writeRows } from "./postgres/database.js";

/**
 * The rows createBlobStores (blob-stores.ts) reads and writes, on PostgreSQL (cluster mode): the
 * known stores (`blob_stores`, secrets sealed) and a feed's storage setting.
 *
 * Where the cluster path must differ from blob-stores.ts, which reads these synchronously:
 * - the known stores are read once, awaited, before the node's BlobStores is built (`known`), and
 *   a store another node registers later is found when a feed names it (`feedStorage`, then
 *   `record` on first use here too);
 * - `forFeed` must read the feed's setting from PostgreSQL (awaited) or from the feed cache kept
 *   by the change feed: BlobStores.forFeed/keeperFor are synchronous today, so building BlobStores
 *   on PostgreSQL needs them asynchronous (or fed from that cache) first;
 * - every store is an object store (a disk store is refused in cluster mode), and no keeper deletes
 *   a blob eagerly: blob-keeper-postgres.ts.
 */
export interface PostgresBlobStoreRows {
  /** Every store recorded, by key: its configuration as stored (secrets sealed). */
  known(): Promise<{ key: string; config: StorageConfig }[]>;
  /**
   * Records a store (secrets sealed) or refreshes its configuration and last use; as SQLite's
   * upsert, the first use stays, and a concurrent record by another node is no error.
   */
  record(key: string, kind: StorageConfig["id"], sealed: StorageConfig, now: string): Promise<void>;
  /** The feed's storage setting (secrets sealed); undefined = the server default (or no such feed). */
  feedStorage(feedId: number): Promise<StorageConfig | undefined>;
}

export function createPostgresBlobStoreRows(db: PostgresDb): PostgresBlobStoreRows {
  return {
    async known() {
      const rows = await readRows<{ key: string; config: string }>(
        db,
        'SELECT key, config FROM blob_stores ORDER BY key COLLATE "C"',
      );
      return rows.map((row) => ({ key: row.key, config: JSON.parse(row.config) as StorageConfig }));
    },
    async record(key, kind, sealed, now) {
      await writeRows(
        db,
        `INSERT INTO blob_stores (key, kind, config, first_used_at, last_used_at) VALUES ($1, $2, $3, $4, $4)
         ON CONFLICT (key) DO UPDATE SET config = excluded.config, last_used_at = excluded.last_used_at`,
        [key, kind, JSON.stringify(sealed), now],
      );
    },
    async feedStorage(feedId) {
      // json_extract of a JSON null is SQL NULL: ->> answers the same (json, not jsonb: the text as stored, keys in their order).
      const [row] = await readRows<{ storage: string | null }>(
        db,
        "SELECT settings::json ->> 'storage' AS storage FROM feeds WHERE id = $1",
        [feedId],
      );
      return row?.storage === null || row?.storage === undefined
        ? undefined
        : (JSON.parse(row.storage) as StorageConfig);
    },
  };
}
