import { hostname } from "node:os";
import pg from "pg";
import { describe, it, expect, beforeAll, afterAll } from "vitest";
import { defaultNodeId, listClusterNodes, registerNode } from "../../src/storage/postgres/cluster-nodes.js";
import { openPostgres, type PostgresPool } from "../../src/storage/postgres/connection.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { startClusterNodeProcess } from "../helpers/cluster-node-process.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { type SharedPostgres, testPostgres } from "../helpers/shared-postgres.js";

/**
 * The cluster page's data against a real PostgreSQL migrated with the real migrations: nodes
 * register, heartbeat, read as not alive once their heartbeat is older than the limit (a killed
 * process), and leave on a graceful stop.
 */
const HEARTBEAT_MS = 200;
/** Several heartbeats, so that a slow one on a busy machine does not read as a dead node. */
const STALE_AFTER_MS = 2_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!(await condition())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(20);
  }
}

describe("defaultNodeId", () => {
  it("is the hostname with a random part, new for every call", () => {
    const [first, second] = [defaultNodeId(), defaultNodeId()];
    expect(first.startsWith(`${hostname().slice(0, 30)}-`)).toBe(true);
    expect(first).toMatch(/-[0-9a-f]{6}$/);
    expect(first).not.toBe(second);
    expect(defaultNodeId("x".repeat(300))).toHaveLength(37);
  });
});

describe.skipIf(!postgresInstalled())("cluster nodes in PostgreSQL", () => {
  let server: SharedPostgres;
  let url: string;
  let pool: PostgresPool;

  beforeAll(async () => {
    server = testPostgres();
    url = await server.createDatabase();
    pool = openPostgres(url, { applicationName: "wharf test" });
    await migratePostgres(pool);
  });

  afterAll(async () => {
    await pool?.end();
  });

  const list = () => listClusterNodes(pool, { staleAfterMs: STALE_AFTER_MS });
  const find = async (nodeId: string) => (await list()).find((node) => node.nodeId === nodeId);

  it("lists live nodes, marks a killed one not alive once its heartbeat is stale, and forgets one that stops", async () => {
    const errors: Error[] = [];
    const local = await registerNode(pool, {
      nodeId: "node-a",
      version: "1.2.3",
      url: "http://10.0.0.1:8624",
      heartbeatMs: HEARTBEAT_MS,
      onError: (error) => errors.push(error),
    });
    const child = await startClusterNodeProcess({ url, nodeId: "node-b", heartbeatMs: HEARTBEAT_MS });
    try {
      // tsx compiles the helper first: slow on a busy machine.
      await child.waitForLine("registered", 30_000);
      const listed = await list();
      expect(listed.map((node) => [node.nodeId, node.alive])).toEqual([
        ["node-a", true],
        ["node-b", true],
      ]);
      const a = listed[0];
      expect(a).toMatchObject({ version: "1.2.3", url: "http://10.0.0.1:8624" });
      expect(listed[1]).toMatchObject({ version: "test", url: null });
      expect(a?.lastHeartbeatAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(a?.startedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(a?.secondsSinceHeartbeat).toBeGreaterThanOrEqual(0);
      expect(a?.secondsSinceHeartbeat).toBeLessThan(STALE_AFTER_MS / 1000);

      // A crash: no goodbye, the row stays and its heartbeat ages.
      await child.kill();
      await waitFor(async () => (await find("node-b"))?.alive === false, 15_000, "node-b listed not alive");
      const afterCrash = await list();
      const b = afterCrash.find((node) => node.nodeId === "node-b");
      expect(b?.secondsSinceHeartbeat).toBeGreaterThanOrEqual(STALE_AFTER_MS / 1000);
      const aNow = afterCrash.find((node) => node.nodeId === "node-a");
      expect(aNow?.alive).toBe(true);
      expect(aNow?.startedAt).toBe(a?.startedAt);
      expect(Date.parse(aNow?.lastHeartbeatAt ?? "")).toBeGreaterThan(Date.parse(a?.lastHeartbeatAt ?? ""));

      await local.stop();
      expect((await list()).map((node) => node.nodeId)).toEqual(["node-b"]);
      expect(errors).toEqual([]);
    } finally {
      await child.kill();
      await local.stop();
      await pool.query("DELETE FROM cluster_nodes");
    }
  });

  it("puts back a row removed while the node runs, and never notifies other nodes' caches", async () => {
    const listener = new pg.Client({ connectionString: url });
    await listener.connect();
    const notified: string[] = [];
    listener.on("notification", (message) => notified.push(message.payload ?? ""));
    await listener.query("LISTEN wharf_changes");
    try {
      const node = await registerNode(pool, { nodeId: "node-q", version: "1.0.0", heartbeatMs: HEARTBEAT_MS });
      const first = await find("node-q");
      await waitFor(
        async () => (await find("node-q"))?.lastHeartbeatAt !== first?.lastHeartbeatAt,
        5_000,
        "a heartbeat",
      );

      await pool.query("DELETE FROM cluster_nodes WHERE node_id = 'node-q'");
      await waitFor(async () => (await find("node-q")) !== undefined, 5_000, "the row put back by a heartbeat");
      expect((await find("node-q"))?.alive).toBe(true);
      expect((await find("node-q"))?.startedAt).not.toBe(first?.startedAt);

      await node.stop();
      expect(await find("node-q")).toBeUndefined();
      // Registration, heartbeats, removal and stop: none of them may empty the nodes' caches.
      // The probe, sent last, proves the listener hears what arrives.
      await pool.query("SELECT pg_notify('wharf_changes', 'probe')");
      await waitFor(() => notified.includes("probe"), 5_000, "the probe notification");
      expect(notified).toEqual(["probe"]);
    } finally {
      await listener.end();
    }
  });

  it("reports failing heartbeats instead of throwing them, and still stops", async () => {
    const own = openPostgres(url, { applicationName: "wharf test doomed" });
    const errors: Error[] = [];
    const node = await registerNode(own, {
      nodeId: "node-doomed",
      version: "1.0.0",
      heartbeatMs: HEARTBEAT_MS,
      onError: (error) => errors.push(error),
    });
    await own.end();
    await waitFor(() => errors.length >= 2, 5_000, "two failed heartbeats reported");
    await node.stop();
    // The final DELETE failed too: the row stays behind and will read as not alive.
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(await find("node-doomed")).toBeDefined();
    await pool.query("DELETE FROM cluster_nodes WHERE node_id = 'node-doomed'");
  });
});
