import fs from "node:fs";
import type { Clock } from "../../domain/clock.js";
import { dataPaths } from "../../storage/data-paths.js";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { generateApiKey, hashApiKey } from "./api-key-hash.js";

const INSERT_ADMIN = `INSERT INTO api_keys (key_hash, key_type, display_name, description, system_apis, created_at)
     VALUES ($1, 'System', $2, 'Full control, created at start-up', '["full-control"]', $3)`;

/**
 * bootstrapAdminKey on PostgreSQL (cluster mode), with the same outcomes as on SQLite:
 * - with WHARF_ADMIN_API_KEY, one statement (INSERT ... ON CONFLICT on the key's hash) inserts the
 *   key or makes it a full-control System key again, as SQLite's immediate transaction does; nodes
 *   starting at once all end with the one key;
 * - otherwise a key is generated when there is none at all, under a lock of api_keys that makes
 *   concurrent first starts take turns: only the first node generates one (and writes it to its
 *   own data directory), the others find it.
 */
export async function bootstrapPostgresAdminKey(
  db: PostgresDb,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): Promise<string | undefined> {
  const now = clock.now().toISOString();
  if (adminApiKey !== undefined) {
    // The operator said this key is the admin key: make it one even if someone narrowed it.
    await writeRows(
      db,
      `${INSERT_ADMIN}
       ON CONFLICT (key_hash) DO UPDATE SET key_type = 'System', system_apis = '["full-control"]', user_id = NULL,
         package_permissions = NULL, feed_name = NULL, feed_group = NULL, expires_at = NULL`,
      [hashApiKey(adminApiKey), "Administrator (WHARF_ADMIN_API_KEY)", now],
    );
    return undefined;
  }
  const any = async (query: (sql: string) => Promise<unknown[]>) =>
    (await query("SELECT 1 FROM api_keys LIMIT 1")).length > 0;
  // The usual start: keys exist, nothing to lock.
  if (await any((sql) => readRows(db, sql))) return undefined;
  return inTransaction(db, async (client) => {
    // Blocks other writers of api_keys (another node's first start among them) until COMMIT.
    await client.query("LOCK TABLE api_keys IN SHARE ROW EXCLUSIVE MODE");
    if (await any(async (sql) => (await client.query(sql)).rows)) return undefined;
    // The file is written before the key exists: a failed write must not leave a key nobody knows.
    const generated = generateApiKey();
    const file = dataPaths(dataDir).adminApiKey;
    fs.writeFileSync(file, `${generated}\n`, { mode: 0o600 });
    fs.chmodSync(file, 0o600); // mode is ignored when the file already existed
    await client.query(INSERT_ADMIN, [hashApiKey(generated), "Administrator (generated at first start)", now]);
    return generated;
  });
}
