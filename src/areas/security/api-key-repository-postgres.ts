import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import {
  type ApiKeyRepository,
  INSERT_KEY_COLUMNS,
  insertFailure,
  insertValues,
  KEY_SELECT,
  type KeyRow,
  keyView,
} from "./api-key-repository.js";

/** ApiKeyRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresApiKeyRepository(db: PostgresDb): ApiKeyRepository {
  return {
    async list() {
      return (await readRows<KeyRow>(db, `${KEY_SELECT} ORDER BY k.id`)).map(keyView);
    },
    async insert(key) {
      try {
        return await inTransaction(db, async (client) => {
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO ${INSERT_KEY_COLUMNS} VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id`,
            insertValues(key),
          );
          const row = await client.query<KeyRow>(`${KEY_SELECT} WHERE k.id = $1`, [inserted.rows[0]?.id]);
          return keyView(row.rows[0] as KeyRow);
        });
      } catch (error) {
        throw insertFailure(error);
      }
    },
    async delete(id) {
      return ((await writeRows(db, "DELETE FROM api_keys WHERE id = $1", [id])).rowCount ?? 0) > 0;
    },
  };
}
