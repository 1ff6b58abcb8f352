import type { StorageConfig } from "../domain/package-store.js";
import type { Db } from "./database.js";
import { type SecretBox, SecretUnreadableError } from "./secrets.js";
import { resealStorageSecrets } from "./storage-secrets.js";

export interface StorageResealResult {
  readonly resealed: number;
  /** Feeds and stores whose credentials no configured key opens (they fail until fixed). */
  readonly unreadable: readonly string[];
}

/**
 * Seals the storage credentials of feeds and of known stores (blob_stores) under the current
 * secret key when a previous key sealed them (README: rotating the secret key), in one transaction.
 */
export function resealStorageCredentials(db: Db, secrets: SecretBox): StorageResealResult {
  const feeds = db.prepare<[], { id: number; name: string; settings: string }>(
    "SELECT id, name, settings FROM feeds WHERE json_extract(settings, '$.storage') IS NOT NULL",
  );
  const updateFeed = db.prepare<[string, number]>("UPDATE feeds SET settings = ? WHERE id = ?");
  const stores = db.prepare<[], { key: string; config: string }>("SELECT key, config FROM blob_stores");
  const updateStore = db.prepare<[string, string]>("UPDATE blob_stores SET config = ? WHERE key = ?");
  const { reseal, unreadable } = resealing(secrets);
  let resealed = 0;
  db.transaction(() => {
    for (const row of feeds.all()) {
      const settings = JSON.parse(row.settings) as { storage: StorageConfig };
      const storage = reseal(`feed ${row.name}`, settings.storage);
      if (storage === undefined) continue;
      updateFeed.run(JSON.stringify({ ...settings, storage }), row.id);
      resealed++;
    }
    for (const row of stores.all()) {
      const config = reseal(`store ${row.key}`, JSON.parse(row.config) as StorageConfig);
      if (config === undefined) continue;
      updateStore.run(JSON.stringify(config), row.key);
      resealed++;
    }
  })();
  return { resealed, unreadable };
}

/**
 * Reseals one configuration (both databases): undefined when it needs nothing, or when no key
 * opens it (then its label joins `unreadable`).
 */
export function resealing(secrets: SecretBox): {
  reseal: (label: string, config: StorageConfig) => StorageConfig | undefined;
  unreadable: string[];
} {
  const unreadable: string[] = [];
  const reseal = (label: string, config: StorageConfig): StorageConfig | undefined => {
    try {
      return resealStorageSecrets(config, secrets);
    } catch (error) {
      if (!(error instanceof SecretUnreadableError)) throw error;
      unreadable.push(label);
      return undefined;
    }
  };
  return { reseal, unreadable };
}
