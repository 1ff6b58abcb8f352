import { NODE_GONE_AFTER_MS } from "../../storage/postgres/cluster-nodes.js";
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
 * rule) stays as that node left it, without the items its late check found.
 *
 * Each collection records the node that began it (config_collection_nodes, migrations/postgres/
 * 0007), so that the restart rule, which the leading node runs at takeover and then every few
 * seconds (checker.ts), ends only the checks of nodes that are gone: those whose cluster_nodes row
 * is missing (the node stopped, or was killed before it registered) or has no heartbeat within
 * NODE_GONE_AFTER_MS, and those that record no node (imported, or begun before 0007).
 */

/**
 * Executing collections begun neither by the node asking ($3: it runs, so it is alive, whatever
 * its heartbeat says) nor by a node with a heartbeat within $4 milliseconds, by the database's clock.
 * A node taken for gone that comes back finds its check ended; its late ending changes nothing.
 */
const END_ORPHANED = `
  UPDATE config_collections c SET status = 'error', ended_at = $1, error_text = $2
   WHERE c.status = 'executing'
     AND NOT EXISTS (
       SELECT 1 FROM config_collection_nodes runs
         LEFT JOIN cluster_nodes node ON node.node_id = runs.node_id
        WHERE runs.collection_id = c.id
          AND (runs.node_id = $3 OR node.last_heartbeat_at > now() - make_interval(secs => $4::float8 / 1000)))`;

/** `nodeId`: this node's cluster_nodes.node_id, recorded with each collection it begins. */
export function createPostgresCollectionsRepository(db: PostgresDb, nodeId: string): CollectionsRepository {
  const one = async (sql: string, params: readonly unknown[]) => {
    const [row] = await readRows<CollectionRow>(db, sql, params);
    return row && collectionOf(row);
  };

  return {
    async begin(serverId, jobId, startedAt) {
      try {
        // One statement: the rule never sees the collection without its node.
        const inserted = await writeRows<{ id: number }>(
          db,
          `WITH begun AS (
             INSERT INTO config_collections (server_id, job_id, status, started_at)
             VALUES ($1, $2, 'executing', $3) RETURNING id)
           INSERT INTO config_collection_nodes (collection_id, node_id) SELECT id, $4 FROM begun
           RETURNING collection_id AS id`,
          [serverId, jobId ?? null, startedAt, nodeId],
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
        // First, so that the row is locked: the restart rule cannot end it between the two statements.
        const ended = await client.query(
          `UPDATE config_collections SET status = 'completed', ended_at = $1, items = $2, drifted = $3, unknown = $4
           WHERE id = $5 AND status = 'executing'`,
          [endedAt, results.length, drifted, unknown, id],
        );
        if (!ended.rowCount) return;
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
    async endOrphaned(endedAt, errorText) {
      // Not writeRows: the leader runs this every few seconds, and a run that ends nothing must not
      // move this node's cache version (no row changed: no other node is notified either).
      let ended = 0;
      try {
        ended = (await db.pool.query(END_ORPHANED, [endedAt, errorText, nodeId, NODE_GONE_AFTER_MS])).rowCount ?? 0;
      } catch (error) {
        db.committed(); // whether it committed is unknown, as writeRows says
        throw error;
      }
      if (ended > 0) db.committed();
      return ended;
    },
  };
}
