import { beforeAll, expect, it } from "vitest";
import {
  type Collection,
  type CollectionsRepository,
  createCollectionsRepository,
} from "../../../src/areas/configuration/collections-repository.js";
import { createPostgresCollectionsRepository } from "../../../src/areas/configuration/collections-repository-postgres.js";
import type { ItemResult } from "../../../src/drift/model.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock } from "../../helpers/postgres-races.js";

const T1 = "2026-11-29T10:00:00.000Z";
const T2 = "2026-11-29T10:01:00.000Z";
const T3 = "2026-11-29T10:02:00.000Z";

/** The repository of the node `nodeId` (PostgreSQL); SQLite's one process has no node. */
const repositoryOn = (database: TestDatabase, nodeId = "this-node"): CollectionsRepository =>
  database.kind === "sqlite"
    ? createCollectionsRepository(database.sqlite)
    : createPostgresCollectionsRepository(database.postgres, nodeId);

const result = (key: string, fields: Partial<ItemResult> = {}): ItemResult => ({
  type: "file",
  key,
  role: null,
  status: "current",
  differences: [],
  ...fields,
});

describeOnBothDatabases("Configuration collections repository (checks)", (database) => {
  let collections: CollectionsRepository;
  let serverId: number;
  let otherServerId: number;
  let roleId: number;
  let first: number;
  const otherNode = otherNodesForBlock(database);
  const raceIt = itOnPostgres(database);

  const insertServer = async (name: string) =>
    (
      (await database().exec(
        `INSERT INTO servers (name, name_key, server_type, drift_mode, active, root_path, variables, created_at, modified_at)
         VALUES (?, ?, 'local', 'reportOnly', 1, '/srv', '{}', ?, ?) RETURNING id`,
        [name, name.toLowerCase(), T1, T1],
      )) as [{ id: number }]
    )[0].id;
  /** PostgreSQL: a cluster_nodes row whose last heartbeat was that many seconds ago (SQLite: nothing). */
  const registerNode = async (nodeId: string, secondsAgo: number) => {
    const db = database();
    if (db.kind !== "postgres") return;
    await db.exec(
      `INSERT INTO cluster_nodes (node_id, version, last_heartbeat_at) VALUES (?, 'test', now() - make_interval(secs => ?))
       ON CONFLICT (node_id) DO UPDATE SET last_heartbeat_at = EXCLUDED.last_heartbeat_at`,
      [nodeId, secondsAgo],
    );
  };

  beforeAll(async () => {
    const db = database();
    collections = repositoryOn(db);
    serverId = await insertServer("web");
    otherServerId = await insertServer("db");
    [{ id: roleId }] = (await db.exec(
      "INSERT INTO roles (name, name_key, variables, created_at, modified_at) VALUES ('Base', 'base', '{}', ?, ?) RETURNING id",
      [T1, T1],
    )) as [{ id: number }];
  });

  const executing = (id: number, startedAt: string, server = serverId): Collection => ({
    id,
    serverId: server,
    jobId: undefined,
    status: "executing",
    startedAt,
    endedAt: undefined,
    errorText: undefined,
    items: 0,
    drifted: 0,
    unknown: 0,
  });

  it("begins one executing collection per server; a second begin answers undefined until it ended", async () => {
    expect(await collections.latestOf(serverId)).toBeUndefined();
    expect(await collections.latestCompletedOf(serverId)).toBeUndefined();
    expect(await collections.executingOf(serverId)).toBeUndefined();
    const id = (await collections.begin(serverId, undefined, T1)) as number;
    first = id;
    expect(id).toBeTypeOf("number");
    expect(await collections.begin(serverId, undefined, T2)).toBeUndefined();
    expect(await collections.executingOf(serverId)).toEqual(executing(id, T1));
    expect(await collections.get(id)).toEqual(executing(id, T1));
    expect(await collections.latestOf(serverId)).toEqual(executing(id, T1));
    expect(await collections.latestCompletedOf(serverId)).toBeUndefined();
    expect(await collections.get(999_999)).toBeUndefined();
  });

  it("completes with the items in their order, role ids by lowercased name, and the counts", async () => {
    const id = (await collections.executingOf(serverId))?.id as number;
    await collections.complete(
      id,
      T2,
      [
        result("/b", {
          role: "BASE",
          status: "drifted",
          differences: [{ property: "hash", desired: "a", actual: "b" }],
        }),
        result("/a", { status: "unknown", error: "cannot read" }),
        result("/c", { role: "Gone", status: "drifted" }),
        result("/d"),
      ],
      new Map([["base", roleId]]),
    );
    const completed: Collection = {
      ...executing(id, T1),
      status: "completed",
      endedAt: T2,
      items: 4,
      drifted: 2,
      unknown: 1,
    };
    expect(await collections.get(id)).toEqual(completed);
    expect(await collections.latestCompletedOf(serverId)).toEqual(completed);
    expect(await collections.executingOf(serverId)).toBeUndefined();
    expect(await collections.items(id)).toEqual([
      {
        type: "file",
        key: "/b",
        roleId,
        roleName: "BASE",
        status: "drifted",
        differences: [{ property: "hash", desired: "a", actual: "b" }],
        errorText: undefined,
      },
      {
        type: "file",
        key: "/a",
        roleId: undefined,
        roleName: undefined,
        status: "unknown",
        differences: [],
        errorText: "cannot read",
      },
      {
        type: "file",
        key: "/c",
        roleId: undefined,
        roleName: "Gone",
        status: "drifted",
        differences: [],
        errorText: undefined,
      },
      {
        type: "file",
        key: "/d",
        roleId: undefined,
        roleName: undefined,
        status: "current",
        differences: [],
        errorText: undefined,
      },
    ]);
    expect(await collections.items(999_999)).toEqual([]);
    // Ended already: neither completing nor failing it again changes it.
    await collections.fail(id, T3, "late");
    await collections.complete(id, T3, [], new Map());
    expect((await collections.get(id))?.status).toBe("completed");
    expect((await collections.get(id))?.endedAt).toBe(T2);
  });

  it("fails an executing collection with its text; completes one with no items", async () => {
    const failed = (await collections.begin(serverId, undefined, T2)) as number;
    await collections.fail(failed, T3, "unreachable");
    const error = { ...executing(failed, T2), status: "error", endedAt: T3, errorText: "unreachable" };
    expect(await collections.get(failed)).toEqual(error);
    expect(await collections.latestOf(serverId)).toEqual(error);
    const empty = (await collections.begin(serverId, undefined, T3)) as number;
    await collections.complete(empty, T3, [], new Map());
    expect(await collections.get(empty)).toMatchObject({ status: "completed", items: 0, drifted: 0, unknown: 0 });
    expect(await collections.items(empty)).toEqual([]);
    expect((await collections.recentOf(serverId)).map((c) => c.id)).toEqual([empty, failed, first]);
  });

  it("prunes all but the most recent, never an executing one, only of its server, with their items", async () => {
    const before = (await collections.recentOf(serverId)).map((c) => c.id);
    const running = (await collections.begin(serverId, undefined, T3)) as number;
    const other = (await collections.begin(otherServerId, undefined, T3)) as number;
    await collections.prune(serverId, 1);
    // The executing one is the most recent: it is kept, and so is it only.
    expect((await collections.recentOf(serverId)).map((c) => c.id)).toEqual([running]);
    expect(await collections.items(before[2] as number)).toEqual([]);
    expect((await collections.recentOf(otherServerId)).map((c) => c.id)).toEqual([other]);
    await collections.complete(running, T3, [result("/x")], new Map());
    const next = (await collections.begin(serverId, undefined, T3)) as number;
    await collections.fail(next, T3, "x");
    await collections.prune(serverId, 5);
    expect((await collections.recentOf(serverId)).map((c) => c.id)).toEqual([next, running]);
    await collections.prune(serverId, 1);
    expect((await collections.recentOf(serverId)).map((c) => c.id)).toEqual([next]);
    expect(await collections.recentOf(999_999)).toEqual([]);
  });

  it("ends the executing collections of a process that is gone in error (the restart rule), says how many", async () => {
    const again = (await collections.begin(serverId, undefined, T3)) as number;
    // SQLite: the process starting; PostgreSQL: the leader, another node than this one, which is unregistered.
    const rule = repositoryOn(database(), "leading-node");
    expect(await rule.endOrphaned(T3, "Wharf stopped")).toBe(2);
    expect(await collections.get(again)).toMatchObject({ status: "error", endedAt: T3, errorText: "Wharf stopped" });
    expect(await collections.executingOf(otherServerId)).toBeUndefined();
    expect(await rule.endOrphaned(T3, "Wharf stopped")).toBe(0);
  });

  it("keeps the ending when the check's process ends it late: no completion, failure or items", async () => {
    const server = await insertServer("late");
    // PostgreSQL: a node whose heartbeat stopped, which later comes back to end its check.
    await registerNode("late-node", 3600);
    const late = repositoryOn(database(), "late-node");
    const id = (await late.begin(server, undefined, T1)) as number;
    expect(await repositoryOn(database(), "leading-node").endOrphaned(T2, "Wharf stopped")).toBe(1);
    await late.complete(id, T3, [result("/late", { status: "drifted" })], new Map());
    await late.fail(id, T3, "late failure");
    expect(await late.get(id)).toEqual({
      ...executing(id, T1, server),
      status: "error",
      endedAt: T2,
      errorText: "Wharf stopped",
    });
    expect(await late.items(id)).toEqual([]);
    expect(await late.latestCompletedOf(server)).toBeUndefined();
  });

  raceIt("keeps live nodes' checks and ends those of nodes gone, unregistered or unknown", async () => {
    const db = database();
    const servers = await Promise.all(["n1", "n2", "n3", "n4", "n5", "n6"].map((name) => insertServer(name)));
    const [live, slow, own, dead, unregistered, imported] = servers as [number, number, number, number, number, number];
    await registerNode("live-node", 0);
    // Silent for more than one heartbeat (10 s), fewer than three: one late beat is not death.
    await registerNode("slow-node", 15);
    await registerNode("dead-node", 40);
    const begin = async (node: string, server: number) =>
      (await repositoryOn(db, node).begin(server, undefined, T1)) as number;
    const leader = repositoryOn(db, "leading-node");
    const ids = {
      live: await begin("live-node", live),
      slow: await begin("slow-node", slow),
      // The node running the rule is alive, whatever its heartbeat (it has no row here).
      own: await leader.begin(own, undefined, T1),
      dead: await begin("dead-node", dead),
      unregistered: await begin("never-registered", unregistered),
    };
    // Copied from SQLite by `wharf cluster import`: it records no node.
    await db.exec("INSERT INTO config_collections (server_id, status, started_at) VALUES (?, 'executing', ?)", [
      imported,
      T1,
    ]);
    const importedId = (await collections.executingOf(imported))?.id as number;

    expect(await leader.endOrphaned(T2, "Wharf stopped")).toBe(3);
    for (const id of [ids.dead, ids.unregistered, importedId]) {
      expect(await collections.get(id)).toMatchObject({ status: "error", endedAt: T2, errorText: "Wharf stopped" });
    }
    for (const id of [ids.live, ids.slow, ids.own]) {
      expect((await collections.get(id as number))?.status).toBe("executing");
    }
    // The live node's check ends as it would have.
    await repositoryOn(db, "live-node").complete(ids.live, T3, [result("/live")], new Map());
    expect(await collections.get(ids.live)).toMatchObject({ status: "completed", endedAt: T3, items: 1 });
    expect(await leader.endOrphaned(T3, "Wharf stopped")).toBe(0);
    for (const id of [ids.slow, ids.own]) await collections.fail(id as number, T3, "done");
  });

  it("refuses a collection for a server that does not exist as the driver reports it on both", async () => {
    await expect(collections.begin(999_999, undefined, T1)).rejects.toThrow();
  });

  raceIt("lets exactly one of two nodes begin a check of one server at once", async () => {
    const nodes = [
      createPostgresCollectionsRepository(otherNode(), "node-a"),
      createPostgresCollectionsRepository(otherNode(), "node-b"),
    ];
    for (let round = 0; round < 5; round += 1) {
      const ids = await Promise.all(nodes.map((node) => node.begin(otherServerId, undefined, T1)));
      const won = ids.filter((id) => id !== undefined);
      expect(won).toHaveLength(1);
      expect((await collections.executingOf(otherServerId))?.id).toBe(won[0]);
      await collections.fail(won[0] as number, T2, "done");
    }
  });

  it("tells the node's caches of each write at once, and of no restart rule that ended nothing (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const id = (await collections.begin(serverId, undefined, T1)) as number;
    await collections.complete(id, T2, [result("/y")], new Map());
    await collections.prune(serverId, 10);
    expect(await collections.endOrphaned(T3, "x")).toBe(0);
    expect(db.commits()).toBe(before + 3);
    await repositoryOn(db, "never-registered").begin(serverId, undefined, T3);
    expect(await collections.endOrphaned(T3, "x")).toBe(1);
    expect(db.commits()).toBe(before + 5);
  });
});
