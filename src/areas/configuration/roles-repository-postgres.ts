import type pg from "pg";
import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { decodeItem } from "./item-codec.js";
import { replaceItemsOn } from "./item-codec-postgres.js";
import {
  refuseStoredCycle,
  roleColumns,
  roleInUse,
  roleNotFound,
  type RoleRecord,
  type RoleRow,
  type RolesRepository,
  type RoleWrite,
  roleWriteFailure,
} from "./roles-repository.js";
import { readVariableColumn } from "./variables-model.js";

/**
 * A role and what its record shows, in one statement: one snapshot (READ COMMITTED reads each
 * statement in its own), where SQLite reads the row and then its dependencies and items.
 */
const RECORD_SELECT = `
  SELECT ro.id, ro.name, ro.description, ro.variables,
         ARRAY(SELECT r.name FROM role_dependencies d JOIN roles r ON r.id = d.depends_on_id
                WHERE d.role_id = ro.id ORDER BY r.name_key) AS record_depends_on,
         ARRAY(SELECT i.definition FROM config_items i WHERE i.role_id = ro.id ORDER BY i.position) AS record_items
    FROM roles ro`;

interface RecordRow extends RoleRow {
  record_depends_on: string[];
  record_items: string[];
}

const key = (name: string) => name.toLowerCase();

/** RolesRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresRolesRepository(db: PostgresDb, secrets: SecretBox): RolesRepository {
  const record = (row: RecordRow): RoleRecord => ({
    id: row.id,
    name: row.name,
    description: row.description ?? undefined,
    variables: readVariableColumn(row.variables, secrets),
    dependsOn: row.record_depends_on,
    items: row.record_items.map((definition) => decodeItem(definition, row.name, secrets)),
  });

  const recordById = async (client: pg.PoolClient, id: number) =>
    record((await client.query<RecordRow>(`${RECORD_SELECT} WHERE ro.id = $1`, [id])).rows[0] as RecordRow);

  /** Replaces the role's dependencies and, when given, its items. */
  const writeMembers = async (client: pg.PoolClient, id: number, write: RoleWrite) => {
    await client.query("DELETE FROM role_dependencies WHERE role_id = $1", [id]);
    if (write.dependsOnIds.length > 0) {
      await client.query(
        `INSERT INTO role_dependencies (role_id, depends_on_id)
         SELECT $1::bigint, d.depends_on_id FROM unnest($2::bigint[]) AS d(depends_on_id)`,
        [id, write.dependsOnIds],
      );
    }
    if (write.items !== undefined) await replaceItemsOn(client, "role_id", id, write.items, secrets);
  };

  return {
    async list() {
      return (await readRows<RecordRow>(db, `${RECORD_SELECT} ORDER BY ro.name_key`)).map(record);
    },
    async find(name) {
      const [row] = await readRows<RecordRow>(db, `${RECORD_SELECT} WHERE ro.name_key = $1`, [key(name)]);
      return row && record(row);
    },
    async insert(write, now) {
      try {
        return await inTransaction(db, async (client) => {
          // A new role closes no cycle (no role depends on it yet): no lock. A name taken meanwhile
          // fails on roles.name_key's unique index: ROLE_EXISTS.
          const c = roleColumns(write, now, secrets);
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO roles (name, name_key, description, variables, created_at, modified_at)
             VALUES ($1, $2, $3, $4, $5, $5) RETURNING id`,
            [c.name, c.nameKey, c.description, c.variables, c.now],
          );
          const id = (inserted.rows[0] as { id: number }).id;
          await writeMembers(client, id, write);
          return recordById(client, id);
        });
      } catch (error) {
        throw roleWriteFailure(write.name, error);
      }
    },
    async update(id, write, now) {
      try {
        return await inTransaction(db, async (client) => {
          // The cycle check reads every dependency: two updates that each add one half of a cycle
          // would both pass it under READ COMMITTED. Role updates therefore take turns, on a table
          // lock that only they take: SHARE UPDATE EXCLUSIVE conflicts with itself but not with
          // the row writes of inserts, deletes and cascades (nor with reads), and it is taken
          // before any row lock, so no deadlock can involve it. (Autovacuum, which takes it too,
          // gives way to a waiting lock.)
          await client.query("LOCK TABLE role_dependencies IN SHARE UPDATE EXCLUSIVE MODE");
          const c = roleColumns(write, now, secrets);
          const updated = await client.query(
            `UPDATE roles SET name = $1, name_key = $2, description = $3, variables = $4, modified_at = $5
             WHERE id = $6`,
            [c.name, c.nameKey, c.description, c.variables, c.now, id],
          );
          if (updated.rowCount === 0) throw roleNotFound(write.name);
          const edges = await client.query<{ role_id: number; depends_on_id: number }>(
            "SELECT role_id, depends_on_id FROM role_dependencies",
          );
          const names = await client.query<{ id: number; name: string }>("SELECT id, name FROM roles");
          refuseStoredCycle(edges.rows, names.rows, { id, name: write.name }, write.dependsOnIds);
          await writeMembers(client, id, write);
          return recordById(client, id);
        });
      } catch (error) {
        throw roleWriteFailure(write.name, error);
      }
    },
    async delete(name) {
      return inTransaction(db, async (client) => {
        // FOR UPDATE conflicts with the key-share lock of the foreign key checks of server_roles and
        // role_dependencies: a server or role that takes this role meanwhile either committed
        // before the lock (and is listed below: ROLE_IN_USE) or waits and then fails its check.
        // Without the lock, its row would be deleted silently by ON DELETE CASCADE.
        const [row] = (
          await client.query<{ id: number; name: string }>(
            "SELECT id, name FROM roles WHERE name_key = $1 FOR UPDATE",
            [key(name)],
          )
        ).rows;
        if (!row) return false;
        const servers = (
          await client.query<{ name: string }>(
            "SELECT s.name FROM server_roles sr JOIN servers s ON s.id = sr.server_id WHERE sr.role_id = $1 ORDER BY s.name_key",
            [row.id],
          )
        ).rows.map((s) => s.name);
        const dependents = (
          await client.query<{ name: string }>(
            "SELECT r.name FROM role_dependencies d JOIN roles r ON r.id = d.role_id WHERE d.depends_on_id = $1 ORDER BY r.name_key",
            [row.id],
          )
        ).rows.map((r) => r.name);
        if (servers.length > 0 || dependents.length > 0) throw roleInUse(row.name, servers, dependents);
        await client.query("DELETE FROM roles WHERE id = $1", [row.id]);
        return true;
      });
    },
  };
}
