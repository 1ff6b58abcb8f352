import { conflict, DomainError, notFound } from "../../domain/errors.js";
import type { DesiredItem } from "../../drift/model.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import type { DriftMode, ServerRow } from "./infrastructure-repository.js";
import { decodeItem, itemReplacer } from "./item-codec.js";
import type { ServerTarget } from "./transport.js";
import { readVariableColumn, type Variables, writeVariableColumn } from "./variables-model.js";

/**
 * SQL writes and whole-record reads of servers (migration 0011): the row, its roles (in order),
 * environments, own items and credential name. Every method is one transaction.
 */
export interface ServerRecord {
  readonly row: ServerRow;
  readonly roles: readonly string[];
  readonly environments: readonly string[];
  readonly items: readonly DesiredItem[];
  readonly credentialsName: string | undefined;
  readonly variables: Variables;
}

/** A server as it is saved: every column decided by the service. */
export interface ServerWrite {
  readonly name: string;
  readonly type: ServerTarget["type"];
  readonly driftMode: DriftMode;
  readonly active: boolean;
  readonly rootPath: string | null;
  readonly hostName: string | null;
  readonly port: number | null;
  readonly credentialsId: number | null;
  readonly hostKeySha256: string | null;
  readonly tempPath: string | null;
  readonly variables: Variables;
  readonly roleIds: readonly number[];
  readonly environmentIds: readonly number[];
  /** Replaces the server's own items; undefined keeps them. */
  readonly items: readonly DesiredItem[] | undefined;
  /** A new agent key's hash; null drops the key (not an agent any more); undefined keeps it. */
  readonly agentKeyHash?: string | null;
}

export interface ServersRepository {
  list(): Promise<ServerRecord[]>;
  find(name: string): Promise<ServerRecord | undefined>;
  /** conflict SERVER_EXISTS when the name is taken. */
  insert(write: ServerWrite, now: string): Promise<ServerRecord>;
  /** conflict SERVER_EXISTS when the new name is taken; not_found when the server was deleted meanwhile. */
  update(id: number, write: ServerWrite, now: string): Promise<ServerRecord>;
  delete(name: string): Promise<boolean>;
  /** Sets (a hash) or revokes (null) an agent server's key; false when no agent server has that name. */
  setAgentKey(name: string, agentKeyHash: string | null, now: string): Promise<boolean>;
  /** A stored credential by name (the ssh helper's table; read here for the reference only). */
  findCredential(name: string): Promise<{ id: number; name: string } | undefined>;
}

const key = (name: string) => name.toLowerCase();

/** The columns of a saved server but its agent key, as the service decided them (both databases). */
export function serverColumns(write: ServerWrite, now: string, secrets: SecretBox) {
  return {
    name: write.name,
    nameKey: key(write.name),
    type: write.type,
    driftMode: write.driftMode,
    active: write.active ? 1 : 0,
    rootPath: write.rootPath,
    hostName: write.hostName,
    port: write.port,
    credentialsId: write.credentialsId,
    hostKeySha256: write.hostKeySha256,
    tempPath: write.tempPath,
    variables: writeVariableColumn(write.variables, secrets),
    now,
  };
}

/** not_found SERVER_NOT_FOUND: the server being updated was deleted meanwhile (both databases). */
export const serverNotFound = (name: string) => notFound("SERVER_NOT_FOUND", `The server '${name}' was not found.`);

/** Why saving the server `name` failed, as the API says it (both databases). */
export function serverWriteFailure(name: string, error: unknown): unknown {
  if (isUniqueViolation(error)) {
    return conflict("SERVER_EXISTS", `A server named '${name}' already exists.`, { cause: error });
  }
  if (isForeignKeyViolation(error)) {
    // A role, environment or credential named in the request was deleted while it was saved.
    return new DomainError(
      "unprocessable",
      "REFERENCE_GONE",
      "A role, environment or credential named was deleted meanwhile; try again.",
      { cause: error },
    );
  }
  return error;
}

