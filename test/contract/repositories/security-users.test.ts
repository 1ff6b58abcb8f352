import { beforeAll, expect, it } from "vitest";
import {
  createUserRepository,
  type NewUser,
  type UserRepository,
} from "../../../src/areas/security/user-repository.js";
import { createPostgresUserRepository } from "../../../src/areas/security/user-repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const newUser = (name: string, fields: Partial<NewUser> = {}): NewUser => ({
  name,
  displayName: undefined,
  email: undefined,
  passwordHash: undefined,
  groupIds: [],
  createdAt: CREATED,
  ...fields,
});

const repositoryOn = (database: TestDatabase): UserRepository =>
  database.kind === "sqlite" ? createUserRepository(database.sqlite) : createPostgresUserRepository(database.postgres);

describeOnBothDatabases("User repository", (database) => {
  let users: UserRepository;
  /** On PostgreSQL, a second node: the same database through a pool of its own. */
  const openOtherNode = otherNodesForBlock(database);
  let otherNode: UserRepository;
  const count = async (sql: string, params: readonly unknown[] = []) =>
    Number((await database().exec(sql, params))[0]?.["n"]);

  const existingUser = async (name: string) => {
    const found = await users.findUser(name);
    if (found === undefined) throw new Error(`no user ${name}`);
    return found;
  };
  const existingGroup = async (name: string) => {
    const found = await users.findGroup(name);
    if (found === undefined) throw new Error(`no group ${name}`);
    return found;
  };

  beforeAll(() => {
    const db = database();
    users = repositoryOn(db);
    if (db.kind === "postgres") otherNode = createPostgresUserRepository(openOtherNode());
  });

  it("creates groups and users with their memberships, and answers them ordered by name, case-insensitively", async () => {
    const ops = await users.saveGroup("ops", undefined);
    const admins = await users.saveGroup("Admins", undefined);
    expect(ops).toEqual({ id: ops.id, name: "ops", users: [] });
    const zed = await users.insertUser(newUser("Zed", { groupIds: [ops.id, admins.id, ops.id] }));
    const ann = await users.insertUser(
      newUser("ann", { displayName: "Ann A.", email: "ann@example.com", passwordHash: "hash-a", groupIds: [ops.id] }),
    );
    const bob = await users.insertUser(newUser("Bob"));
    expect(zed).toEqual({ id: zed.id, name: "Zed", groups: ["Admins", "ops"] });
    expect(ann).toEqual({ id: ann.id, name: "ann", displayName: "Ann A.", email: "ann@example.com", groups: ["ops"] });
    expect(bob).toEqual({ id: bob.id, name: "Bob", groups: [] });
    expect(await users.listUsers()).toEqual([ann, bob, zed]);
    expect(await users.listGroups()).toEqual([
      { id: admins.id, name: "Admins", users: ["Zed"] },
      { id: ops.id, name: "ops", users: ["ann", "Zed"] },
    ]);
  });

  it("finds users and groups by name, case-insensitively, and their ids in the order asked", async () => {
    const ann = await users.findUser("ANN");
    expect(ann).toEqual({ id: ann?.id, name: "ann", displayName: "Ann A.", email: "ann@example.com", groups: ["ops"] });
    expect(await users.findUser("nobody")).toBeUndefined();
    const ops = await users.findGroup("OPS");
    expect(ops).toEqual({ id: ops?.id, name: "ops", users: ["ann", "Zed"] });
    expect(await users.findGroup("nobody")).toBeUndefined();

    const zed = await users.findUser("zed");
    const ids = await users.findUserIds(["ZED", "nobody", "Ann", "zed"]);
    expect([...ids]).toEqual([
      ["zed", zed?.id],
      ["ann", ann?.id],
    ]);
    const admins = await users.findGroup("admins");
    expect([...(await users.findGroupIds(["Ops", "Admins", "none"]))]).toEqual([
      ["ops", ops?.id],
      ["admins", admins?.id],
    ]);
    expect((await users.findUserIds([])).size).toBe(0);
    expect((await users.findGroupIds([])).size).toBe(0);
  });

  it("refuses a taken name, case-insensitively, and a group deleted meanwhile, leaving nothing behind", async () => {
    await expect(users.insertUser(newUser("ZED"))).rejects.toMatchObject({ kind: "conflict", code: "USER_EXISTS" });
    await expect(users.insertUser(newUser("carol", { groupIds: [999_999] }))).rejects.toMatchObject({
      kind: "conflict",
      code: "CONCURRENT_CHANGE",
    });
    expect(await users.findUser("carol")).toBeUndefined();
    expect((await users.listUsers()).map((u) => u.name)).toEqual(["ann", "Bob", "Zed"]);
  });

  it("changes only the members given: null clears, and groups are replaced", async () => {
    const ann = await existingUser("ann");
    const admins = await existingGroup("admins");
    expect(await users.updateUser(ann.id, {})).toEqual(ann);
    expect(await users.updateUser(ann.id, { displayName: null, passwordHash: "hash-b" })).toEqual({
      id: ann.id,
      name: "ann",
      email: "ann@example.com",
      groups: ["ops"],
    });
    expect(await users.updateUser(ann.id, { email: null, displayName: "Ann", groupIds: [admins.id] })).toEqual({
      id: ann.id,
      name: "ann",
      displayName: "Ann",
      groups: ["Admins"],
    });
    expect((await database().exec("SELECT password_hash FROM users WHERE id = ?", [ann.id]))[0]).toEqual({
      password_hash: "hash-b",
    });
    expect(await users.updateUser(ann.id, { groupIds: [] })).toEqual({
      id: ann.id,
      name: "ann",
      displayName: "Ann",
      groups: [],
    });
  });

  it("refuses to update a user that is gone, and rolls back an update naming a group deleted meanwhile", async () => {
    await expect(users.updateUser(999_999, { displayName: "x" })).rejects.toMatchObject({
      kind: "not_found",
      code: "USER_NOT_FOUND",
    });
    const zed = await existingUser("zed");
    await expect(users.updateUser(zed.id, { displayName: "Z", groupIds: [999_999] })).rejects.toMatchObject({
      kind: "conflict",
      code: "CONCURRENT_CHANGE",
    });
    expect(await users.findUser("zed")).toEqual(zed);
  });

  it("saves a group: an existing one keeps its name and members unless members are given", async () => {
    const bob = await existingUser("bob");
    const ann = await existingUser("ann");
    const ops = await existingGroup("ops");
    expect(await users.saveGroup("OPS", undefined)).toEqual({ id: ops.id, name: "ops", users: ["Zed"] });
    expect(await users.saveGroup("OPS", [bob.id, ann.id, bob.id])).toEqual({
      id: ops.id,
      name: "ops",
      users: ["ann", "Bob"],
    });
    const qa = await users.saveGroup("QA", [bob.id]);
    expect(qa).toEqual({ id: qa.id, name: "QA", users: ["Bob"] });
    expect(await users.saveGroup("qa", [])).toEqual({ id: qa.id, name: "QA", users: [] });
    expect((await users.findUser("bob"))?.groups).toEqual(["ops"]);
  });

  it("refuses a member deleted meanwhile and does not create the group then", async () => {
    await expect(users.saveGroup("new-group", [999_999])).rejects.toMatchObject({
      kind: "conflict",
      code: "CONCURRENT_CHANGE",
    });
    expect(await users.findGroup("new-group")).toBeUndefined();
    const ops = await existingGroup("ops");
    await expect(users.saveGroup("ops", [999_999])).rejects.toMatchObject({ code: "CONCURRENT_CHANGE" });
    expect(await users.findGroup("ops")).toEqual(ops);
  });

  it("adds and removes one member, either of them twice without harm", async () => {
    const qa = await existingGroup("qa");
    const zed = await existingUser("zed");
    await users.setMembership(qa.id, zed.id, true);
    await users.setMembership(qa.id, zed.id, true);
    expect((await users.findGroup("qa"))?.users).toEqual(["Zed"]);
    await users.setMembership(qa.id, zed.id, false);
    await users.setMembership(qa.id, zed.id, false);
    expect((await users.findGroup("qa"))?.users).toEqual([]);
    await expect(users.setMembership(qa.id, 999_999, true)).rejects.toMatchObject({
      kind: "conflict",
      code: "CONCURRENT_CHANGE",
    });
    await expect(users.setMembership(999_999, zed.id, true)).rejects.toMatchObject({ code: "CONCURRENT_CHANGE" });
  });

  it("deletes a user with its memberships, permissions and personal keys; then answers false", async () => {
    const bob = await existingUser("BOB");
    await database().exec(
      "INSERT INTO permissions (principal_type, user_id, task_id, deny) SELECT 'user', ?, id, 0 FROM tasks WHERE name_key = 'administer'",
      [bob.id],
    );
    await database().exec(
      "INSERT INTO api_keys (key_hash, key_type, user_id, created_at) VALUES ('bob-key', 'Personal', ?, ?)",
      [bob.id, CREATED],
    );
    expect(await users.deleteUser("bob")).toBe(true);
    expect(await users.deleteUser("bob")).toBe(false);
    expect(await users.findUser("bob")).toBeUndefined();
    expect((await users.findGroup("ops"))?.users).toEqual(["ann"]);
    expect(await count("SELECT count(*) AS n FROM permissions WHERE user_id = ?", [bob.id])).toBe(0);
    expect(await count("SELECT count(*) AS n FROM api_keys WHERE user_id = ?", [bob.id])).toBe(0);
    expect(await count("SELECT count(*) AS n FROM group_members WHERE user_id = ?", [bob.id])).toBe(0);
  });

  it("deletes a group with its memberships and permissions; then answers false", async () => {
    const ops = await existingGroup("ops");
    await database().exec(
      "INSERT INTO permissions (principal_type, group_id, task_id, deny) SELECT 'group', ?, id, 0 FROM tasks WHERE name_key = 'administer'",
      [ops.id],
    );
    expect(await users.deleteGroup("OPS")).toBe(true);
    expect(await users.deleteGroup("ops")).toBe(false);
    expect(await users.findGroup("ops")).toBeUndefined();
    expect((await users.findUser("ann"))?.groups).toEqual([]);
    expect(await count("SELECT count(*) AS n FROM permissions WHERE group_id = ?", [ops.id])).toBe(0);
    expect(await count("SELECT count(*) AS n FROM group_members WHERE group_id = ?", [ops.id])).toBe(0);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const group = await users.saveGroup("counted", undefined);
    const user = await users.insertUser(newUser("counted"));
    await users.updateUser(user.id, { email: "c@example.com" });
    await users.setMembership(group.id, user.id, true);
    await users.deleteUser("counted");
    await users.deleteGroup("counted");
    expect(db.commits()).toBe(before + 6);
    await users.listUsers();
    await users.findGroup("qa");
    expect(db.commits()).toBe(before + 6);
  });

  // Two nodes at once: each pair must end as one ran after the other, with the domain's answers.
  const ROUNDS = 15;

  it("lets exactly one of two nodes create a name; the other gets USER_EXISTS (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.allSettled([
        users.insertUser(newUser(`race-${round}`)),
        otherNode.insertUser(newUser(`RACE-${round}`)),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const [refused] = results.filter((r) => r.status === "rejected");
      expect(refused?.reason).toMatchObject({ kind: "conflict", code: "USER_EXISTS" });
    }
  });

  it("makes two nodes saving one new group agree on it, its members those of one save (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    const a = await existingUser("race-0");
    const b = await existingUser("race-1");
    for (let round = 0; round < ROUNDS; round++) {
      const [first, second] = await Promise.all([
        users.saveGroup(`team-${round}`, [a.id]),
        otherNode.saveGroup(`TEAM-${round}`, [b.id]),
      ]);
      expect(first.id).toBe(second.id);
      expect(first.name).toBe(second.name);
      const stored = await users.findGroup(`team-${round}`);
      expect([first.users, second.users]).toContainEqual(stored?.users);
      expect(stored?.users).toHaveLength(1);
    }
  });

  it("never merges two nodes' replacements of one group's or one user's members (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    const a = await existingUser("race-2");
    const b = await existingUser("race-3");
    const g1 = await users.saveGroup("merge-1", []);
    const g2 = await users.saveGroup("merge-2", []);
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all([users.saveGroup("merge-1", [a.id]), otherNode.saveGroup("merge-1", [b.id])]);
      expect((await users.findGroup("merge-1"))?.users).toHaveLength(1);
      await Promise.all([
        users.updateUser(a.id, { groupIds: [g1.id] }),
        otherNode.updateUser(a.id, { groupIds: [g2.id] }),
      ]);
      expect((await users.findUser(a.name))?.groups).toHaveLength(1);
    }
  });

  it("answers not_found to an update racing a delete of the user, never a driver error (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    for (let round = 0; round < ROUNDS; round++) {
      const user = await users.insertUser(newUser(`doomed-${round}`));
      const [updated, deleted] = await Promise.allSettled([
        users.updateUser(user.id, { displayName: "D", groupIds: [] }),
        otherNode.deleteUser(user.name),
      ]);
      expect(deleted).toEqual({ status: "fulfilled", value: true });
      if (updated.status === "rejected") expect(updated.reason).toMatchObject({ code: "USER_NOT_FOUND" });
      expect(await users.findUser(user.name)).toBeUndefined();
    }
  });
});
