import type { DesiredItem } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { decodeItem } from "./item-codec.js";
import type { ServerTarget } from "./transport.js";
import { openVariable, readVariableColumn, type Variables } from "./variables-model.js";

/**
 * Read-only SQL over servers, roles and environments (migration 0011, environments of 0008) for
 * the runtime: checks, remediation, status and the agent protocol. Asynchronous (PostgreSQL in
 * cluster mode: infrastructure-repository-postgres.ts); on SQLite each method is still one
 * synchronous statement (WAL: reads never wait for a lock). Names match case-insensitively; `{ id, name }` gives
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
  findServer(name: string): Promise<EntityRef | undefined>;
  findRole(name: string): Promise<EntityRef | undefined>;
  findEnvironment(name: string): Promise<EntityRef | undefined>;
  /** Every server, by name. */
  listServers(): Promise<ServerSummary[]>;
  /** One server by id; undefined when it was deleted. */
  getServer(id: number): Promise<ServerSummary | undefined>;
  /** The agent server whose current key hashes to `agentKeyHash` (hashApiKey); undefined when none (revoked). */
  findServerByAgentKeyHash(agentKeyHash: string): Promise<ServerSummary | undefined>;
  /** A server's roles in the order it lists them. */
  serverRoles(serverId: number): Promise<EntityRef[]>;
  serverEnvironments(serverId: number): Promise<EntityRef[]>;
  /** The roles `roleId` depends on directly, by name. */
  roleDependencies(roleId: number): Promise<EntityRef[]>;
  /** Servers that list the role (directly), by name. */
  roleServers(roleId: number): Promise<EntityRef[]>;
  environmentServers(environmentId: number): Promise<EntityRef[]>;
  /** Items of a role in their order, sensitive content opened (never answer it). */
  roleItems(roleId: number): Promise<DesiredItem[]>;
  /** A server's own items (role null) in their order, sensitive content opened. */
  serverItems(serverId: number): Promise<DesiredItem[]>;
  /** Variables as stored, sensitive values included (for templates only; never answer them). */
  serverVariables(serverId: number): Promise<Variables>;
  roleVariables(roleId: number): Promise<Variables>;
  environmentVariables(environmentId: number): Promise<Variables>;
  globalVariables(): Promise<Variables>;
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

export interface ItemRow {
  definition: string;
  role_name: string | null;
}

export interface GlobalVariableRow {
  name: string;
  value: string;
  sensitive: number;
}

/** Global variables by name, sensitive values opened (both databases). */
export function globalVariablesOf(rows: readonly GlobalVariableRow[], secrets: SecretBox): Variables {
  return new Map(
    rows.map((row) => {
      const sensitive = row.sensitive === 1;
      return [row.name, { value: sensitive ? openVariable(row.value, secrets) : row.value, sensitive }];
    }),
  );
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
    globalVariables: db.prepare<[], GlobalVariableRow>(
      "SELECT name, value, sensitive FROM global_variables ORDER BY name_key",
    ),
  };
  const items = (rows: ItemRow[]) => rows.map((row) => decodeItem(row.definition, row.role_name, secrets));
  const column = (row: { variables: string } | undefined) => readVariableColumn(row?.variables ?? "{}", secrets);

  return {
    findServer: async (name) => q.server.get(key(name)),
    findRole: async (name) => q.role.get(key(name)),
    findEnvironment: async (name) => q.environment.get(key(name)),
    listServers: async () => q.servers.all().map(toServerSummary),
    async getServer(id) {
      const row = q.serverById.get(id);
      return row && toServerSummary(row);
    },
    async findServerByAgentKeyHash(agentKeyHash) {
      const row = q.serverByAgentKey.get(agentKeyHash);
      return row && toServerSummary(row);
    },
    serverRoles: async (serverId) => q.serverRoles.all(serverId),
    serverEnvironments: async (serverId) => q.serverEnvironments.all(serverId),
    roleDependencies: async (roleId) => q.roleDependencies.all(roleId),
    roleServers: async (roleId) => q.roleServers.all(roleId),
    environmentServers: async (environmentId) => q.environmentServers.all(environmentId),
    roleItems: async (roleId) => items(q.roleItems.all(roleId)),
    serverItems: async (serverId) => items(q.serverItems.all(serverId)),
    serverVariables: async (serverId) => column(q.serverVariables.get(serverId)),
    roleVariables: async (roleId) => column(q.roleVariables.get(roleId)),
    environmentVariables: async (environmentId) => column(q.environmentVariables.get(environmentId)),
    globalVariables: async () => globalVariablesOf(q.globalVariables.all(), secrets),
  };
}
