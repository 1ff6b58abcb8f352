import { conflict, notFound } from "../../domain/errors.js";
import type { DesiredItem } from "../../drift/model.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import { decodeItem, itemReplacer } from "./item-codec.js";
import { refuseCycle } from "./role-cycles.js";
import { readVariableColumn, type Variables, writeVariableColumn } from "./variables-model.js";

/** SQL of roles (migration 0011): the row, its dependencies, its items. Every method is one transaction. */
export interface RoleRecord {
  readonly id: number;
  readonly name: string;
  readonly description: string | undefined;
  readonly variables: Variables;
  readonly dependsOn: readonly string[];
  readonly items: readonly DesiredItem[];
}

export interface RoleWrite {
  readonly name: string;
  readonly description: string | null;
  readonly variables: Variables;
  readonly dependsOnIds: readonly number[];
  /** Replaces the role's items; undefined keeps them. */
  readonly items: readonly DesiredItem[] | undefined;
}

export interface RolesRepository {
  list(): Promise<RoleRecord[]>;
  find(name: string): Promise<RoleRecord | undefined>;
  insert(write: RoleWrite, now: string): Promise<RoleRecord>;
  /** unprocessable ROLE_CYCLE when the new dependencies would close a cycle (checked in the same transaction). */
  update(id: number, write: RoleWrite, now: string): Promise<RoleRecord>;
  /** Refuses (conflict ROLE_IN_USE naming them) while servers list the role or other roles depend on it. */
  delete(name: string): Promise<boolean>;
}

export interface RoleRow {
  id: number;
  name: string;
  description: string | null;
  variables: string;
}

const key = (name: string) => name.toLowerCase();

/** The columns of a saved role (both databases). */
export function roleColumns(write: RoleWrite, now: string, secrets: SecretBox) {
  return {
    name: write.name,
    nameKey: key(write.name),
    description: write.description,
    variables: writeVariableColumn(write.variables, secrets),
    now,
  };
}

/** not_found ROLE_NOT_FOUND: the role being updated was deleted meanwhile (both databases). */
export const roleNotFound = (name: string) => notFound("ROLE_NOT_FOUND", `The role '${name}' was not found.`);

/** Why saving the role `name` failed, as the API says it (both databases). */
export function roleWriteFailure(name: string, error: unknown): unknown {
  return isUniqueViolation(error)
    ? conflict("ROLE_EXISTS", `A role named '${name}' already exists.`, { cause: error })
    : error;
}

/**
 * Throws unprocessable ROLE_CYCLE when `role` depending on `dependsOnIds` would close a cycle among
 * the stored dependencies (`edgeRows`), naming the roles by `nameRows` (both databases).
 */
export function refuseStoredCycle(
  edgeRows: readonly { role_id: number; depends_on_id: number }[],
  nameRows: readonly { id: number; name: string }[],
  role: { readonly id: number; readonly name: string },
  dependsOnIds: readonly number[],
): void {
  const edges = new Map<number, number[]>();
  for (const edge of edgeRows) {
    edges.set(edge.role_id, [...(edges.get(edge.role_id) ?? []), edge.depends_on_id]);
  }
  const names = new Map(nameRows.map((row) => [row.id, row.name]));
  refuseCycle(edges, names, role, dependsOnIds);
}

/** conflict ROLE_IN_USE naming the servers that list the role and the roles that depend on it (both databases). */
export function roleInUse(name: string, servers: readonly string[], dependents: readonly string[]) {
  const users = [
    ...(servers.length > 0 ? [`the server(s) ${servers.join(", ")}`] : []),
    ...(dependents.length > 0 ? [`the role(s) ${dependents.join(", ")} (dependsOn)`] : []),
  ];
  return conflict("ROLE_IN_USE", `The role '${name}' is used by ${users.join(" and ")}: remove it from them first.`);
}

