import type { Db } from "../../storage/database.js";
import { OPEN_SQL, type OpenRemediation, type OpenRow, toOpen } from "./remediation-repository.js";

/**
 * The reads of the configuration status (status.ts): every server with its last check's counts,
 * the open remediation jobs, the roles, environments and their memberships, and the drifted items
 * per role of the last checks that found drift; a handful of statements over all servers, so that
 * the status of a thousand servers stays cheap. Asynchronous (PostgreSQL in cluster mode:
 * status-repository-postgres.ts); on SQLite the same statements run synchronously inside each
 * method.
 */
export interface StatusServerRow {
  id: number;
  name: string;
  server_type: string;
  drift_mode: string;
  active: number;
  agent_last_seen_at: string | null;
  collection_id: number | null;
  collection_status: "executing" | "completed" | "error" | null;
  started_at: string | null;
  error_text: string | null;
  drifted: number | null;
}

export interface NamedRow {
  id: number;
  name: string;
}

export interface Memberships {
  readonly serverRoles: readonly { server_id: number; role_id: number }[];
  readonly dependencies: readonly { role_id: number; depends_on_id: number }[];
}

export interface StatusFacts extends Memberships {
  /** By name_key. */
  readonly servers: readonly StatusServerRow[];
  readonly open: readonly OpenRemediation[];
  /** Drifted items per role in each server's last check, when that check completed with drift. */
  readonly roleDrift: readonly { collection_id: number; role_id: number; drifted: number }[];
  readonly environmentMembers: readonly { server_id: number; environment_id: number }[];
  /** By name_key. */
  readonly roles: readonly NamedRow[];
  /** By name_key. */
  readonly environments: readonly NamedRow[];
}

export interface StatusRepository {
  facts(): Promise<StatusFacts>;
  server(id: number): Promise<StatusServerRow | undefined>;
  memberships(): Promise<Memberships>;
}

export const SERVER_SQL = `SELECT s.id, s.name, s.server_type, s.drift_mode, s.active, s.agent_last_seen_at,
    c.id AS collection_id, c.status AS collection_status, c.started_at, c.error_text, c.drifted
  FROM servers s LEFT JOIN config_collections c
    ON c.id = (SELECT max(id) FROM config_collections WHERE server_id = s.id)`;

/** The collections whose drift per role the status needs: each server's last, when completed with drift. */
export function driftedCollections(servers: readonly StatusServerRow[]): number[] {
  const ids: number[] = [];
  for (const row of servers) {
    if (row.collection_status === "completed" && (row.drifted ?? 0) > 0 && row.collection_id !== null) {
      ids.push(row.collection_id);
    }
  }
  return ids;
}

export function createStatusRepository(db: Db): StatusRepository {
  const q = {
    all: db.prepare<[], StatusServerRow>(`${SERVER_SQL} ORDER BY s.name_key`),
    one: db.prepare<[number], StatusServerRow>(`${SERVER_SQL} WHERE s.id = ?`),
    open: db.prepare<[], OpenRow>(`${OPEN_SQL} ORDER BY at, t.job_id`),
    roles: db.prepare<[], NamedRow>("SELECT id, name FROM roles ORDER BY name_key"),
    environments: db.prepare<[], NamedRow>("SELECT id, name FROM environments ORDER BY name_key"),
    serverRoles: db.prepare<[], { server_id: number; role_id: number }>("SELECT server_id, role_id FROM server_roles"),
    dependencies: db.prepare<[], { role_id: number; depends_on_id: number }>(
      "SELECT role_id, depends_on_id FROM role_dependencies",
    ),
    environmentMembers: db.prepare<[], { server_id: number; environment_id: number }>(
      "SELECT server_id, environment_id FROM server_environments",
    ),
    // Drifted items per role in the given collections (the last checks that found drift).
    roleDrift: db.prepare<[string], { collection_id: number; role_id: number; drifted: number }>(
      `SELECT collection_id, role_id, count(*) AS drifted FROM config_collected_items
        WHERE collection_id IN (SELECT value FROM json_each(?)) AND status = 'drifted' AND role_id IS NOT NULL
        GROUP BY collection_id, role_id`,
    ),
  };
  const readMemberships = (): Memberships => ({ dependencies: q.dependencies.all(), serverRoles: q.serverRoles.all() });
  const readFacts = (): StatusFacts => {
    const servers = q.all.all();
    return {
      servers,
      open: q.open.all().map(toOpen),
      roleDrift: q.roleDrift.all(JSON.stringify(driftedCollections(servers))),
      environmentMembers: q.environmentMembers.all(),
      ...readMemberships(),
      roles: q.roles.all(),
      environments: q.environments.all(),
    };
  };
  return {
    facts: async () => readFacts(),
    server: async (id) => q.one.get(id),
    memberships: async () => readMemberships(),
  };
}
