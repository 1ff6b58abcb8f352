import type pg from "pg";
import { notFound } from "../../domain/errors.js";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import {
  type GroupRecord,
  insertUserFailure,
  translateForeignKey,
  type UserRecord,
  type UserRepository,
  type UserRow,
  userRecord,
} from "./user-repository.js";

/**
 * A user with its groups, or a group with its users, in one statement: one snapshot, where SQLite
 * reads the rows and their memberships in one transaction (READ COMMITTED gives each statement its
 * own snapshot), and one round trip. ARRAY(...) is '{}' for no members, never NULL.
 */
const USER_SELECT = `
  SELECT u.id, u.name, u.display_name, u.email,
         ARRAY(SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id
                WHERE m.user_id = u.id ORDER BY g.name_key) AS groups
    FROM users u`;
const GROUP_SELECT = `
  SELECT g.id, g.name,
         ARRAY(SELECT u.name FROM group_members m JOIN users u ON u.id = m.user_id
                WHERE m.group_id = g.id ORDER BY u.name_key) AS users
    FROM groups g`;

type UserWithGroups = UserRow & { groups: string[] };
type GroupWithUsers = { id: number; name: string; users: string[] };

const toUser = (row: UserWithGroups): UserRecord => userRecord(row, row.groups);
const toGroup = (row: GroupWithUsers): GroupRecord => ({ id: row.id, name: row.name, users: row.users });

/** Adds every member at once; a membership that exists stays (SQLite: INSERT OR IGNORE). */
const ADD_MEMBERS = `INSERT INTO group_members (group_id, user_id)
  SELECT $1::bigint, unnest($2::bigint[]) ON CONFLICT DO NOTHING`;
const ADD_GROUPS = `INSERT INTO group_members (group_id, user_id)
  SELECT unnest($2::bigint[]), $1::bigint ON CONFLICT DO NOTHING`;

/** UserRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresUserRepository(db: PostgresDb): UserRepository {
  /** Ids by lowercased name, in the order of `names` as on SQLite (one query, not one per name). */
  async function idsByName(table: "users" | "groups", names: readonly string[]): Promise<Map<string, number>> {
    const ids = new Map<string, number>();
    if (names.length === 0) return ids;
    const keys = names.map((name) => name.toLowerCase());
    const rows = await readRows<{ id: number; name_key: string }>(
      db,
      `SELECT id, name_key FROM ${table} WHERE name_key = ANY($1::text[])`,
      [keys],
    );
    const found = new Map(rows.map((row) => [row.name_key, row.id]));
    for (const key of keys) {
      const id = found.get(key);
      if (id !== undefined) ids.set(key, id);
    }
    return ids;
  }

  const userById = async (client: pg.PoolClient, id: number) =>
    toUser((await client.query<UserWithGroups>(`${USER_SELECT} WHERE u.id = $1`, [id])).rows[0] as UserWithGroups);

  return {
    async listUsers() {
      return (await readRows<UserWithGroups>(db, `${USER_SELECT} ORDER BY u.name_key`)).map(toUser);
    },
    async findUser(name) {
      const [row] = await readRows<UserWithGroups>(db, `${USER_SELECT} WHERE u.name_key = $1`, [name.toLowerCase()]);
      return row && toUser(row);
    },
    async findUserIds(names) {
      return idsByName("users", names);
    },
    async insertUser(user) {
      try {
        return await inTransaction(db, async (client) => {
          // A concurrent insert of the same name waits on the unique index, then fails: USER_EXISTS.
          const inserted = await client.query<{ id: number }>(
            `INSERT INTO users (name, name_key, display_name, email, password_hash, created_at)
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
            [
              user.name,
              user.name.toLowerCase(),
              user.displayName ?? null,
              user.email ?? null,
              user.passwordHash ?? null,
              user.createdAt,
            ],
          );
          const id = (inserted.rows[0] as { id: number }).id;
          if (user.groupIds.length > 0) await client.query(ADD_GROUPS, [id, user.groupIds]);
          return userById(client, id);
        });
      } catch (error) {
        return insertUserFailure(error, user.name);
      }
    },
    async updateUser(id, changes) {
      try {
        return await inTransaction(db, async (client) => {
          // Locked until COMMIT: a concurrent update of the same user (its groups replaced twice
          // at once would otherwise merge) or delete waits. NO KEY UPDATE, not UPDATE: inserting a
          // membership only takes KEY SHARE on the user, so saveGroup and setMembership do not
          // wait here (nor deadlock against this, holding their group).
          const found = await client.query("SELECT id FROM users WHERE id = $1 FOR NO KEY UPDATE", [id]);
          if (found.rowCount === 0) throw notFound("USER_NOT_FOUND", "The user was deleted meanwhile.");
          if (changes.displayName !== undefined) {
            await client.query("UPDATE users SET display_name = $1 WHERE id = $2", [changes.displayName, id]);
          }
          if (changes.email !== undefined) {
            await client.query("UPDATE users SET email = $1 WHERE id = $2", [changes.email, id]);
          }
          if (changes.passwordHash !== undefined) {
            await client.query("UPDATE users SET password_hash = $1 WHERE id = $2", [changes.passwordHash, id]);
          }
          if (changes.groupIds !== undefined) {
            await client.query("DELETE FROM group_members WHERE user_id = $1", [id]);
            if (changes.groupIds.length > 0) await client.query(ADD_GROUPS, [id, changes.groupIds]);
          }
          return userById(client, id);
        });
      } catch (error) {
        return translateForeignKey(error);
      }
    },
    async deleteUser(name) {
      // Memberships, permissions, personal keys and UI sessions go by ON DELETE CASCADE.
      const deleted = await writeRows(db, "DELETE FROM users WHERE name_key = $1", [name.toLowerCase()]);
      return (deleted.rowCount ?? 0) > 0;
    },

    async listGroups() {
      return (await readRows<GroupWithUsers>(db, `${GROUP_SELECT} ORDER BY g.name_key`)).map(toGroup);
    },
    async findGroup(name) {
      const [row] = await readRows<GroupWithUsers>(db, `${GROUP_SELECT} WHERE g.name_key = $1`, [name.toLowerCase()]);
      return row && toGroup(row);
    },
    async findGroupIds(names) {
      return idsByName("groups", names);
    },
    async saveGroup(name, memberIds) {
      const key = name.toLowerCase();
      try {
        return await inTransaction(db, async (client) => {
          // The group, found and locked (two replacements of its members at once would merge), or
          // created. A concurrent creation of the same name makes the INSERT wait for it and then
          // do nothing: the next round finds and locks that group, as SQLite's second writer would.
          let id: number | undefined;
          while (id === undefined) {
            const existing = await client.query<{ id: number }>(
              "SELECT id FROM groups WHERE name_key = $1 FOR NO KEY UPDATE",
              [key],
            );
            id =
              existing.rows[0]?.id ??
              (
                await client.query<{ id: number }>(
                  "INSERT INTO groups (name, name_key) VALUES ($1, $2) ON CONFLICT (name_key) DO NOTHING RETURNING id",
                  [name, key],
                )
              ).rows[0]?.id;
          }
          if (memberIds !== undefined) {
            await client.query("DELETE FROM group_members WHERE group_id = $1", [id]);
            if (memberIds.length > 0) await client.query(ADD_MEMBERS, [id, memberIds]);
          }
          const group = await client.query<GroupWithUsers>(`${GROUP_SELECT} WHERE g.id = $1`, [id]);
          return toGroup(group.rows[0] as GroupWithUsers);
        });
      } catch (error) {
        return translateForeignKey(error);
      }
    },
    async deleteGroup(name) {
      const deleted = await writeRows(db, "DELETE FROM groups WHERE name_key = $1", [name.toLowerCase()]);
      return (deleted.rowCount ?? 0) > 0;
    },
    async setMembership(groupId, userId, member) {
      try {
        if (member) {
          await writeRows(db, "INSERT INTO group_members (group_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING", [
            groupId,
            userId,
          ]);
        } else {
          await writeRows(db, "DELETE FROM group_members WHERE group_id = $1 AND user_id = $2", [groupId, userId]);
        }
      } catch (error) {
        translateForeignKey(error);
      }
    },
  };
}
