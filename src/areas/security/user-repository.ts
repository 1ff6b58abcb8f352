import { conflict, notFound } from "../../domain/errors.js";
import type { Db } from "../../storage/database.js";
import type { GroupView, UserView } from "./model.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";

export interface UserRecord extends UserView {
  readonly id: number;
}

export interface GroupRecord extends GroupView {
  readonly id: number;
}

export interface NewUser {
  readonly name: string;
  readonly displayName: string | undefined;
  readonly email: string | undefined;
  readonly passwordHash: string | undefined;
  readonly groupIds: readonly number[];
  readonly createdAt: string;
}

/** For each member: undefined keeps the value, null clears it. */
export interface UserChanges {
  readonly displayName?: string | null;
  readonly email?: string | null;
  readonly passwordHash?: string;
  /** Replaces the user's group memberships. */
  readonly groupIds?: readonly number[];
}

export interface UserRepository {
  /** Users ordered by name, case-insensitively, with their groups. */
  listUsers(): Promise<UserRecord[]>;
  findUser(name: string): Promise<UserRecord | undefined>;
  /** Ids of the users with these names, keyed by lowercased name; unknown names are absent. */
  findUserIds(names: readonly string[]): Promise<Map<string, number>>;
  /** Throws conflict USER_EXISTS when the name is taken (case-insensitively). */
  insertUser(user: NewUser): Promise<UserRecord>;
  /** Throws not_found when the user is gone. */
  updateUser(id: number, changes: UserChanges): Promise<UserRecord>;
  /** Deletes the user with its memberships, permissions and personal keys; false when there is none. */
  deleteUser(name: string): Promise<boolean>;

  listGroups(): Promise<GroupRecord[]>;
  findGroup(name: string): Promise<GroupRecord | undefined>;
  findGroupIds(names: readonly string[]): Promise<Map<string, number>>;
  /** Creates the group when it does not exist; replaces its members when `memberIds` is given. */
  saveGroup(name: string, memberIds: readonly number[] | undefined): Promise<GroupRecord>;
  deleteGroup(name: string): Promise<boolean>;
  setMembership(groupId: number, userId: number, member: boolean): Promise<void>;
}

export interface UserRow {
  id: number;
  name: string;
  display_name: string | null;
  email: string | null;
}

/** A user row with its groups' names as the repository answers it (both databases). */
export function userRecord(row: UserRow, groups: string[]): UserRecord {
  return {
    id: row.id,
    name: row.name,
    ...(row.display_name === null ? {} : { displayName: row.display_name }),
    ...(row.email === null ? {} : { email: row.email }),
    groups,
  };
}

/** A member that vanished between the service's lookup and this write (both databases). */
export function translateForeignKey(error: unknown): never {
  if (isForeignKeyViolation(error)) {
    throw conflict("CONCURRENT_CHANGE", "A user or group named in the request was deleted meanwhile; try again.", {
      cause: error,
    });
  }
  throw error;
}

/** Why inserting the user named `name` failed, as the API says it (both databases). */
export function insertUserFailure(error: unknown, name: string): never {
  if (isUniqueViolation(error)) {
    throw conflict("USER_EXISTS", `name: a user named '${name}' already exists.`, { cause: error });
  }
  return translateForeignKey(error);
}

