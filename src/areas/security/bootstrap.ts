import fs from "node:fs";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import { dataPaths } from "../../storage/data-paths.js";
import { isPostgres, type MetadataDb } from "../../storage/metadata-db.js";
import type { PostgresDb } from "../../storage/postgres/database.js";
import { generateApiKey, hashApiKey } from "./api-key-hash.js";
import { bootstrapPostgresAdminKey } from "./bootstrap-postgres.js";

/**
 * No default password (docs/PRODUCT.md): with WHARF_ADMIN_API_KEY, a full-control System key with exactly
 * that value is ensured on every start (idempotent); otherwise, on the very first start (no key at
 * all), one is generated, written to `<data>/admin-api-key` (mode 0600) and returned to be printed once.
 *
 * On SQLite it answers at once (one immediate transaction: the caller retries it while the CLI holds
 * the lock); on PostgreSQL (cluster mode) it answers a promise, with the same outcomes under nodes
 * starting at once (bootstrap-postgres.ts). `await` takes either.
 */
export function bootstrapAdminKey(
  db: Db,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): string | undefined;
export function bootstrapAdminKey(
  db: PostgresDb,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): Promise<string | undefined>;
export function bootstrapAdminKey(
  db: MetadataDb,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): string | undefined | Promise<string | undefined>;
export function bootstrapAdminKey(
  db: MetadataDb,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): string | undefined | Promise<string | undefined> {
  if (isPostgres(db)) return bootstrapPostgresAdminKey(db, dataDir, adminApiKey, clock);
  return bootstrapSqliteAdminKey(db, dataDir, adminApiKey, clock);
}

function bootstrapSqliteAdminKey(
  db: Db,
  dataDir: string,
  adminApiKey: string | undefined,
  clock: Clock,
): string | undefined {
  const now = clock.now().toISOString();
  const insert = db.prepare<[string, string, string]>(
    `INSERT INTO api_keys (key_hash, key_type, display_name, description, system_apis, created_at)
     VALUES (?, 'System', ?, 'Full control, created at start-up', '["full-control"]', ?)`,
  );
  if (adminApiKey !== undefined) {
    const hash = hashApiKey(adminApiKey);
    db.transaction(() => {
      const existing = db.prepare<[string], { id: number }>("SELECT id FROM api_keys WHERE key_hash = ?").get(hash);
      if (existing) {
        // The operator said this key is the admin key: make it one even if someone narrowed it.
        db.prepare(
          `UPDATE api_keys SET key_type = 'System', system_apis = '["full-control"]', user_id = NULL,
                  package_permissions = NULL, feed_name = NULL, feed_group = NULL, expires_at = NULL WHERE id = ?`,
        ).run(existing.id);
      } else {
        insert.run(hash, "Administrator (WHARF_ADMIN_API_KEY)", now);
      }
    }).immediate();
    return undefined;
  }
  const { n } = db.prepare<[], { n: number }>("SELECT count(*) AS n FROM api_keys").get() ?? { n: 0 };
  if (n > 0) return undefined;
  // The file is written before the key exists: a failed write must not leave a key nobody knows.
  const generated = generateApiKey();
  const file = dataPaths(dataDir).adminApiKey;
  fs.writeFileSync(file, `${generated}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600); // mode is ignored when the file already existed
  insert.run(hashApiKey(generated), "Administrator (generated at first start)", now);
  return generated;
}