export function createServersRepository(db: Db, secrets: SecretBox): ServersRepository {
  const replaceItems = itemReplacer(db, "server_id", secrets);
  const q = {
    all: db.prepare<[], ServerRow>("SELECT * FROM servers ORDER BY name_key"),
    byName: db.prepare<[string], ServerRow>("SELECT * FROM servers WHERE name_key = ?"),
    byId: db.prepare<[number], ServerRow>("SELECT * FROM servers WHERE id = ?"),
    roles: db.prepare<[number], { name: string }>(
      "SELECT r.name FROM server_roles sr JOIN roles r ON r.id = sr.role_id WHERE sr.server_id = ? ORDER BY sr.position",
    ),
    environments: db.prepare<[number], { name: string }>(
      `SELECT e.name FROM server_environments se JOIN environments e ON e.id = se.environment_id
       WHERE se.server_id = ? ORDER BY e.name_key`,
    ),
    items: db.prepare<[number], { definition: string }>(
      "SELECT definition FROM config_items WHERE server_id = ? ORDER BY position",
    ),
    credentialName: db.prepare<[number], { name: string }>("SELECT name FROM credentials WHERE id = ?"),
    credentialByName: db.prepare<[string], { id: number; name: string }>(
      "SELECT id, name FROM credentials WHERE name_key = ?",
    ),
    insert: db.prepare(
      `INSERT INTO servers (name, name_key, server_type, drift_mode, active, root_path, host_name, port, credentials_id,
         host_key_sha256, temp_path, agent_key_hash, agent_key_created_at, variables, created_at, modified_at)
       VALUES (@name, @nameKey, @type, @driftMode, @active, @rootPath, @hostName, @port, @credentialsId,
         @hostKeySha256, @tempPath, @agentKeyHash, @agentKeyCreatedAt, @variables, @now, @now)`,
    ),
    update: db.prepare(
      `UPDATE servers SET name = @name, name_key = @nameKey, server_type = @type, drift_mode = @driftMode, active = @active,
         root_path = @rootPath, host_name = @hostName, port = @port, credentials_id = @credentialsId,
         host_key_sha256 = @hostKeySha256, temp_path = @tempPath, variables = @variables, modified_at = @now
       WHERE id = @id`,
    ),
    setAgentKey: db.prepare<{ id: number; hash: string | null; now: string | null }>(
      "UPDATE servers SET agent_key_hash = @hash, agent_key_created_at = @now WHERE id = @id",
    ),
    setAgentKeyByName: db.prepare<{ nameKey: string; hash: string | null; now: string | null }>(
      "UPDATE servers SET agent_key_hash = @hash, agent_key_created_at = @now WHERE name_key = @nameKey AND server_type = 'agent'",
    ),
    clearRoles: db.prepare<[number]>("DELETE FROM server_roles WHERE server_id = ?"),
    addRole: db.prepare<[number, number, number]>(
      "INSERT INTO server_roles (server_id, role_id, position) VALUES (?, ?, ?)",
    ),
    clearEnvironments: db.prepare<[number]>("DELETE FROM server_environments WHERE server_id = ?"),
    addEnvironment: db.prepare<[number, number]>(
      "INSERT INTO server_environments (server_id, environment_id) VALUES (?, ?)",
    ),
    delete: db.prepare<[string]>("DELETE FROM servers WHERE name_key = ?"),
  };

  const record = (row: ServerRow): ServerRecord => ({
    row,
    roles: q.roles.all(row.id).map((r) => r.name),
    environments: q.environments.all(row.id).map((e) => e.name),
    items: q.items.all(row.id).map((i) => decodeItem(i.definition, null, secrets)),
    credentialsName: row.credentials_id === null ? undefined : q.credentialName.get(row.credentials_id)?.name,
    variables: readVariableColumn(row.variables, secrets),
  });
  const columns = (write: ServerWrite, now: string) => serverColumns(write, now, secrets);
  const writeMembers = (id: number, write: ServerWrite) => {
    q.clearRoles.run(id);
    write.roleIds.forEach((roleId, position) => q.addRole.run(id, roleId, position));
    q.clearEnvironments.run(id);
    for (const environmentId of write.environmentIds) q.addEnvironment.run(id, environmentId);
    if (write.items !== undefined) replaceItems(id, write.items);
  };
  const guarded = <T>(name: string, work: () => T): T => {
    try {
      return work();
    } catch (error) {
      throw serverWriteFailure(name, error);
    }
  };

  return withBusyRetries(db, {
    list: async () => q.all.all().map(record),
    find: async (name) => {
      const row = q.byName.get(key(name));
      return row && record(row);
    },
    insert: async (write, now) =>
      guarded(write.name, () =>
        db.transaction(() => {
          const hash = write.agentKeyHash ?? null;
          const id = Number(
            q.insert.run({ ...columns(write, now), agentKeyHash: hash, agentKeyCreatedAt: hash === null ? null : now })
              .lastInsertRowid,
          );
          writeMembers(id, write);
          return record(q.byId.get(id) as ServerRow);
        })(),
      ),
    update: async (id, write, now) =>
      guarded(write.name, () =>
        db.transaction(() => {
          if (q.update.run({ ...columns(write, now), id }).changes === 0) {
            throw serverNotFound(write.name);
          }
          if (write.agentKeyHash !== undefined) {
            q.setAgentKey.run({ id, hash: write.agentKeyHash, now: write.agentKeyHash === null ? null : now });
          }
          writeMembers(id, write);
          return record(q.byId.get(id) as ServerRow);
        })(),
      ),
    delete: async (name) => q.delete.run(key(name)).changes > 0,
    setAgentKey: async (name, agentKeyHash, now) =>
      q.setAgentKeyByName.run({ nameKey: key(name), hash: agentKeyHash, now: agentKeyHash === null ? null : now })
        .changes > 0,
    findCredential: async (name) => q.credentialByName.get(key(name)),
  });
}
