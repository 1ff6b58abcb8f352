import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ORPHAN_SWEEP_MS, RESTART_TEXT } from "../../src/areas/configuration/checker.js";
import { leaseApplicationName } from "../../src/storage/postgres/leadership.js";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { INEDOCORE_HEADERS } from "../helpers/configuration.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Configuration checks' restart rule on two nodes of one cluster (docs/cluster-mode.md): each check
 * records the node running it, and the leading node ends, at takeover and then every
 * ORPHAN_SWEEP_MS, only the checks of nodes that are gone; the other node's checks go on.
 * The repository contract test (configuration-collections.test.ts) shows the rule's cases one by
 * one; this shows the nodes recording themselves and the leader applying the rule on its own, long
 * after it took over.
 */
describe.skipIf(!postgresInstalled())("configuration checks on two nodes of one cluster", () => {
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let a: ClusterTestApp;
  let b: ClusterTestApp;
  let deployRoot: string;
  const closed = new Set<ClusterTestApp>();
  const send = (node: ClusterTestApp, options: InjectOptions) =>
    node.app.inject({
      ...options,
      headers: { ...INEDOCORE_HEADERS, "x-apikey": cluster.adminKey, ...(options.headers as object | undefined) },
    });
  const statusOf = async (node: ClusterTestApp, server: string) => {
    const res = await send(node, { method: "GET", url: `/api/configuration/status?server=${server}` });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { status: string; errorText?: string };
  };
  const until = async <T>(what: string, withinMs: number, probe: () => Promise<T | undefined>): Promise<T> => {
    const deadline = Date.now() + withinMs;
    for (;;) {
      const found = await probe();
      if (found !== undefined) return found;
      if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms: ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  /** What a node that died mid-check leaves: an executing collection naming it (no node: none recorded). */
  const leftExecuting = async (server: string, nodeId: string | undefined) => {
    const { rows } = await a.db.pool.query<{ id: number }>(
      `INSERT INTO config_collections (server_id, status, started_at)
       SELECT id, 'executing', $2 FROM servers WHERE name = $1 RETURNING id`,
      [server, new Date().toISOString()],
    );
    const id = rows[0]?.id as number;
    if (nodeId !== undefined) {
      await a.db.pool.query("INSERT INTO config_collection_nodes (collection_id, node_id) VALUES ($1, $2)", [
        id,
        nodeId,
      ]);
    }
    return id;
  };

  beforeAll(async () => {
    azurite = await startAzurite();
    cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    deployRoot = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-cluster-checks-")));
    const env = { WHARF_DEPLOY_ROOT: deployRoot };
    a = await buildClusterTestApp(cluster, { env });
    b = await buildClusterTestApp(cluster, { env });
    for (const name of ["probe", "alive", "crashed", "unregistered", "imported", "checked", "after-loss", "regained"]) {
      const created = await send(a, {
        method: "POST",
        url: `/api/infrastructure/servers/create/${name}`,
        headers: { "content-type": "application/json" },
        payload: JSON.stringify({
          serverType: "local",
          rootPath: path.join(deployRoot, name),
          items: [{ type: "file", path: "/hello.txt", content: "hello\n" }],
        }),
      });
      expect(created.statusCode, created.body).toBe(201);
    }
    // A node that crashed a while ago: its row stays, its heartbeat stopped an hour back.
    await a.db.pool.query(
      "INSERT INTO cluster_nodes (node_id, version, last_heartbeat_at) VALUES ('crashed-node', 'test', now() - interval '1 hour')",
    );
  }, 60_000);
  afterAll(async () => {
    for (const node of [a, b]) if (node !== undefined && !closed.has(node)) await node.close();
    await azurite?.stop();
    if (deployRoot) await fs.rm(deployRoot, { recursive: true, force: true });
  });

  it("records the node that runs a check", async () => {
    expect((await send(b, { method: "POST", url: "/api/configuration/check?server=checked" })).statusCode).toBe(200);
    await until("the check ended", 10_000, async () => {
      const status = (await statusOf(b, "checked")).status;
      return status === "executing" || status === "unknown" ? undefined : status;
    });
    const { rows } = await a.db.pool.query(
      `SELECT c.status, n.node_id FROM config_collections c
         JOIN servers s ON s.id = c.server_id
         LEFT JOIN config_collection_nodes n ON n.collection_id = c.id
        WHERE s.name = 'checked'`,
    );
    expect(rows).toEqual([{ status: "completed", node_id: b.nodeId }]);
  });

  it(
    "the leader ends, long after it took over, the checks of gone nodes and keeps the live node's",
    async () => {
      const nodes = async () => {
        const res = await send(a, { method: "GET", url: "/api/cluster/nodes" });
        return (res.json() as { nodes: { nodeId: string; runsSchedulers: boolean }[] }).nodes;
      };
      const leaderId = await until(
        "a node leads",
        10_000,
        async () => (await nodes()).find((node) => node.runsSchedulers)?.nodeId,
      );
      const follower = leaderId === a.nodeId ? b : a;
      // Ended by the rule at takeover or, if that ran before, by the next periodic run: from then on,
      // only a periodic run ends a check.
      await leftExecuting("probe", "crashed-node");
      await until("the probe ended", ORPHAN_SWEEP_MS + 5_000, async () =>
        (await statusOf(follower, "probe")).status === "error" ? true : undefined,
      );

      await leftExecuting("alive", follower.nodeId);
      await leftExecuting("crashed", "crashed-node");
      await leftExecuting("unregistered", "killed-before-registering");
      await leftExecuting("imported", undefined);
      const crashed = await until("the crashed node's check ended", ORPHAN_SWEEP_MS + 5_000, async () => {
        const status = await statusOf(follower, "crashed");
        return status.status === "error" ? status : undefined;
      });
      expect(crashed.errorText).toBe(RESTART_TEXT);
      // One statement ended them all: the others are as they will stay.
      for (const server of ["unregistered", "imported"]) {
        expect(await statusOf(follower, server)).toMatchObject({ status: "error", errorText: RESTART_TEXT });
      }
      expect((await statusOf(follower, "alive")).status).toBe("executing");
      expect((await statusOf(b, "alive")).status).toBe("executing");
    },
    3 * ORPHAN_SWEEP_MS + 20_000,
  );
  it(
    "a node that lost the lead still runs the checks asked of it, and applies the rule again once it leads again",
    async () => {
      const leaderOf = async () => {
        const res = await send(a, { method: "GET", url: "/api/cluster/nodes" });
        const nodes = (res.json() as { nodes: { nodeId: string; runsSchedulers: boolean }[] }).nodes;
        return nodes.find((node) => node.runsSchedulers)?.nodeId;
      };
      const firstId = await until("a node leads", 10_000, leaderOf);
      const [first, second] = firstId === a.nodeId ? [a, b] : [b, a];
      // PostgreSQL ends the leader's session (an administrator, a restart): the lock passes on.
      await a.db.pool.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [
        leaseApplicationName(first.nodeId, "scheduler"),
      ]);
      await until("the other node leads", 15_000, async () =>
        (await leaderOf()) === second.nodeId ? true : undefined,
      );
      // The old leader hears of the loss at its next session check (5 s at most) and stops scheduling.
      await new Promise((resolve) => setTimeout(resolve, 6_000));
      expect(
        (await send(first, { method: "POST", url: "/api/configuration/check?server=after-loss" })).statusCode,
      ).toBe(200);
      const checked = await until("the check on the old leader ended", 10_000, async () => {
        const status = await statusOf(first, "after-loss");
        return status.status === "executing" || status.status === "unknown" ? undefined : status;
      });
      expect(checked.status).toMatch(/^(current|drifted)$/);

      // The lead comes back to the first node once the second one stops: the rule runs there again.
      await leftExecuting("regained", "crashed-node");
      await second.close();
      closed.add(second);
      await until("the first node leads again", 15_000, async () =>
        (await leaderOf()) === first.nodeId ? true : undefined,
      );
      const regained = await until("the gone node's check ended", ORPHAN_SWEEP_MS + 5_000, async () => {
        const status = await statusOf(first, "regained");
        return status.status === "error" ? status : undefined;
      });
      expect(regained.errorText).toBe(RESTART_TEXT);
    },
    ORPHAN_SWEEP_MS + 60_000,
  );
});
