import type { DesiredItem } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { decodeItem } from "./item-codec.js";
import type { ServerTarget } from "./transport.js";
import { openVariable, readVariableColumn, type Variables } from "./variables-model.js";

/**
 * Read-only SQL over servers, roles and environments (migration 0011, environments of 0008) for
 * the runtime: checks, remediation, status and the agent protocol. Synchronous: reads never wait
 * for a lock (WAL) and each is one statement. Names match case-insensitively; `{ id, name }` gives
 * the name as stored. The writes are the services' (servers-service.ts, roles-service.ts,
 * variables-service.ts).
 */
export interface EntityRef {
  readonly id: number;
  readonly name: string;
}

export type DriftMode = "none" | "reportOnly" | "automaticallyRemediate";

/** A server as the runtime schedules it. */
export interface ServerSummary extends ServerTarget {
  readonly active: boolean;
  readonly driftMode: DriftMode;
  /** agent servers: when the agent last polled (ISO), undefined when never. */
  readonly agentLastSeenAt: string | undefined;
}

export interface InfrastructureRepository {
  findServer(name: string): EntityRef | undefined;
  findRole(name: string): EntityRef | undefined;
  findEnvironment(name: string): EntityRef | undefined;
  /** Every server, by name. */
  listServers(): ServerSummary[];
  /** One server by id; undefined when it was deleted. */
  getServer(id: number): ServerSummary | undefined;
  /** The agent server whose current key hashes to `agentKeyHash` (hashApiKey); undefined when none (revoked). */
  findServerByAgentKeyHash(agentKeyHash: string): ServerSummary | undefined;
  /** A server's roles in the order it lists them. */
  serverRoles(serverId: number): EntityRef[];
  serverEnvironments(serverId: number): EntityRef[];
  /** The roles `roleId` depends on directly, by name. */
  roleDependencies(roleId: number): EntityRef[];
  /** Servers that list the role (directly), by name. */
  roleServers(roleId: number): EntityRef[];
  environmentServers(environmentId: number): EntityRef[];
  /** Items of a role in their order, sensitive content opened (never answer it). */
  roleItems(roleId: number): DesiredItem[];
  /** A server's own items (role null) in their order, sensitive content opened. */
  serverItems(serverId: number): DesiredItem[];
  /** Variables as stored, sensitive values included (for templates only; never answer them). */
  serverVariables(serverId: number): Variables;
  roleVariables(roleId: number): Variables;
  environmentVariables(environmentId: number): Variables;
  globalVariables(): Variables;
}

export interface ServerRow {
  id: number;
  name: string;
  server_type: ServerTarget["type"];
  drift_mode: DriftMode;
  active: number;
  root_path: string | null;
  host_name: string | null;
  port: number | null;
  credentials_id: number | null;
  host_key_sha256: string | null;
  temp_path: string | null;
  agent_key_hash: string | null;
  agent_key_created_at: string | null;
  agent_last_seen_at: string | null;
  agent_version: string | null;
  variables: string;
  created_at: string;
  modified_at: string;
}

export function toServerSummary(row: ServerRow): ServerSummary {
  return {
    id: row.id,
    name: row.name,
    type: row.server_type,
    rootPath: row.root_path ?? undefined,
    hostName: row.host_name ?? undefined,
    port: row.port ?? undefined,
    credentialsId: row.credentials_id ?? undefined,
    hostKeySha256: row.host_key_sha256 ?? undefined,
    active: row.active === 1,
    driftMode: row.drift_mode,
    agentLastSeenAt: row.agent_last_seen_at ?? undefined,
  };
}

interface ItemRow {
  definition: string;
  role_name: string | null;
}

const key = (name: string) => name.toLowerCase();

