import { conflict } from "../../domain/errors.js";
import type { Db } from "../../storage/database.js";
import type { TaskView } from "./model.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import { jsonList } from "./sql-helpers.js";

export interface TaskRecord extends TaskView {
  readonly id: number;
}

export interface NewTask {
  readonly name: string;
  readonly description: string | undefined;
  readonly feedScoped: boolean;
  readonly attributes: readonly string[];
}

export type PermissionPrincipal =
  | { readonly type: "user"; readonly id: number }
  | { readonly type: "group"; readonly id: number }
  | { readonly type: "anonymous" };

/** A feed group as written (`name`) and as matched (lowercased). */
export interface ScopeName {
  readonly name: string;
}

export interface NewPermission {
  readonly principal: PermissionPrincipal;
  readonly taskId: number;
  /** The feed's id (migration 0010): the permission dies with the feed and follows its renames. */
  readonly feedId: number | undefined;
  readonly feedGroup: ScopeName | undefined;
  readonly deny: boolean;
}

export interface PermissionRecord {
  readonly id: number;
  readonly principalType: "user" | "group" | "anonymous";
  /** User or group name; undefined for Anonymous. */
  readonly principalName: string | undefined;
  readonly task: string;
  /** The feed's current name; the feed group as written when granted (or its lowercased key). */
  readonly feed: string | undefined;
  readonly feedGroup: string | undefined;
  readonly deny: boolean;
}

export interface PermissionRepository {
  /** Built-in tasks first, then by name. */
  listTasks(): Promise<TaskRecord[]>;
  findTask(name: string): Promise<TaskRecord | undefined>;
  /** Throws conflict TASK_EXISTS when the name is taken. */
  insertTask(task: NewTask): Promise<TaskRecord>;
  /** Deletes a custom task and the permissions that use it; false when there is none. */
  deleteTask(id: number): Promise<boolean>;

  listPermissions(): Promise<PermissionRecord[]>;
  /** Throws conflict PERMISSION_EXISTS when the same permission exists already. */
  insertPermission(permission: NewPermission): Promise<PermissionRecord>;
  deletePermission(id: number): Promise<boolean>;
}

export interface TaskRow {
  id: number;
  name: string;
  description: string | null;
  feed_scoped: number;
  built_in: number;
  attributes: string;
}

export interface PermissionRow {
  id: number;
  principal_type: PermissionRecord["principalType"];
  user_name: string | null;
  group_name: string | null;
  task_name: string;
  feed_name: string | null;
  feed_group_key: string | null;
  feed_group: string | null;
  deny: number;
}

export const PERMISSION_SELECT = `
  SELECT p.id, p.principal_type, u.name AS user_name, g.name AS group_name, t.name AS task_name,
         f.name AS feed_name, p.feed_group_key, p.feed_group, p.deny
    FROM permissions p
    JOIN tasks t ON t.id = p.task_id
    LEFT JOIN users u ON u.id = p.user_id
    LEFT JOIN groups g ON g.id = p.group_id
    LEFT JOIN feeds f ON f.id = p.feed_id`;

export const TASK_COLUMNS = "id, name, description, feed_scoped, built_in, attributes";

/** A task row as the repository answers it (both databases). */
export function taskRecord(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    name: row.name,
    ...(row.description === null ? {} : { description: row.description }),
    feedScoped: row.feed_scoped === 1,
    attributes: jsonList(row.attributes),
    builtIn: row.built_in === 1,
  };
}

/** A permission row as the repository answers it (both databases). */
export function permissionRecord(row: PermissionRow): PermissionRecord {
  return {
    id: row.id,
    principalType: row.principal_type,
    principalName: row.user_name ?? row.group_name ?? undefined,
    task: row.task_name,
    feed: row.feed_name ?? undefined,
    feedGroup: row.feed_group ?? row.feed_group_key ?? undefined,
    deny: row.deny === 1,
  };
}

/** The columns of a new permission as both databases store and match them. */
export function permissionColumns(permission: NewPermission) {
  const { principal } = permission;
  return {
    principalType: principal.type,
    userId: principal.type === "user" ? principal.id : null,
    groupId: principal.type === "group" ? principal.id : null,
    taskId: permission.taskId,
    feedId: permission.feedId ?? null,
    feedGroupKey: permission.feedGroup?.name.toLowerCase() ?? null,
    feedGroup: permission.feedGroup?.name ?? null,
    deny: permission.deny ? 1 : 0,
  };
}

