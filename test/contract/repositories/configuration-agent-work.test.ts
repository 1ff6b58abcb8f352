import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, expect } from "vitest";
import {
  type AgentWorkRepository,
  createPostgresAgentWorkRepository,
} from "../../../src/areas/configuration/agent-work-repository-postgres.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertAgentServer } from "../../helpers/seed-rows.js";

/**
 * A cluster's agent work (agent-work-repository-postgres.ts, migrations/postgres/0009-agent-work.sql):
 * PostgreSQL only, as the table is (on SQLite the queue is the hub's memory: every test is skipped
 * there). Claims are exclusive across nodes, every write about handed-out work stops at its lease,
 * and only the writes someone waits for notify the cluster.
 */
const T0 = "2026-11-29T10:00:00.000Z";
const LONG = 60;
const pgOnly = (database: TestDatabase) => {
  if (database.kind !== "postgres") throw new Error("PostgreSQL only");
  return database;
};

describeOnBothDatabases("Configuration agent work (cluster)", (database) => {
  const it = itOnPostgres(database);
  const otherNode = otherNodesForBlock(database);
  let work: AgentWorkRepository;
  let agent1: number;
  let agent2: number;
  let listener: pg.Client | undefined;
  const heard: string[] = [];
  let serial = 0;
  const newId = () => `00000000-0000-4000-8000-${String(++serial).padStart(12, "0")}`;

  const addServer = (name: string) => insertAgentServer(database().exec, name, T0);

  /** The notifications of agent_work since the last call (a round trip on the listener first: all have arrived). */
  const notifications = async () => {
    await listener?.query("SELECT 1");
    const tables = heard.splice(0).filter((table) => table === "agent_work");
    return tables.length;
  };

  beforeAll(async () => {
    if (database().kind !== "postgres") return;
    const { postgres } = pgOnly(database());
    work = createPostgresAgentWorkRepository(postgres);
    agent1 = await addServer("Agent1");
    agent2 = await addServer("Agent2");
    listener = new pg.Client({ connectionString: postgres.pool.options.connectionString as string });
    await listener.connect();
    listener.on("notification", (message) => heard.push(message.payload ?? ""));
    await listener.query("LISTEN wharf_changes");
  });
  afterAll(async () => {
    await listener?.end();
  });

  it("hands a server's queued work out once, oldest first, and only to that server; released work is queued again", async () => {
    const [first, second] = [newId(), newId()];
    await work.add({ id: first, serverId: agent1, sealedItem: "item-1" }, LONG, LONG);
    await work.add({ id: second, serverId: agent1, sealedItem: "item-2" }, LONG, LONG);
    expect(await notifications()).toBe(2);
    expect(await work.claim(agent2, LONG)).toEqual([]);
    expect(await work.claim(agent1, LONG)).toEqual([
      { id: first, sealedItem: "item-1" },
      { id: second, sealedItem: "item-2" },
    ]);
    expect(await work.claim(agent1, LONG)).toEqual([]);
    // A claim is quiet: nobody waits for it.
    expect(await notifications()).toBe(0);
    expect(await work.handedOut(agent1, first)).toBe("item-1");
    expect(await work.handedOut(agent2, first)).toBeUndefined();

    await work.release([second]);
    expect(await notifications()).toBe(1);
    expect(await work.handedOut(agent1, second)).toBeUndefined();
    expect(await work.claim(agent1, LONG)).toEqual([{ id: second, sealedItem: "item-2" }]);
    await work.remove([first, second]);
    expect(await work.handedOut(agent1, first)).toBeUndefined();
    expect(await notifications()).toBe(0);
  });

  it("lets two nodes claiming at once take each work exactly once", async () => {
    const ids = Array.from({ length: 20 }, () => newId());
    for (const id of ids) await work.add({ id, serverId: agent2, sealedItem: id }, LONG, LONG);
    const nodes = [
      work,
      createPostgresAgentWorkRepository(otherNode()),
      createPostgresAgentWorkRepository(otherNode()),
    ];
    const claims = await Promise.all(
      nodes.flatMap((node) => [node.claim(agent2, LONG), node.claim(agent2, LONG), node.claim(agent2, LONG)]),
    );
    const taken = claims.flat().map((row) => row.id);
    expect(taken.sort()).toEqual([...ids].sort());
    await work.remove(ids);
  });

  it("carries log lines and the result to the dispatching node's look, which deletes finished work", async () => {
    const id = newId();
    await work.add({ id, serverId: agent1, sealedItem: "item" }, LONG, LONG);
    await work.claim(agent1, LONG);
    await notifications();
    expect(await work.appendLog(agent1, id, [{ level: "info", message: "one" }], LONG)).toBe(true);
    expect(await work.appendLog(agent1, id, [{ level: "warn", message: "two" }], LONG)).toBe(true);
    // A heartbeat (no lines) renews quietly; another server's agent finds no such work.
    expect(await work.appendLog(agent1, id, [], LONG)).toBe(true);
    expect(await work.appendLog(agent2, id, [{ level: "info", message: "stranger" }], LONG)).toBe(false);
    expect(await notifications()).toBe(2);

    expect(await work.progress([id], LONG)).toEqual([
      {
        id,
        lines: [
          { level: "info", message: "one" },
          { level: "warn", message: "two" },
        ],
        outcome: undefined,
        lapsed: false,
      },
    ]);
    // Taken: not returned again. The look is quiet.
    expect(await work.progress([id], LONG)).toEqual([{ id, lines: [], outcome: undefined, lapsed: false }]);
    expect(await notifications()).toBe(0);

    const outcome = { results: [], changes: [] };
    expect(await work.finish(agent2, id, outcome)).toBe(false);
    expect(await work.finish(agent1, id, outcome)).toBe(true);
    expect(await notifications()).toBe(1);
    // Finished: no second result, no more log lines, no downloads.
    expect(await work.finish(agent1, id, { error: "again" })).toBe(false);
    expect(await work.appendLog(agent1, id, [{ level: "info", message: "late" }], LONG)).toBe(false);
    expect(await work.renew(agent1, id, LONG)).toBe(false);
    expect(await work.handedOut(agent1, id)).toBeUndefined();
    expect(await work.progress([id], LONG)).toEqual([{ id, lines: [], outcome, lapsed: false }]);
    expect(await work.progress([id], LONG)).toEqual([]);
  });

  it("ends handed-out work at its lease, on the database's clock: refused to the agent, lapsed to the dispatcher", async () => {
    const id = newId();
    await work.add({ id, serverId: agent1, sealedItem: "item" }, LONG, LONG);
    await work.claim(agent1, 0.3);
    expect(await work.renew(agent1, id, 0.3)).toBe(true);
    await sleep(400);
    expect(await work.renew(agent1, id, LONG)).toBe(false);
    expect(await work.appendLog(agent1, id, [{ level: "info", message: "late" }], LONG)).toBe(false);
    expect(await work.finish(agent1, id, { results: [], changes: [] })).toBe(false);
    expect(await work.handedOut(agent1, id)).toBeUndefined();
    expect(await work.progress([id], LONG)).toEqual([{ id, lines: [], outcome: undefined, lapsed: true }]);
    expect(await work.progress([id], LONG)).toEqual([]);
  });

  it("keeps queued work while its agent is seen, and hands out no work whose lease or dispatcher lapsed", async () => {
    const [kept, lapsed, abandoned] = [newId(), newId(), newId()];
    await work.add({ id: kept, serverId: agent2, sealedItem: "kept" }, 0.3, LONG);
    await work.add({ id: lapsed, serverId: agent1, sealedItem: "lapsed" }, 0.3, LONG);
    await work.add({ id: abandoned, serverId: agent1, sealedItem: "abandoned" }, LONG, 0.3);
    await work.renewQueued(agent2, LONG);
    await sleep(400);
    expect(await work.claim(agent1, LONG)).toEqual([]);
    expect(await work.claim(agent2, LONG)).toEqual([{ id: kept, sealedItem: "kept" }]);
    // A dispatcher's look renews what it still waits for; any node deletes what nobody renewed.
    expect(await work.removeAbandoned()).toBe(1);
    expect((await work.progress([kept, lapsed, abandoned], LONG)).map((row) => row.id).sort()).toEqual(
      [kept, lapsed].sort(),
    );
  });
});