export function createRolesRepository(db: Db, secrets: SecretBox): RolesRepository {
  const replaceItems = itemReplacer(db, "role_id", secrets);
  const q = {
    all: db.prepare<[], RoleRow>("SELECT id, name, description, variables FROM roles ORDER BY name_key"),
    byName: db.prepare<[string], RoleRow>("SELECT id, name, description, variables FROM roles WHERE name_key = ?"),
    byId: db.prepare<[number], RoleRow>("SELECT id, name, description, variables FROM roles WHERE id = ?"),
    dependencies: db.prepare<[number], { name: string }>(
      "SELECT r.name FROM role_dependencies d JOIN roles r ON r.id = d.depends_on_id WHERE d.role_id = ? ORDER BY r.name_key",
    ),
    items: db.prepare<[number], { definition: string }>(
      "SELECT definition FROM config_items WHERE role_id = ? ORDER BY position",
    ),
    names: db.prepare<[], { id: number; name: string }>("SELECT id, name FROM roles"),
    edges: db.prepare<[], { role_id: number; depends_on_id: number }>(
      "SELECT role_id, depends_on_id FROM role_dependencies",
    ),
    insert: db.prepare(
      `INSERT INTO roles (name, name_key, description, variables, created_at, modified_at)
       VALUES (@name, @nameKey, @description, @variables, @now, @now)`,
    ),
    update: db.prepare(
      `UPDATE roles SET name = @name, name_key = @nameKey, description = @description, variables = @variables,
         modified_at = @now WHERE id = @id`,
    ),
    clearDependencies: db.prepare<[number]>("DELETE FROM role_dependencies WHERE role_id = ?"),
    addDependency: db.prepare<[number, number]>("INSERT INTO role_dependencies (role_id, depends_on_id) VALUES (?, ?)"),
    servers: db.prepare<[number], { name: string }>(
      "SELECT s.name FROM server_roles sr JOIN servers s ON s.id = sr.server_id WHERE sr.role_id = ? ORDER BY s.name_key",
    ),
    dependents: db.prepare<[number], { name: string }>(
      "SELECT r.name FROM role_dependencies d JOIN roles r ON r.id = d.role_id WHERE d.depends_on_id = ? ORDER BY r.name_key",
    ),
    delete: db.prepare<[number]>("DELETE FROM roles WHERE id = ?"),
  };

  const record = (row: RoleRow): RoleRecord => ({
    id: row.id,
    name: row.name,
    description: row.description ?? undefined,
    variables: readVariableColumn(row.variables, secrets),
    dependsOn: q.dependencies.all(row.id).map((d) => d.name),
    items: q.items.all(row.id).map((i) => decodeItem(i.definition, row.name, secrets)),
  });
  const columns = (write: RoleWrite, now: string) => roleColumns(write, now, secrets);
  const writeMembers = (id: number, write: RoleWrite) => {
    q.clearDependencies.run(id);
    for (const dependency of write.dependsOnIds) q.addDependency.run(id, dependency);
    if (write.items !== undefined) replaceItems(id, write.items);
  };
  const unique = <T>(name: string, work: () => T): T => {
    try {
      return work();
    } catch (error) {
      throw roleWriteFailure(name, error);
    }
  };

  return withBusyRetries(db, {
    list: async () => q.all.all().map(record),
    find: async (name) => {
      const row = q.byName.get(key(name));
      return row && record(row);
    },
    insert: async (write, now) =>
      unique(write.name, () =>
        db.transaction(() => {
          const id = Number(q.insert.run(columns(write, now)).lastInsertRowid);
          writeMembers(id, write);
          return record(q.byId.get(id) as RoleRow);
        })(),
      ),
    update: async (id, write, now) =>
      unique(write.name, () =>
        db.transaction(() => {
          if (q.update.run({ ...columns(write, now), id }).changes === 0) {
            throw roleNotFound(write.name);
          }
          refuseStoredCycle(q.edges.all(), q.names.all(), { id, name: write.name }, write.dependsOnIds);
          writeMembers(id, write);
          return record(q.byId.get(id) as RoleRow);
        })(),
      ),
    delete: async (name) =>
      db.transaction(() => {
        const row = q.byName.get(key(name));
        if (!row) return false;
        const servers = q.servers.all(row.id).map((s) => s.name);
        const dependents = q.dependents.all(row.id).map((r) => r.name);
        if (servers.length > 0 || dependents.length > 0) throw roleInUse(row.name, servers, dependents);
        q.delete.run(row.id);
        return true;
      })(),
  });
}