export function createUserRepository(db: Db): UserRepository {
  const allUsers = db.prepare<[], UserRow>("SELECT id, name, display_name, email FROM users ORDER BY name_key");
  const userByKey = db.prepare<[string], UserRow>("SELECT id, name, display_name, email FROM users WHERE name_key = ?");
  const userById = db.prepare<[number], UserRow>("SELECT id, name, display_name, email FROM users WHERE id = ?");
  const allMemberships = db.prepare<[], { user_id: number; group_id: number; user_name: string; group_name: string }>(
    `SELECT m.user_id, m.group_id, u.name AS user_name, g.name AS group_name
       FROM group_members m JOIN users u ON u.id = m.user_id JOIN groups g ON g.id = m.group_id
      ORDER BY g.name_key, u.name_key`,
  );
  const groupsOfUser = db.prepare<[number], { name: string }>(
    `SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ? ORDER BY g.name_key`,
  );
  const usersOfGroup = db.prepare<[number], { name: string }>(
    `SELECT u.name FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.name_key`,
  );
  const insertUserRow = db.prepare<
    [string, string, string | null, string | null, string | null, string],
    { id: number }
  >(
    `INSERT INTO users (name, name_key, display_name, email, password_hash, created_at)
     VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const setDisplayName = db.prepare<[string | null, number]>("UPDATE users SET display_name = ? WHERE id = ?");
  const setEmail = db.prepare<[string | null, number]>("UPDATE users SET email = ? WHERE id = ?");
  const setPassword = db.prepare<[string, number]>("UPDATE users SET password_hash = ? WHERE id = ?");
  const deleteUserRow = db.prepare<[string]>("DELETE FROM users WHERE name_key = ?");
  const clearGroupsOfUser = db.prepare<[number]>("DELETE FROM group_members WHERE user_id = ?");
  const clearUsersOfGroup = db.prepare<[number]>("DELETE FROM group_members WHERE group_id = ?");
  const addMember = db.prepare<[number, number]>(
    "INSERT OR IGNORE INTO group_members (group_id, user_id) VALUES (?, ?)",
  );
  const removeMember = db.prepare<[number, number]>("DELETE FROM group_members WHERE group_id = ? AND user_id = ?");

  const allGroups = db.prepare<[], { id: number; name: string }>("SELECT id, name FROM groups ORDER BY name_key");
  const groupByKey = db.prepare<[string], { id: number; name: string }>(
    "SELECT id, name FROM groups WHERE name_key = ?",
  );
  const insertGroupRow = db.prepare<[string, string], { id: number }>(
    "INSERT INTO groups (name, name_key) VALUES (?, ?) RETURNING id",
  );
  const deleteGroupRow = db.prepare<[string]>("DELETE FROM groups WHERE name_key = ?");

  const toUser = (row: UserRow, groups = groupsOfUser.all(row.id).map((g) => g.name)): UserRecord =>
    userRecord(row, groups);
  const toGroup = (row: { id: number; name: string }): GroupRecord => ({
    id: row.id,
    name: row.name,
    users: usersOfGroup.all(row.id).map((u) => u.name),
  });
  const idsByName = (lookup: typeof userByKey | typeof groupByKey, names: readonly string[]) => {
    const ids = new Map<string, number>();
    for (const name of names) {
      const row = lookup.get(name.toLowerCase());
      if (row) ids.set(name.toLowerCase(), row.id);
    }
    return ids;
  };

  return {
    async listUsers() {
      return db.transaction(() => {
        const groups = new Map<number, string[]>();
        for (const m of allMemberships.all()) groups.set(m.user_id, [...(groups.get(m.user_id) ?? []), m.group_name]);
        return allUsers.all().map((row) => toUser(row, groups.get(row.id) ?? []));
      })();
    },
    async findUser(name) {
      const row = userByKey.get(name.toLowerCase());
      return row && toUser(row);
    },
    async findUserIds(names) {
      return idsByName(userByKey, names);
    },
    async insertUser(user) {
      try {
        return db
          .transaction(() => {
            const row = insertUserRow.get(
              user.name,
              user.name.toLowerCase(),
              user.displayName ?? null,
              user.email ?? null,
              user.passwordHash ?? null,
              user.createdAt,
            ) as { id: number };
            for (const groupId of user.groupIds) addMember.run(groupId, row.id);
            return toUser(userById.get(row.id) as UserRow);
          })
          .immediate();
      } catch (error) {
        return insertUserFailure(error, user.name);
      }
    },
    async updateUser(id, changes) {
      try {
        return db
          .transaction(() => {
            if (!userById.get(id)) throw notFound("USER_NOT_FOUND", "The user was deleted meanwhile.");
            if (changes.displayName !== undefined) setDisplayName.run(changes.displayName, id);
            if (changes.email !== undefined) setEmail.run(changes.email, id);
            if (changes.passwordHash !== undefined) setPassword.run(changes.passwordHash, id);
            if (changes.groupIds !== undefined) {
              clearGroupsOfUser.run(id);
              for (const groupId of changes.groupIds) addMember.run(groupId, id);
            }
            return toUser(userById.get(id) as UserRow);
          })
          .immediate();
      } catch (error) {
        return translateForeignKey(error);
      }
    },
    async deleteUser(name) {
      return deleteUserRow.run(name.toLowerCase()).changes > 0;
    },

    async listGroups() {
      return db.transaction(() => {
        const members = new Map<number, string[]>();
        for (const m of allMemberships.all())
          members.set(m.group_id, [...(members.get(m.group_id) ?? []), m.user_name]);
        return allGroups.all().map((row) => ({ id: row.id, name: row.name, users: members.get(row.id) ?? [] }));
      })();
    },
    async findGroup(name) {
      const row = groupByKey.get(name.toLowerCase());
      return row && toGroup(row);
    },
    async findGroupIds(names) {
      return idsByName(groupByKey, names);
    },
    async saveGroup(name, memberIds) {
      try {
        return db
          .transaction(() => {
            const existing = groupByKey.get(name.toLowerCase());
            const id = existing?.id ?? (insertGroupRow.get(name, name.toLowerCase()) as { id: number }).id;
            if (memberIds !== undefined) {
              clearUsersOfGroup.run(id);
              for (const userId of memberIds) addMember.run(id, userId);
            }
            return toGroup({ id, name: existing?.name ?? name });
          })
          .immediate();
      } catch (error) {
        return translateForeignKey(error);
      }
    },
    async deleteGroup(name) {
      return deleteGroupRow.run(name.toLowerCase()).changes > 0;
    },
    async setMembership(groupId, userId, member) {
      try {
        if (member) addMember.run(groupId, userId);
        else removeMember.run(groupId, userId);
      } catch (error) {
        translateForeignKey(error);
      }
    },
  };
}
