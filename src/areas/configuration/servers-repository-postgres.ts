import type pg from "pg";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import type { ServerRow } from "./infrastructure-repository.js";
import { decodeItem } from "./item-codec.js";
import { replaceItemsOn } from "./item-codec-postgres.js";
import {
  type ServerRecord,
  type ServersRepository,
  type ServerWrite,
  serverColumns,
  serverNotFound,
  serverWriteFailure,
} from "./servers-repository.js";
import { readVariableColumn } from "./variables-model.js";

/**
 * A server and everything its record shows, in one statement: one snapshot (READ COMMITTED reads
 * each statement in its own), where SQLite reads the row and then its roles, environments, items
 * and credential one by one.
 */
const RECORD_SELECT = `
  SELECT s.*,
         ARRAY(SELECT r.name FROM server_roles sr JOIN roles r ON r.id = sr.role_id
                WHERE sr.server_id = s.id ORDER BY sr.position) AS record_roles,
         ARRAY(SELECT e.name FROM server_environments se JOIN environments e ON e.id = se.environment_id
                WHERE se.server_id = s.id ORDER BY e.name_key) AS record_environments,
         ARRAY(SELECT i.definition FROM config_items i WHERE i.server_id = s.id ORDER BY i.position) AS record_items,
         (SELECT c.name FROM credentials c WHERE c.id = s.credentials_id) AS record_credentials_name
    FROM servers s`;

interface RecordRow extends ServerRow {
  record_roles: string[];
  record_environments: string[];
  record_items: string[];
  record_credentials_name: string | null;
}

const key = (name: string) => name.toLowerCase();

export function createPostgresServersRepository(db: PostgresDb, secrets: SecretBox): ServersRepository {
  const record = ({
    record_roles,
    record_environments,
    record_items,
    record_credentials_name,
    ...row
  }: RecordRow): ServerRecord => ({
    row,
    roles: record_roles,
    environments: record_environments,
    items: record_items.map((definition) => decodeItem(definition, null, secrets)),
    credentialsName: record_credentials_name ?? undefined,
    variables: readVariableColumn(row.variables, secrets),
  });

  const recordById = async (client: pg.PoolClient, id: number) =>
    record((await client.query<RecordRow>(`${RECORD_SELECT} WHERE s.id = $1`, [id])).rows[0] as RecordRow);

  /** Replaces the server's roles (in order), environments and, when given, its own items. */
  const writeMembers = async (client: pg.PoolClient, id: number, write: ServerWrite) => {
    await client.query("DELETE FROM server_roles WHERE server_id = $1", [id]);
    if (write.roleIds.length > 0) {
      await client.query(
        `INSERT INTO server_roles (server_id, role_id, position)
         SELECT $1::bigint, r.role_id, r.position - 1
           FROM unnest($2::bigint[]) WITH ORDINALITY AS r(role_id, position)
          ORDER BY r.position`,
        [id, write.roleIds],
      );
    }
    await client.query("DELETE FROM server_environments WHERE server_id = $1", [id]);
    if (write.environmentIds.length > 0) {
      await client.query(
        `INSERT INTO server_environments (server_id, environment_id)
         SELECT $1::bigint, e.environment_id FROM unnest($2::bigint[]) AS e(environment_id)`,
        [id, write.environmentIds],
      );
    }
    if (write.items !== undefined) await replaceItemsOn(client, "server_id", id, write.items, secrets);
  };

  return {
    async list() {
      return (await readRows<RecordRow>(db, `${RECORD_SELECT} ORDER BY s.name_key`)).map(record);
    },
    async find(name) {
      const [row] = await readRows<RecordRow>(db, `${RECORD_SELECT} WHERE s.name_key = $1`, [key(name)]);
      return row && record(row);
    },
    async insert(write, now) {
      try {
        return await inTransaction(db, async (client) => {
          // A name taken meanwhile by another node fails on servers.name_key's unique index: SERVER_EXISTS.
          const c = serverColumns(write, now, secrets);
          const hash = write.agentKeyHash ?? null;
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO servers (name, name_key, server_type, drift_mode, active, root_path, host_name, port,
               credentials_id, host_key_sha256, temp_path, agent_key_hash, agent_key_created_at, variables, created_at,
               modified_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
             RETURNING id`,
            [
              c.name,
              c.nameKey,
              c.type,
              c.driftMode,
              c.active,
              c.rootPath,
              c.hostName,
              c.port,
              c.credentialsId,
              c.hostKeySha256,
              c.tempPath,
              hash,
              hash === null ? null : now,
              c.variables,
              c.now,
            ],
          );
          const id = (inserted.rows[0] as { id: number }).id;
          await writeMembers(client, id, write);
          return recordById(client, id);
        });
      } catch (error) {
        throw serverWriteFailure(write.name, error);
      }
    },
    async update(id, write, now) {
      try {
        return await inTransaction(db, async (client) => {
          // The UPDATE comes first and locks the row: a concurrent update of the same server waits
          // for this one to commit, and one of a server deleted meanwhile changes nothing (not_found).
          const c = serverColumns(write, now, secrets);
          const updated = await client.query(
            `UPDATE servers SET name = $1, name_key = $2, server_type = $3, drift_mode = $4, active = $5,
               root_path = $6, host_name = $7, port = $8, credentials_id = $9, host_key_sha256 = $10, temp_path = $11,
               variables = $12, modified_at = $13
             WHERE id = $14`,
            [
              c.name,
              c.nameKey,
              c.type,
              c.driftMode,
              c.active,
              c.rootPath,
              c.hostName,
              c.port,
              c.credentialsId,
              c.hostKeySha256,
              c.tempPath,
              c.variables,
              c.now,
              id,
            ],
          );
          if (updated.rowCount === 0) throw serverNotFound(write.name);
          if (write.agentKeyHash !== undefined) {
            await client.query("UPDATE servers SET agent_key_hash = $1, agent_key_created_at = $2 WHERE id = $3", [
              write.agentKeyHash,
              write.agentKeyHash === null ? null : now,
              id,
            ]);
          }
          await writeMembers(client, id, write);
          return recordById(client, id);
        });
      } catch (error) {
        throw serverWriteFailure(write.name, error);
      }
    },
    async delete(name) {
      return ((await writeRows(db, "DELETE FROM servers WHERE name_key = $1", [key(name)])).rowCount ?? 0) > 0;
    },
    async setAgentKey(name, agentKeyHash, now) {
      const result = await writeRows(
        db,
        "UPDATE servers SET agent_key_hash = $1, agent_key_created_at = $2 WHERE name_key = $3 AND server_type = 'agent'",
        [agentKeyHash, agentKeyHash === null ? null : now, key(name)],
      );
      return (result.rowCount ?? 0) > 0;
    },
    async findCredential(name) {
      const [row] = await readRows<{ id: number; name: string }>(
        db,
        "SELECT id, name FROM credentials WHERE name_key = $1",
        [key(name)],
      );
      return row;
    },
  };
}