/** The values of a new task, in the order of the INSERT's columns (both databases). */
export function taskValues(task: NewTask): [string, string, string | null, number, string] {
  return [
    task.name,
    task.name.toLowerCase(),
    task.description ?? null,
    task.feedScoped ? 1 : 0,
    JSON.stringify(task.attributes),
  ];
}

/** Why inserting the task named `name` failed, as the API says it (both databases). */
export function insertTaskFailure(error: unknown, name: string): unknown {
  if (isUniqueViolation(error))
    return conflict("TASK_EXISTS", `name: a task named '${name}' already exists.`, { cause: error });
  return error;
}

/** The same permission (principal, task, scope and deny) exists already (both databases). */
export const permissionExists = () => conflict("PERMISSION_EXISTS", "The same permission exists already.");

/** Why inserting a permission failed, as the API says it (both databases). */
export function insertPermissionFailure(error: unknown): unknown {
  if (isForeignKeyViolation(error)) {
    return conflict("CONCURRENT_CHANGE", "The user, group, task or feed named in the request was deleted meanwhile.", {
      cause: error,
    });
  }
  return error;
}

export function createPermissionRepository(db: Db): PermissionRepository {
  const allTasks = db.prepare<[], TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks ORDER BY built_in DESC, name_key`);
  const taskByKey = db.prepare<[string], TaskRow>(`SELECT ${TASK_COLUMNS} FROM tasks WHERE name_key = ?`);
  const insertTaskRow = db.prepare<[string, string, string | null, number, string], TaskRow>(
    `INSERT INTO tasks (name, name_key, description, feed_scoped, built_in, attributes)
     VALUES (?, ?, ?, ?, 0, ?) RETURNING ${TASK_COLUMNS}`,
  );
  const deleteTaskRow = db.prepare<[number]>("DELETE FROM tasks WHERE id = ? AND built_in = 0");

  const allPermissions = db.prepare<[], PermissionRow>(`${PERMISSION_SELECT} ORDER BY p.id`);
  const permissionById = db.prepare<[number], PermissionRow>(`${PERMISSION_SELECT} WHERE p.id = ?`);
  const samePermission = db.prepare<
    [string, number | null, number | null, number, number | null, string | null, number],
    { id: number }
  >(
    `SELECT id FROM permissions
      WHERE principal_type = ? AND user_id IS ? AND group_id IS ? AND task_id = ?
        AND feed_id IS ? AND feed_group_key IS ? AND deny = ?`,
  );
  const insertPermissionRow = db.prepare<
    [string, number | null, number | null, number, number | null, string | null, string | null, number],
    { id: number }
  >(
    `INSERT INTO permissions (principal_type, user_id, group_id, task_id, feed_id, feed_group_key, feed_group, deny)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const deletePermissionRow = db.prepare<[number]>("DELETE FROM permissions WHERE id = ?");

  return {
    async listTasks() {
      return allTasks.all().map(taskRecord);
    },
    async findTask(name) {
      const row = taskByKey.get(name.toLowerCase());
      return row && taskRecord(row);
    },
    async insertTask(task) {
      try {
        const row = insertTaskRow.get(...taskValues(task)) as TaskRow;
        return taskRecord(row);
      } catch (error) {
        throw insertTaskFailure(error, task.name);
      }
    },
    async deleteTask(id) {
      return deleteTaskRow.run(id).changes > 0;
    },

    async listPermissions() {
      return allPermissions.all().map(permissionRecord);
    },
    async insertPermission(permission) {
      const { principalType, userId, groupId, taskId, feedId, feedGroupKey, feedGroup, deny } =
        permissionColumns(permission);
      try {
        return db
          .transaction(() => {
            const key = [principalType, userId, groupId, taskId, feedId, feedGroupKey, deny] as const;
            if (samePermission.get(...key)) throw permissionExists();
            const row = insertPermissionRow.get(
              principalType,
              userId,
              groupId,
              taskId,
              feedId,
              feedGroupKey,
              feedGroup,
              deny,
            ) as { id: number };
            return permissionRecord(permissionById.get(row.id) as PermissionRow);
          })
          .immediate();
      } catch (error) {
        throw insertPermissionFailure(error);
      }
    },
    async deletePermission(id) {
      return deletePermissionRow.run(id).changes > 0;
    },
  };
}
