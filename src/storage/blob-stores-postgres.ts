import type { StorageConfig } from "../domain/package-store.js";
import type { BlobStoreRows } from "./blob-stores.js";
import { type PostgresDb, readRows, writeRows } from "./postgres/database.js";

/**
 * The rows createBlobStores (blob-stores.ts) reads and writes, on PostgreSQL (cluster mode): the
 * stores every node has named, and a feed's storage setting (read at each upload: another node may
 * have changed it). A concurrent record of the same store by another node is no error.
 */
export function createPostgresBlobStoreRows(db: PostgresDb): BlobStoreRows {
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
