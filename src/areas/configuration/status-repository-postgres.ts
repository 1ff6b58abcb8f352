import type pg from "pg";
import { inSnapshot, type PostgresDb } from "../../storage/postgres/database.js";
import { OPEN_SQL, type OpenRow, toOpen } from "./remediation-repository.js";
import {
  driftedCollections,
  type Memberships,
  type NamedRow,
  SERVER_SQL,
  type StatusFacts,
  type StatusRepository,
  type StatusServerRow,
} from "./status-repository.js";

/**
 * StatusRepository on PostgreSQL (cluster mode): the same statements as on SQLite, read in one
 * READ ONLY REPEATABLE READ transaction so that the servers, their checks, the jobs and the
 * memberships are one moment's (another node may be writing any of them). Reads only: no lock, no
 * notification (this node's cache version stays where it is).
 */
export function createPostgresStatusRepository(db: PostgresDb): StatusRepository {
  const snapshot = <T>(read: (client: pg.PoolClient) => Promise<T>) => inSnapshot(db, read);

  const rows = async <Row extends pg.QueryResultRow>(client: pg.PoolClient, sql: string, params: unknown[] = []) =>
    (await client.query<Row>(sql, params)).rows;
  const memberships = async (client: pg.PoolClient): Promise<Memberships> => ({
    dependencies: await rows<{ role_id: number; depends_on_id: number }>(
      client,
      "SELECT role_id, depends_on_id FROM role_dependencies",
    ),
    serverRoles: await rows<{ server_id: number; role_id: number }>(
      client,
      "SELECT server_id, role_id FROM server_roles",
    ),
  });

  return {
    facts: () =>
      snapshot(async (client): Promise<StatusFacts> => {
        const servers = await rows<StatusServerRow>(client, `${SERVER_SQL} ORDER BY s.name_key`);
        return {
          servers,
          open: (await rows<OpenRow>(client, `${OPEN_SQL} ORDER BY at, t.job_id`)).map(toOpen),
          roleDrift: await rows<{ collection_id: number; role_id: number; drifted: number }>(
            client,
            `SELECT collection_id, role_id, count(*) AS drifted FROM config_collected_items
              WHERE collection_id = ANY($1::bigint[]) AND status = 'drifted' AND role_id IS NOT NULL
              GROUP BY collection_id, role_id`,
            [driftedCollections(servers)],
          ),
          environmentMembers: await rows<{ server_id: number; environment_id: number }>(
            client,
            "SELECT server_id, environment_id FROM server_environments",
          ),
          ...(await memberships(client)),
          roles: await rows<NamedRow>(client, "SELECT id, name FROM roles ORDER BY name_key"),
          environments: await rows<NamedRow>(client, "SELECT id, name FROM environments ORDER BY name_key"),
        };
      }),
    async server(id) {
      return (await db.pool.query<StatusServerRow>(`${SERVER_SQL} WHERE s.id = $1`, [id])).rows[0];
    },
    memberships: () => snapshot(memberships),
  };
}
