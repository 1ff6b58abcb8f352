import { beforeAll, expect, it } from "vitest";
import {
  createPermissionRepository,
  type NewPermission,
  type NewTask,
  type PermissionRepository,
} from "../../../src/areas/security/permission-repository.js";
import { createPostgresPermissionRepository } from "../../../src/areas/security/permission-repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed, insertGroup, insertUser } from "../../helpers/seed-rows.js";

const CREATED = "2026-11-29T10:00:00.000Z";
const BUILT_IN = ["Administer", "Manage Feeds", "Publish Packages", "View & Download Packages"];
const newTask = (name: string, fields: Partial<NewTask> = {}): NewTask => ({
  name,
  description: undefined,
  feedScoped: true,
  attributes: ["Feeds_ViewFeed"],
  ...fields,
});

const repositoryOn = (database: TestDatabase): PermissionRepository =>
  database.kind === "sqlite"
    ? createPermissionRepository(database.sqlite)
    : createPostgresPermissionRepository(database.postgres);

describeOnBothDatabases("Permission repository", (database) => {
  let access: PermissionRepository;
  const openOtherNode = otherNodesForBlock(database);
  let otherNode: PermissionRepository;
  let userId: number;
  let groupId: number;
  let feedId: number;
  let viewTaskId: number;
  const permission = (fields: Partial<NewPermission>): NewPermission => ({
    principal: { type: "anonymous" },
    taskId: viewTaskId,
    feedId: undefined,
    feedGroup: undefined,
    deny: false,
    ...fields,
  });

  beforeAll(async () => {
    const db = database();
    access = repositoryOn(db);
    if (db.kind === "postgres") otherNode = createPostgresPermissionRepository(openOtherNode());
    userId = await insertUser(db.exec, "Ann", CREATED);
    groupId = await insertGroup(db.exec, "Ops");
    feedId = await insertFeed(db.exec, "main", CREATED);
    viewTaskId = (await access.findTask("view & download packages"))?.id ?? 0;
  });

  it("lists built-in tasks first, then custom ones, each by name case-insensitively", async () => {
    const zeta = await access.insertTask(newTask("zeta", { description: "Last", attributes: ["A", "B"] }));
    const alpha = await access.insertTask(newTask("Alpha", { feedScoped: false, attributes: ["Admin_ManageFeed"] }));
    expect(zeta).toEqual({
      id: zeta.id,
      name: "zeta",
      description: "Last",
      feedScoped: true,
      attributes: ["A", "B"],
      builtIn: false,
    });
    expect(alpha).toEqual({
      id: alpha.id,
      name: "Alpha",
      feedScoped: false,
      attributes: ["Admin_ManageFeed"],
      builtIn: false,
    });
    const tasks = await access.listTasks();
    expect(tasks.map((t) => [t.name, t.builtIn])).toEqual([
      ...BUILT_IN.map((name) => [name, true]),
      ["Alpha", false],
      ["zeta", false],
    ]);
    expect(tasks.slice(-2)).toEqual([alpha, zeta]);
    expect(tasks[1]).toEqual({
      id: tasks[1]?.id,
      name: "Manage Feeds",
      description: "Allows everything on packages, and managing feed settings and connectors.",
      feedScoped: true,
      attributes: [
        "Feeds_ViewFeed",
        "Feeds_DownloadPackage",
        "Feeds_AddPackage",
        "Feeds_PullPackage",
        "Feeds_OverwritePackage",
        "Feeds_DeletePackage",
        "Feeds_UnlistPackage",
        "Feeds_AcceptPackagePromotions",
        "Feeds_CreateFeed",
        "Feeds_Manage",
        "Admin_ManageFeed",
        "Admin_ManageConnectors",
      ],
      builtIn: true,
    });
  });

  it("finds a task by name case-insensitively, and refuses a taken name", async () => {
    const alpha = (await access.listTasks()).find((t) => t.name === "Alpha");
    expect(await access.findTask("ALPHA")).toEqual(alpha);
    expect(await access.findTask("nothing")).toBeUndefined();
    await expect(access.insertTask(newTask("ALPHA"))).rejects.toMatchObject({ kind: "conflict", code: "TASK_EXISTS" });
    await expect(access.insertTask(newTask("administer"))).rejects.toMatchObject({ code: "TASK_EXISTS" });
  });

  it("stores each kind of permission and lists them in the order granted", async () => {
    const anonymous = await access.insertPermission(permission({}));
    const user = await access.insertPermission(permission({ principal: { type: "user", id: userId }, feedId }));
    const group = await access.insertPermission(
      permission({ principal: { type: "group", id: groupId }, feedGroup: { name: "Team-A" }, deny: true }),
    );
    expect(anonymous).toEqual({
      id: anonymous.id,
      principalType: "anonymous",
      principalName: undefined,
      task: "View & Download Packages",
      feed: undefined,
      feedGroup: undefined,
      deny: false,
    });
    expect(user).toEqual({
      id: user.id,
      principalType: "user",
      principalName: "Ann",
      task: "View & Download Packages",
      feed: "main",
      feedGroup: undefined,
      deny: false,
    });
    expect(group).toEqual({
      id: group.id,
      principalType: "group",
      principalName: "Ops",
      task: "View & Download Packages",
      feed: undefined,
      feedGroup: "Team-A",
      deny: true,
    });
    expect(await access.listPermissions()).toEqual([anonymous, user, group]);
    const [stored] = await database().exec("SELECT feed_group_key FROM permissions WHERE id = ?", [group.id]);
    expect(stored).toEqual({ feed_group_key: "team-a" });
  });

  it("refuses the same permission again (feed group case-insensitively), but not one that differs", async () => {
    const exists = { kind: "conflict", code: "PERMISSION_EXISTS" };
    await expect(access.insertPermission(permission({}))).rejects.toMatchObject(exists);
    await expect(
      access.insertPermission(permission({ principal: { type: "user", id: userId }, feedId })),
    ).rejects.toMatchObject(exists);
    await expect(
      access.insertPermission(
        permission({ principal: { type: "group", id: groupId }, feedGroup: { name: "TEAM-a" }, deny: true }),
      ),
    ).rejects.toMatchObject(exists);
    const denied = await access.insertPermission(permission({ deny: true }));
    const global = await access.insertPermission(permission({ principal: { type: "user", id: userId } }));
    const grouped = await access.insertPermission(
      permission({ principal: { type: "group", id: groupId }, feedGroup: { name: "Team-A" } }),
    );
    expect([denied.deny, global.feed, grouped.feedGroup]).toEqual([true, undefined, "Team-A"]);
    expect(await access.listPermissions()).toHaveLength(6);
  });

  it("refuses a permission whose user, group, task or feed was deleted meanwhile", async () => {
    const concurrent = { kind: "conflict", code: "CONCURRENT_CHANGE" };
    await expect(
      access.insertPermission(permission({ principal: { type: "user", id: 999_999 } })),
    ).rejects.toMatchObject(concurrent);
    await expect(
      access.insertPermission(permission({ principal: { type: "group", id: 999_999 } })),
    ).rejects.toMatchObject(concurrent);
    await expect(access.insertPermission(permission({ taskId: 999_999 }))).rejects.toMatchObject(concurrent);
    await expect(access.insertPermission(permission({ feedId: 999_999 }))).rejects.toMatchObject(concurrent);
    expect(await access.listPermissions()).toHaveLength(6);
  });

  it("deletes a permission once", async () => {
    const [first] = await access.listPermissions();
    expect(await access.deletePermission(first?.id ?? 0)).toBe(true);
    expect(await access.deletePermission(first?.id ?? 0)).toBe(false);
    expect(await access.listPermissions()).toHaveLength(5);
  });

  it("deletes a custom task with its permissions, never a built-in one", async () => {
    const zeta = await access.findTask("zeta");
    if (zeta === undefined) throw new Error("no task zeta");
    const granted = await access.insertPermission(permission({ taskId: zeta.id }));
    expect(await access.deleteTask(zeta.id)).toBe(true);
    expect(await access.deleteTask(zeta.id)).toBe(false);
    expect(await access.findTask("zeta")).toBeUndefined();
    expect((await access.listPermissions()).map((p) => p.id)).not.toContain(granted.id);
    expect(await access.deleteTask(viewTaskId)).toBe(false);
    expect((await access.listTasks()).filter((t) => t.builtIn).map((t) => t.name)).toEqual(BUILT_IN);
  });

  it("loses a feed's and a user's permissions with them", async () => {
    await database().exec("DELETE FROM feeds WHERE id = ?", [feedId]);
    expect((await access.listPermissions()).filter((p) => p.feed !== undefined)).toEqual([]);
    await database().exec("DELETE FROM users WHERE id = ?", [userId]);
    expect((await access.listPermissions()).map((p) => p.principalType)).toEqual(["group", "anonymous", "group"]);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const task = await access.insertTask(newTask("counted"));
    const granted = await access.insertPermission(permission({ taskId: task.id }));
    await access.deletePermission(granted.id);
    await access.deleteTask(task.id);
    expect(db.commits()).toBe(before + 4);
    await access.listPermissions();
    await access.listTasks();
    expect(db.commits()).toBe(before + 4);
  });

  const ROUNDS = 15;

  it("lets exactly one of two nodes grant the same permission; the other gets PERMISSION_EXISTS (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    for (let round = 0; round < ROUNDS; round++) {
      const same = permission({ principal: { type: "group", id: groupId }, feedGroup: { name: `race-${round}` } });
      const results = await Promise.allSettled([access.insertPermission(same), otherNode.insertPermission(same)]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const [refused] = results.filter((r) => r.status === "rejected");
      expect(refused?.reason).toMatchObject({ kind: "conflict", code: "PERMISSION_EXISTS" });
    }
    const raced = (await access.listPermissions()).filter((p) => p.feedGroup?.startsWith("race-"));
    expect(raced).toHaveLength(ROUNDS);
  });

  it("lets exactly one of two nodes create a task name; the other gets TASK_EXISTS (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    for (let round = 0; round < ROUNDS; round++) {
      const results = await Promise.allSettled([
        access.insertTask(newTask(`race-${round}`)),
        otherNode.insertTask(newTask(`RACE-${round}`)),
      ]);
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
      const [refused] = results.filter((r) => r.status === "rejected");
      expect(refused?.reason).toMatchObject({ kind: "conflict", code: "TASK_EXISTS" });
    }
  });

  it("answers CONCURRENT_CHANGE to a grant racing the deletion of its task, never a driver error (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    for (let round = 0; round < ROUNDS; round++) {
      const task = await access.insertTask(newTask(`doomed-${round}`));
      const [granted, deleted] = await Promise.allSettled([
        access.insertPermission(permission({ taskId: task.id })),
        otherNode.deleteTask(task.id),
      ]);
      expect(deleted).toEqual({ status: "fulfilled", value: true });
      if (granted.status === "rejected") expect(granted.reason).toMatchObject({ code: "CONCURRENT_CHANGE" });
      expect((await access.listPermissions()).filter((p) => p.task === task.name)).toEqual([]);
    }
  });
});