export function createInfrastructureRepository(db: Db, secrets: SecretBox): InfrastructureRepository {
  const ref = (table: "servers" | "roles" | "environments") =>
    db.prepare<[string], EntityRef>(`SELECT id, name FROM ${table} WHERE name_key = ?`);
  const q = {
    server: ref("servers"),
    role: ref("roles"),
    environment: ref("environments"),
    servers: db.prepare<[], ServerRow>("SELECT * FROM servers ORDER BY name_key"),
    serverById: db.prepare<[number], ServerRow>("SELECT * FROM servers WHERE id = ?"),
    serverByAgentKey: db.prepare<[string], ServerRow>(
      "SELECT * FROM servers WHERE agent_key_hash = ? AND server_type = 'agent'",
    ),
    serverRoles: db.prepare<[number], EntityRef>(
      "SELECT r.id, r.name FROM server_roles sr JOIN roles r ON r.id = sr.role_id WHERE sr.server_id = ? ORDER BY sr.position",
    ),
    serverEnvironments: db.prepare<[number], EntityRef>(
      `SELECT e.id, e.name FROM server_environments se JOIN environments e ON e.id = se.environment_id
       WHERE se.server_id = ? ORDER BY e.name_key`,
    ),
    roleDependencies: db.prepare<[number], EntityRef>(
      `SELECT r.id, r.name FROM role_dependencies d JOIN roles r ON r.id = d.depends_on_id
       WHERE d.role_id = ? ORDER BY r.name_key`,
    ),
    roleServers: db.prepare<[number], EntityRef>(
      "SELECT s.id, s.name FROM server_roles sr JOIN servers s ON s.id = sr.server_id WHERE sr.role_id = ? ORDER BY s.name_key",
    ),
    environmentServers: db.prepare<[number], EntityRef>(
      `SELECT s.id, s.name FROM server_environments se JOIN servers s ON s.id = se.server_id
       WHERE se.environment_id = ? ORDER BY s.name_key`,
    ),
    roleItems: db.prepare<[number], ItemRow>(
      `SELECT i.definition, r.name AS role_name FROM config_items i JOIN roles r ON r.id = i.role_id
       WHERE i.role_id = ? ORDER BY i.position`,
    ),
    serverItems: db.prepare<[number], ItemRow>(
      "SELECT definition, NULL AS role_name FROM config_items WHERE server_id = ? ORDER BY position",
    ),
    serverVariables: db.prepare<[number], { variables: string }>("SELECT variables FROM servers WHERE id = ?"),
    roleVariables: db.prepare<[number], { variables: string }>("SELECT variables FROM roles WHERE id = ?"),
    environmentVariables: db.prepare<[number], { variables: string }>(
      "SELECT variables FROM environments WHERE id = ?",
    ),
    globalVariables: db.prepare<[], { name: string; value: string; sensitive: number }>(
      "SELECT name, value, sensitive FROM global_variables ORDER BY name_key",
    ),
  };
  const items = (rows: ItemRow[]) => rows.map((row) => decodeItem(row.definition, row.role_name, secrets));
  const column = (row: { variables: string } | undefined) => readVariableColumn(row?.variables ?? "{}", secrets);

  return {
    findServer: (name) => q.server.get(key(name)),
    findRole: (name) => q.role.get(key(name)),
    findEnvironment: (name) => q.environment.get(key(name)),
    listServers: () => q.servers.all().map(toServerSummary),
    getServer(id) {
      const row = q.serverById.get(id);
      return row && toServerSummary(row);
    },
    findServerByAgentKeyHash(agentKeyHash) {
      const row = q.serverByAgentKey.get(agentKeyHash);
      return row && toServerSummary(row);
    },
    serverRoles: (serverId) => q.serverRoles.all(serverId),
    serverEnvironments: (serverId) => q.serverEnvironments.all(serverId),
    roleDependencies: (roleId) => q.roleDependencies.all(roleId),
    roleServers: (roleId) => q.roleServers.all(roleId),
    environmentServers: (environmentId) => q.environmentServers.all(environmentId),
    roleItems: (roleId) => items(q.roleItems.all(roleId)),
    serverItems: (serverId) => items(q.serverItems.all(serverId)),
    serverVariables: (serverId) => column(q.serverVariables.get(serverId)),
    roleVariables: (roleId) => column(q.roleVariables.get(roleId)),
    environmentVariables: (environmentId) => column(q.environmentVariables.get(environmentId)),
    globalVariables: () =>
      new Map(
        q.globalVariables.all().map((row) => {
          const sensitive = row.sensitive === 1;
          return [row.name, { value: sensitive ? openVariable(row.value, secrets) : row.value, sensitive }];
        }),
      ),
  };
}
