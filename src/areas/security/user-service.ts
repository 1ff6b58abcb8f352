import type { Clock } from "../../domain/clock.js";
import { notFound } from "../../domain/errors.js";
import { ANONYMOUS_NAME, type GroupView, type UserView } from "./model.js";
import { checkNewPassword } from "./password-policy.js";
import { hashPassword } from "./passwords.js";
import type { UserRepository } from "./user-repository.js";
import { boundedText, fieldError, nameList, optionalText, requiredName, sameName } from "./validation.js";

/** SecurityUser as clients send it (pgutil; ProGet's docs also write `mail`). */
export interface UserInput {
  readonly name?: string | null;
  readonly displayName?: string | null;
  readonly email?: string | null;
  readonly mail?: string | null;
  readonly password?: string | null;
  /** Replaces the user's group memberships when given. */
  readonly groups?: readonly (string | null)[] | null;
}

/** SecurityGroup as clients send it (ProGet's docs also write `user`). */
export interface GroupInput {
  readonly name?: string | null;
  readonly users?: readonly (string | null)[] | null;
  readonly user?: readonly (string | null)[] | null;
}

export interface UserService {
  /** Users whose name, display name or e-mail contains `searchTerm` (case-insensitively); all without one. */
  listUsers(searchTerm?: string): Promise<UserView[]>;
  /** Throws conflict when the name is taken, 400 naming the member for bad input. */
  addUser(input: UserInput): Promise<UserView>;
  /** Changes the members given (blank display name or e-mail removes it); throws not_found. */
  editUser(input: UserInput): Promise<UserView>;
  /** False when there was no such user (ProGet: not an error). */
  deleteUser(name: string): Promise<boolean>;

  listGroups(): Promise<GroupView[]>;
  /** Creates the group, or replaces the members of an existing one when `users` is given (ProGet's groups/add). */
  saveGroup(input: GroupInput): Promise<GroupView>;
  deleteGroup(name: string): Promise<boolean>;
  /** Adds or removes one member; throws not_found for an unknown group or user. */
  setMembership(groupName: string, userName: string, member: boolean): Promise<GroupView>;
}

export interface UserServiceDeps {
  readonly users: UserRepository;
  readonly clock: Clock;
}

export function createUserService({ users, clock }: UserServiceDeps): UserService {
  async function groupIds(values: readonly (string | null)[] | null | undefined): Promise<number[] | undefined> {
    if (values === null || values === undefined) return undefined;
    const names = nameList(values, "groups");
    const ids = await users.findGroupIds(names);
    const missing = names.find((name) => !ids.has(name.toLowerCase()));
    if (missing !== undefined) throw fieldError("groups", `no group is named '${missing}'`, "GROUP_NOT_FOUND");
    return names.map((name) => ids.get(name.toLowerCase()) as number);
  }

  async function getGroup(name: string) {
    const group = await users.findGroup(name);
    if (!group) throw notFound("GROUP_NOT_FOUND", `No group is named '${name}'.`);
    return group;
  }

  return {
    async listUsers(searchTerm) {
      const term = optionalText(searchTerm)?.toLowerCase();
      const all = await users.listUsers();
      const matching =
        term === undefined
          ? all
          : all.filter((u) => [u.name, u.displayName, u.email].some((text) => text?.toLowerCase().includes(term)));
      return matching.map(withoutId);
    },

    async addUser(input) {
      const name = userName(input.name);
      const passwordHash = await passwordHashOf(input.password, name);
      const user = await users.insertUser({
        name,
        displayName: boundedText(input.displayName, "displayName", 1000),
        email: boundedText(input.email ?? input.mail, "email", 1000),
        passwordHash,
        groupIds: (await groupIds(input.groups)) ?? [],
        createdAt: clock.now().toISOString(),
      });
      return withoutId(user);
    },

    async editUser(input) {
      const name = requiredName(input.name, "name");
      const current = await users.findUser(name);
      if (!current) throw notFound("USER_NOT_FOUND", `No user is named '${name}'.`);
      const email = input.email ?? input.mail;
      const updated = await users.updateUser(current.id, {
        ...(typeof input.displayName === "string"
          ? { displayName: boundedText(input.displayName, "displayName", 1000) ?? null }
          : {}),
        ...(typeof email === "string" ? { email: boundedText(email, "email", 1000) ?? null } : {}),
        ...(typeof input.password === "string"
          ? { passwordHash: await passwordHashOf(input.password, current.name) }
          : {}),
        ...(input.groups ? { groupIds: await groupIds(input.groups) } : {}),
      });
      return withoutId(updated);
    },

    deleteUser: (name) => users.deleteUser(name),

    async listGroups() {
      return (await users.listGroups()).map(({ name, users: members }) => ({ name, users: members }));
    },

    async saveGroup(input) {
      const name = requiredName(input.name, "name");
      const members = input.users ?? input.user;
      let memberIds: number[] | undefined;
      if (members !== null && members !== undefined) {
        const names = nameList(members, "users");
        const ids = await users.findUserIds(names);
        const missing = names.find((n) => !ids.has(n.toLowerCase()));
        if (missing !== undefined) throw fieldError("users", `no user is named '${missing}'`, "USER_NOT_FOUND");
        memberIds = names.map((n) => ids.get(n.toLowerCase()) as number);
      }
      const group = await users.saveGroup(name, memberIds);
      return { name: group.name, users: group.users };
    },

    deleteGroup: (name) => users.deleteGroup(name),

    async setMembership(groupName, memberName, member) {
      const group = await getGroup(requiredName(groupName, "group"));
      const user = await users.findUser(requiredName(memberName, "user"));
      if (!user) throw notFound("USER_NOT_FOUND", `No user is named '${memberName}'.`);
      await users.setMembership(group.id, user.id, member);
      const updated = await getGroup(group.name);
      return { name: updated.name, users: updated.users };
    },
  };
}

/**
 * A user name that can log in: `:` would split Basic and pseudo-key credentials in the wrong
 * place, and "Anonymous" names everyone in permissions.
 */
function userName(value: string | null | undefined): string {
  const name = requiredName(value, "name");
  if (name.includes(":")) throw fieldError("name", "must not contain ':'", "NAME_INVALID");
  if (sameName(name, ANONYMOUS_NAME)) throw fieldError("name", "'Anonymous' is reserved", "NAME_RESERVED");
  return name;
}

async function passwordHashOf(password: string | null | undefined, userName: string): Promise<string | undefined> {
  if (password === null || password === undefined) return undefined;
  await checkNewPassword(password, userName);
  return hashPassword(password);
}

function withoutId({ id: _id, ...view }: UserView & { id: number }): UserView {
  return view;
}
