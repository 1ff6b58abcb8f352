import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import {
  type CollectedItemRow,
  collectedItemOf,
  type CollectionRow,
  type CollectionsRepository,
  collectionOf,
  countsOf,
  resultRoleId,
} from "./collections-repository.js";

/**
 * CollectionsRepository on PostgreSQL (cluster mode). At most one executing collection per server
 * is the unique partial index `config_collections_executing`, as on SQLite: two nodes beginning a
 * check of one server at once, one gets the row, the other's INSERT fails on the index (after the
 * first commits) and begin() answers undefined. complete() and fail() end only an executing
 * collection (`AND status = 'executing'`): a collection another node ended meanwhile (the restart
 * rule) stays as that node left it.
 */
export function createPostgresCollectionsRepository(db: PostgresDb): CollectionsRepository {
  const one = async (sql: string, params: readonly unknown[]) => {
    const [row] = await readRows<CollectionRow>(db, sql, params);
    return row && collectionOf(row);
  };

  return {
    async begin(serverId, jobId, startedAt) {
      try {
        const inserted = await writeRows<{ id: number }>(
          db,
          "INSERT INTO config_collections (server_id, job_id, status, started_at) VALUES ($1, $2, 'executing', $3) RETURNING id",
          [serverId, jobId ?? null, startedAt],
        );
        return inserted.rows[0]?.id;
      } catch (error) {
        if (isUniqueViolation(error)) return undefined;
        throw error;
      }
    },
    executingOf: (serverId) =>
      one("SELECT * FROM config_collections WHERE server_id = $1 AND status = 'executing'", [serverId]),
    get: (id) => one("SELECT * FROM config_collections WHERE id = $1", [id]),
    latestOf: (serverId) =>
      one("SELECT * FROM config_collections WHERE server_id = $1 ORDER BY id DESC LIMIT 1", [serverId]),
    async recentOf(serverId) {
      return (
        await readRows<CollectionRow>(db, "SELECT * FROM config_collections WHERE server_id = $1 ORDER BY id DESC", [
          serverId,
        ])
      ).map(collectionOf);
    },
    latestCompletedOf: (serverId) =>
      one("SELECT * FROM config_collections WHERE server_id = $1 AND status = 'completed' ORDER BY id DESC LIMIT 1", [
        serverId,
      ]),
    async complete(id, endedAt, results, roleIds) {
      const { drifted, unknown } = countsOf(results);
      await inTransaction(db, async (client) => {
        if (results.length > 0) {
          // One INSERT for all the items, positions from 0 in the results' order.
          await client.query(
            `INSERT INTO config_collected_items (collection_id, position, type, key, role_id, role_name, status,
               differences, error_text)
             SELECT $1::bigint, i.position - 1, i.type, i.key, i.role_id, i.role_name, i.status, i.differences, i.error_text
               FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[])
                    WITH ORDINALITY AS i(type, key, role_id, role_name, status, differences, error_text, position)
              ORDER BY i.position`,
            [
              id,
              results.map((result) => result.type),
              results.map((result) => result.key),
              results.map((result) => resultRoleId(result, roleIds)),
              results.map((result) => result.role),
              results.map((result) => result.status),
              results.map((result) => JSON.stringify(result.differences)),
              results.map((result) => result.error ?? null),
            ],
          );
        }
        await client.query(
          `UPDATE config_collections SET status = 'completed', ended_at = $1, items = $2, drifted = $3, unknown = $4
           WHERE id = $5 AND status = 'executing'`,
          [endedAt, results.length, drifted, unknown, id],
        );
      });
    },
    async fail(id, endedAt, errorText) {
      await writeRows(
        db,
        "UPDATE config_collections SET status = 'error', ended_at = $1, error_text = $2 WHERE id = $3 AND status = 'executing'",
        [endedAt, errorText, id],
      );
    },
    async items(collectionId) {
      return (
        await readRows<CollectedItemRow>(
          db,
          `SELECT type, key, role_id, role_name, status, differences, error_text FROM config_collected_items
           WHERE collection_id = $1 ORDER BY position`,
          [collectionId],
        )
      ).map(collectedItemOf);
    },
    async prune(serverId, keep) {
      // Executing ones are never pruned: their check is still writing.
      await writeRows(
        db,
        `DELETE FROM config_collections WHERE server_id = $1 AND status <> 'executing' AND id NOT IN
         (SELECT id FROM config_collections WHERE server_id = $1 ORDER BY id DESC LIMIT $2)`,
        [serverId, keep],
      );
    },
    async endExecuting(endedAt, errorText) {
      const ended = await writeRows(
        db,
        "UPDATE config_collections SET status = 'error', ended_at = $1, error_text = $2 WHERE status = 'executing'",
        [endedAt, errorText],
      );
      return ended.rowCount ?? 0;
    },
  };
}
