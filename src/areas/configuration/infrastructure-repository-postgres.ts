import { type PostgresDb, readRows } from "../../storage/postgres/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import {
  type EntityRef,
  type GlobalVariableRow,
  globalVariablesOf,
  type InfrastructureRepository,
  type ItemRow,
  type ServerRow,
  toServerSummary,
} from "./infrastructure-repository.js";
import { decodeItem } from "./item-codec.js";
import { readVariableColumn } from "./variables-model.js";

const key = (name: string) => name.toLowerCase();

/**
 * InfrastructureRepository on PostgreSQL (cluster mode): the same read-only statements as on
 * SQLite, one each, in no transaction (nothing here writes). Text columns are COLLATE "C", so
 * `ORDER BY name_key` sorts as SQLite's BINARY does.
 */
export function createPostgresInfrastructureRepository(db: PostgresDb, secrets: SecretBox): InfrastructureRepository {
  const refs = async (sql: string, params: readonly unknown[]) => readRows<EntityRef & { id: number }>(db, sql, params);
  const ref = async (table: "servers" | "roles" | "environments", name: string) =>
    (await refs(`SELECT id, name FROM ${table} WHERE name_key = $1`, [key(name)]))[0];
  const server = async (sql: string, params: readonly unknown[]) => {
    const [row] = await readRows<ServerRow>(db, sql, params);
    return row && toServerSummary(row);
  };
  const items = async (sql: string, id: number) =>
    (await readRows<ItemRow>(db, sql, [id])).map((row) => decodeItem(row.definition, row.role_name, secrets));
  const column = async (table: "servers" | "roles" | "environments", id: number) => {
    const [row] = await readRows<{ variables: string }>(db, `SELECT variables FROM ${table} WHERE id = $1`, [id]);
    return readVariableColumn(row?.variables ?? "{}", secrets);
  };

  return {
    findServer: (name) => ref("servers", name),
    findRole: (name) => ref("roles", name),
    findEnvironment: (name) => ref("environments", name),
    async listServers() {
      return (await readRows<ServerRow>(db, "SELECT * FROM servers ORDER BY name_key")).map(toServerSummary);
    },
    getServer: (id) => server("SELECT * FROM servers WHERE id = $1", [id]),
    findServerByAgentKeyHash: (agentKeyHash) =>
      server("SELECT * FROM servers WHERE agent_key_hash = $1 AND server_type = 'agent'", [agentKeyHash]),
    serverRoles: (serverId) =>
      refs(
        "SELECT r.id, r.name FROM server_roles sr JOIN roles r ON r.id = sr.role_id WHERE sr.server_id = $1 ORDER BY sr.position",
        [serverId],
      ),
    serverEnvironments: (serverId) =>
      refs(
        `SELECT e.id, e.name FROM server_environments se JOIN environments e ON e.id = se.environment_id
         WHERE se.server_id = $1 ORDER BY e.name_key`,
        [serverId],
      ),
    roleDependencies: (roleId) =>
      refs(
        `SELECT r.id, r.name FROM role_dependencies d JOIN roles r ON r.id = d.depends_on_id
         WHERE d.role_id = $1 ORDER BY r.name_key`,
        [roleId],
      ),
    roleServers: (roleId) =>
      refs(
        "SELECT s.id, s.name FROM server_roles sr JOIN servers s ON s.id = sr.server_id WHERE sr.role_id = $1 ORDER BY s.name_key",
        [roleId],
      ),
    environmentServers: (environmentId) =>
      refs(
        `SELECT s.id, s.name FROM server_environments se JOIN servers s ON s.id = se.server_id
         WHERE se.environment_id = $1 ORDER BY s.name_key`,
        [environmentId],
      ),
    roleItems: (roleId) =>
      items(
        `SELECT i.definition, r.name AS role_name FROM config_items i JOIN roles r ON r.id = i.role_id
         WHERE i.role_id = $1 ORDER BY i.position`,
        roleId,
      ),
    serverItems: (serverId) =>
      items("SELECT definition, NULL AS role_name FROM config_items WHERE server_id = $1 ORDER BY position", serverId),
    serverVariables: (serverId) => column("servers", serverId),
    roleVariables: (roleId) => column("roles", roleId),
    environmentVariables: (environmentId) => column("environments", environmentId),
    async globalVariables() {
      return globalVariablesOf(
        await readRows<GlobalVariableRow>(db, "SELECT name, value, sensitive FROM global_variables ORDER BY name_key"),
        secrets,
      );
    },
  };
}
