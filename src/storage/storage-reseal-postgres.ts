import type { StorageConfig } from "../domain/package-store.js";
import { inTransaction, type PostgresDb } from "./postgres/database.js";
import type { SecretBox } from "./secrets.js";
import { resealing, type StorageResealResult } from "./storage-reseal.js";

/**
 * resealStorageCredentials on PostgreSQL (cluster mode): the same rows resealed in one transaction.
 * The rows it rewrites are locked as it reads them (FOR NO KEY UPDATE: the feeds, then the stores),
 * so that a setting another node changes meanwhile is neither lost under the resealed copy nor
 * resealed from its old value: that change waits for this transaction, or this one for it. Every
 * node starting at once with a new key reseals in turn; the first does the work, the others find
 * it done (resealStorageSecrets answers undefined for a configuration already under the current key).
 */
export async function resealPostgresStorageCredentials(
  db: PostgresDb,
  secrets: SecretBox,
): Promise<StorageResealResult> {
  return inTransaction(db, async (client) => {
    const { reseal, unreadable } = resealing(secrets);
    let resealed = 0;
    // json_extract(settings, '$.storage') IS NOT NULL: ->> is SQL NULL for an absent key and for a JSON null alike.
    const feeds = await client.query<{ id: number; name: string; settings: string }>(
      "SELECT id, name, settings FROM feeds WHERE settings::json ->> 'storage' IS NOT NULL ORDER BY id FOR NO KEY UPDATE",
    );
    for (const row of feeds.rows) {
      const settings = JSON.parse(row.settings) as { storage: StorageConfig };
      const storage = reseal(`feed ${row.name}`, settings.storage);
      if (storage === undefined) continue;
      await client.query("UPDATE feeds SET settings = $1 WHERE id = $2", [
        JSON.stringify({ ...settings, storage }),
        row.id,
      ]);
      resealed++;
    }
    const stores = await client.query<{ key: string; config: string }>(
      "SELECT key, config FROM blob_stores ORDER BY key FOR NO KEY UPDATE",
    );
    for (const row of stores.rows) {
      const config = reseal(`store ${row.key}`, JSON.parse(row.config) as StorageConfig);
      if (config === undefined) continue;
      await client.query("UPDATE blob_stores SET config = $1 WHERE key = $2", [JSON.stringify(config), row.key]);
      resealed++;
    }
    return { resealed, unreadable };
  });
}
