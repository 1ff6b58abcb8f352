import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { type PostgresServer, postgresInstalled, startPostgres } from "../helpers/postgres.js";
import { buildUpack } from "../helpers/upack-fixtures.js";
import { type ClusterProcesses, clusterProcesses, kill, nodeIdOf } from "./cluster-process.js";
import type { RunningServer } from "./process.js";

/**
 * Real `wharf serve` processes as cluster nodes (issue 18 section 3): one PostgreSQL, one object
 * store (Azurite), the same secret key, each node with a data directory of its own, reached over
 * HTTP as a load balancer would reach them.
 */
describe.skipIf(!postgresInstalled())("wharf serve nodes on one PostgreSQL and one object store", () => {
  let postgres: PostgresServer;
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let processes: ClusterProcesses;
  const nodes: RunningServer[] = [];

  async function startNode(): Promise<RunningServer> {
    const node = await processes.start();
    nodes.push(node);
    return node;
  }

  const call = (node: RunningServer, url: string, init: RequestInit = {}) => processes.call(node, url, init);
  const upload = (node: RunningServer, bytes: Buffer) =>
    call(node, "/upack/main/upload", { method: "PUT", body: new Uint8Array(bytes) });

  interface ClusterView {
    nodes: { nodeId: string; alive: boolean; runsSchedulers: boolean; self: boolean }[];
  }
  const view = async (node: RunningServer) => (await (await call(node, "/api/cluster/nodes")).json()) as ClusterView;

  beforeAll(async () => {
    [postgres, azurite] = await Promise.all([startPostgres(), startAzurite()]);
    cluster = await testCluster(await postgres.createDatabase(), azurite);
    processes = clusterProcesses(cluster);
    // Started together: they migrate the new database one at a time, under the migration lock.
    await Promise.all([startNode(), startNode()]);
    const created = await call(nodes[0] as RunningServer, "/api/management/feeds/create", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "main", feedType: "universal" }),
    });
    expect(created.status).toBe(201);
  }, 90_000);

  afterAll(async () => {
    await processes?.close();
    await azurite?.stop();
    await postgres?.stop();
  });

  it("both nodes joined: /health names each, and the cluster view lists both with one scheduler", async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const ids = [await nodeIdOf(a), await nodeIdOf(b)];
    expect(ids[0]).not.toBe(ids[1]);
    let listed = await view(b);
    // The scheduler lease is taken within a retry period of the start.
    for (let i = 0; i < 100 && !listed.nodes.some((node) => node.runsSchedulers); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      listed = await view(b);
    }
    expect(listed.nodes.map((node) => node.nodeId).sort()).toEqual([...ids].sort());
    expect(listed.nodes.filter((node) => node.runsSchedulers)).toHaveLength(1);
  });

  it("an upload through one node is downloaded through the other at once", async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const bytes = await buildUpack({ name: "across", version: "1.0.0", files: { "f.txt": "x" } });
    expect((await upload(a, bytes)).status).toBe(201);
    const download = await call(b, "/upack/main/download/across/1.0.0");
    expect(download.status).toBe(200);
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("a key revoked through one node is refused by the other within the change feed's bound", async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const created = await call(a, "/api/api-keys/create", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ type: "System", systemApis: ["full-control"] }),
    });
    const { id, key } = (await created.json()) as { id: number; key: string };
    const use = async () => {
      const res = await fetch(`${b.url}/api/management/feeds/list`, { headers: { "x-apikey": key } });
      await res.arrayBuffer();
      return res.status;
    };
    expect(await use()).toBe(200);
    expect(await use()).toBe(200);
    expect((await call(a, `/api/api-keys/delete?id=${id}`, { method: "POST" })).status).toBe(200);
    const answered = performance.now();
    let status = await use();
    while (status === 200 && performance.now() - answered < 2_000) status = await use();
    expect(status).toBe(403);
  });

  it("32 concurrent uploads of one version over both nodes: one version, no 5xx", async () => {
    const [a, b] = nodes as [RunningServer, RunningServer];
    const packages = await Promise.all(
      Array.from({ length: 32 }, (_, i) => buildUpack({ name: "raced", version: "1.0.0", files: { "n.txt": `${i}` } })),
    );
    const statuses = await Promise.all(
      packages.map(async (bytes, i) => {
        const res = await upload(i % 2 === 0 ? a : b, bytes);
        await res.arrayBuffer();
        return res.status;
      }),
    );
    expect(statuses.filter((status) => status >= 500)).toEqual([]);
    const versions = async (node: RunningServer) =>
      (await (await call(node, "/upack/main/versions?name=raced")).json()) as unknown[];
    expect(await versions(a)).toHaveLength(1);
    expect(await versions(b)).toHaveLength(1);
    const fromA = Buffer.from(await (await call(a, "/upack/main/download/raced/1.0.0")).arrayBuffer());
    const fromB = Buffer.from(await (await call(b, "/upack/main/download/raced/1.0.0")).arrayBuffer());
    expect(fromA.equals(fromB)).toBe(true);
    expect(packages.some((bytes) => bytes.equals(fromA))).toBe(true);
  });

  it("a node SIGKILLed during uploads loses no acknowledged upload; the scheduler moves to a live node", async () => {
    const third = await startNode();
    const [a, b] = nodes as [RunningServer, RunningServer];
    // Kill the node that runs the schedulers, so that both halves of the story are seen at once.
    const listed = await view(third);
    const leaderId = listed.nodes.find((node) => node.runsSchedulers)?.nodeId;
    const byId = new Map<string, RunningServer>();
    for (const node of [a, b, third]) byId.set(await nodeIdOf(node), node);
    const victim = byId.get(leaderId ?? "") ?? a;
    const survivors = [a, b, third].filter((node) => node !== victim);
    const acknowledged: string[] = [];
    let killed = false;
    const uploads = Array.from({ length: 24 }, async (_, i) => {
      const version = `3.0.${i}`;
      const bytes = await buildUpack({
        name: "survivor",
        version,
        files: { "r.txt": randomBytes(64).toString("hex") },
      });
      try {
        const res = await upload(i % 2 === 0 ? victim : (survivors[i % survivors.length] as RunningServer), bytes);
        await res.arrayBuffer();
        if (res.status === 201) acknowledged.push(version);
      } catch {
        // The victim's connections die with it: those uploads were never acknowledged.
      }
      if (i === 8 && !killed) {
        killed = true;
        await kill(victim);
      }
    });
    await Promise.all(uploads);
    expect(acknowledged.length).toBeGreaterThan(0);
    const [reader] = survivors as [RunningServer];
    for (const version of acknowledged) {
      const res = await call(reader, `/upack/main/download/survivor/${version}`);
      expect({ version, status: res.status }).toEqual({ version, status: 200 });
      await res.arrayBuffer();
    }
    // PostgreSQL ended the dead node's session at once; a survivor takes the lease within its retry period.
    let after = await view(reader);
    for (let i = 0; i < 150 && !after.nodes.some((n) => n.runsSchedulers && n.nodeId !== leaderId); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = await view(reader);
    }
    const leaders = after.nodes.filter((node) => node.runsSchedulers);
    expect(leaders).toHaveLength(1);
    expect(leaders[0]?.nodeId).not.toBe(leaderId);
    nodes.splice(nodes.indexOf(victim), 1);
  }, 60_000);
});
