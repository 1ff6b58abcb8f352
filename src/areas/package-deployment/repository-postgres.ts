import { appendPackageEvent } from "../../lifecycle/events-postgres.js";
import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import {
  DEPLOYMENT_COLUMNS,
  deployedEvent,
  deploymentCountKey,
  type DeploymentRow,
  fromRow,
  type PackageDeploymentRepository,
} from "./repository.js";

type CountRow = { group_key: string; name_key: string; version_key: string; n: number };

/** PackageDeploymentRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresPackageDeploymentRepository(db: PostgresDb): PackageDeploymentRepository {
  return {
    // An ordinary (not quiet) write: cached version listings show each version's count. Two
    // inserts, no read: nothing for a concurrent writer to invalidate.
    insert: async (record, actor) =>
      inTransaction(db, async (client) => {
        const inserted = await client.query<{ id: number }>(
          `INSERT INTO package_deployments (feed_id, group_name, name, version, group_key, name_key, version_key,
             application, description, target, user_name, url, deployed_at, recorded_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
           RETURNING id`,
          [
            record.feedId,
            record.groupName,
            record.packageName,
            record.version,
            record.groupName.toLowerCase(),
            record.packageName.toLowerCase(),
            record.version.toLowerCase(),
            record.application,
            record.description,
            record.target,
            record.userName ?? null,
            record.url ?? null,
            record.deployedAt,
            record.recordedAt,
          ],
        );
        const row = inserted.rows[0];
        if (!row) throw new Error("package_deployments insert returned no id");
        // In this transaction: the record and its package.deployed event commit together.
        await appendPackageEvent(client, deployedEvent(record, actor));
        return { ...record, id: row.id };
      }),
    async countsByVersion(feedId, only) {
      // Grouped by all three keys (PostgreSQL has no bare columns; the WHERE fixes two of them) and
      // ordered as SQLite's GROUP BY over its index gives them, so the Map's order is the same.
      const rows =
        only === undefined
          ? await readRows<CountRow>(
              db,
              `SELECT group_key, name_key, version_key, count(*) AS n FROM package_deployments WHERE feed_id = $1
               GROUP BY group_key, name_key, version_key ORDER BY group_key, name_key, version_key`,
              [feedId],
            )
          : await readRows<CountRow>(
              db,
              `SELECT group_key, name_key, version_key, count(*) AS n FROM package_deployments
               WHERE feed_id = $1 AND group_key = $2 AND name_key = $3
               GROUP BY group_key, name_key, version_key ORDER BY version_key`,
              [feedId, only.groupKey, only.nameKey],
            );
      return new Map(rows.map((row) => [deploymentCountKey(row.group_key, row.name_key, row.version_key), row.n]));
    },
    async list({ feedId, groupName, packageName, version, limit }) {
      const groupKey = groupName.toLowerCase();
      const nameKey = packageName.toLowerCase();
      const rows =
        version === undefined
          ? await readRows<DeploymentRow>(
              db,
              `SELECT ${DEPLOYMENT_COLUMNS} FROM package_deployments WHERE feed_id = $1 AND group_key = $2 AND name_key = $3
               ORDER BY deployed_at DESC, id DESC LIMIT $4`,
              [feedId, groupKey, nameKey, limit],
            )
          : await readRows<DeploymentRow>(
              db,
              `SELECT ${DEPLOYMENT_COLUMNS} FROM package_deployments
               WHERE feed_id = $1 AND group_key = $2 AND name_key = $3 AND version_key = $4
               ORDER BY deployed_at DESC, id DESC LIMIT $5`,
              [feedId, groupKey, nameKey, version.toLowerCase(), limit],
            );
      return rows.map(fromRow);
    },
  };
}
