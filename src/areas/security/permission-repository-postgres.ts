import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import {
  insertPermissionFailure,
  insertTaskFailure,
  PERMISSION_SELECT,
  permissionColumns,
  permissionExists,
  permissionRecord,
  type PermissionRepository,
  type PermissionRow,
  TASK_COLUMNS,
  type TaskRow,
  taskRecord,
  taskValues,
} from "./permission-repository.js";

/** PermissionRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresPermissionRepository(db: PostgresDb): PermissionRepository {
  return {
    async listTasks() {
      const rows = await readRows<TaskRow>(db, `SELECT ${TASK_COLUMNS} FROM tasks ORDER BY built_in DESC, name_key`);
      return rows.map(taskRecord);
    },
    async findTask(name) {
      const [row] = await readRows<TaskRow>(db, `SELECT ${TASK_COLUMNS} FROM tasks WHERE name_key = $1`, [
        name.toLowerCase(),
      ]);
      return row && taskRecord(row);
    },
    async insertTask(task) {
      try {
        // A concurrent insert of the same name waits on the unique index, then fails: TASK_EXISTS.
        const inserted = await writeRows<TaskRow>(
          db,
          `INSERT INTO tasks (name, name_key, description, feed_scoped, built_in, attributes)
           VALUES ($1, $2, $3, $4, 0, $5) RETURNING ${TASK_COLUMNS}`,
          taskValues(task),
        );
        return taskRecord(inserted.rows[0] as TaskRow);
      } catch (error) {
        throw insertTaskFailure(error, task.name);
      }
    },
    async deleteTask(id) {
      // Its permissions go by ON DELETE CASCADE.
      const deleted = await writeRows(db, "DELETE FROM tasks WHERE id = $1 AND built_in = 0", [id]);
      return (deleted.rowCount ?? 0) > 0;
    },

    async listPermissions() {
      return (await readRows<PermissionRow>(db, `${PERMISSION_SELECT} ORDER BY p.id`)).map(permissionRecord);
    },
    async insertPermission(permission) {
      const { principalType, userId, groupId, taskId, feedId, feedGroupKey, feedGroup, deny } =
        permissionColumns(permission);
      try {
        return await inTransaction(db, async (client) => {
          // No unique index says "the same permission" (NULLs differ in one), so the check and the
          // insert are serialised on the task's row, which every same permission names: a second
          // insert waits here until the first commits, then its check sees it. NO KEY UPDATE:
          // inserting a permission only takes KEY SHARE on its task, so this blocks nothing else.
          // A task deleted meanwhile is not found; the insert then fails: CONCURRENT_CHANGE.
          await client.query("SELECT 1 FROM tasks WHERE id = $1 FOR NO KEY UPDATE", [taskId]);
          const same = await client.query(
            `SELECT id FROM permissions
              WHERE principal_type = $1 AND user_id IS NOT DISTINCT FROM $2 AND group_id IS NOT DISTINCT FROM $3
                AND task_id = $4 AND feed_id IS NOT DISTINCT FROM $5 AND feed_group_key IS NOT DISTINCT FROM $6
                AND deny = $7`,
            [principalType, userId, groupId, taskId, feedId, feedGroupKey, deny],
          );
          if ((same.rowCount ?? 0) > 0) throw permissionExists();
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO permissions (principal_type, user_id, group_id, task_id, feed_id, feed_group_key, feed_group, deny)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`,
            [principalType, userId, groupId, taskId, feedId, feedGroupKey, feedGroup, deny],
          );
          const row = await client.query<PermissionRow>(`${PERMISSION_SELECT} WHERE p.id = $1`, [inserted.rows[0]?.id]);
          return permissionRecord(row.rows[0] as PermissionRow);
        });
      } catch (error) {
        throw insertPermissionFailure(error);
      }
    },
    async deletePermission(id) {
      return ((await writeRows(db, "DELETE FROM permissions WHERE id = $1", [id])).rowCount ?? 0) > 0;
    },
  };
}
