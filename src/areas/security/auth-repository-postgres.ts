import type { ChangeWatch } from "../../storage/change-watch.js";
import { type PostgresDb, quietTransaction, readRows } from "../../storage/postgres/database.js";
import {
  ANONYMOUS_GRANTS,
  apiKeyRecord,
  type AuthRepository,
  GRANT_SELECT,
  type GrantRow,
  grantOf,
  KEY_SELECT,
  type KeyRow,
  type LoginRow,
  loginRecord,
} from "./auth-repository.js";

/** Anonymous's grants, the user's own and those of the user's groups: $1 is the user's id. */
const GRANTS_OF_USER = `${GRANT_SELECT}
      WHERE p.principal_type = 'anonymous'
         OR (p.principal_type = 'user' AND p.user_id = $1)
         OR (p.principal_type = 'group' AND p.group_id IN (SELECT group_id FROM group_members WHERE user_id = $1))`;

/**
 * AuthRepository on PostgreSQL (cluster mode): the same answers as on SQLite, each read one
 * statement and one round trip. `watch` is the node's change watch (storage/postgres/change-feed.ts,
 * the one whose localCommit is `db.committed`): on SQLite the repository finds the connection's
 * own, here nothing but the caller knows it.
 */
export function createPostgresAuthRepository(db: PostgresDb, watch: Pick<ChangeWatch, "version">): AuthRepository {
  return {
    async findKeyByHash(keyHash) {
      const [row] = await readRows<KeyRow>(db, `${KEY_SELECT} WHERE k.key_hash = $1`, [keyHash]);
      return row && apiKeyRecord(row);
    },
    async findLogin(userName) {
      const [row] = await readRows<LoginRow>(db, "SELECT id, name, password_hash FROM users WHERE name_key = $1", [
        userName.toLowerCase(),
      ]);
      return row && loginRecord(row);
    },
    async grantsFor(userId) {
      const rows =
        userId === undefined
          ? await readRows<GrantRow>(db, ANONYMOUS_GRANTS)
          : await readRows<GrantRow>(db, GRANTS_OF_USER, [userId]);
      return rows.map(grantOf);
    },
    async touchKey(keyId, usedAt) {
      // Quiet: no node's cache reads last-used times. SKIP LOCKED is SQLite's unlessBusy: a key
      // row another transaction holds (being deleted, or stamped by another node this instant) is
      // left as it is rather than waited for; a later use of the key stamps it anyway.
      await quietTransaction(db, (client) =>
        client.query(
          `UPDATE api_keys SET last_used_at = $1
            WHERE id = (SELECT id FROM api_keys WHERE id = $2 FOR NO KEY UPDATE SKIP LOCKED)`,
          [usedAt, keyId],
        ),
      );
    },
    generation: () => watch.version(),
  };
}
