import { createHash } from "node:crypto";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Two nodes of one cluster in this process (docs/cluster-mode.md): one PostgreSQL, one object store
 * (Azurite), the same secret key; each with its own data directory, change feed and caches. What
 * one node is told, the other answers at once (or within the change feed's bound, for caches).
 */
describe.skipIf(!postgresInstalled())("two nodes on one PostgreSQL and one object store", () => {
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let a: ClusterTestApp;
  let b: ClusterTestApp;
  const admin = () => ({ "x-apikey": cluster.adminKey });
  const send = (node: ClusterTestApp, options: InjectOptions) => node.app.inject(options);

  beforeAll(async () => {
    azurite = await startAzurite();
    cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    a = await buildClusterTestApp(cluster);
    b = await buildClusterTestApp(cluster);
    const created = await send(a, {
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin(),
      payload: { name: "main", feedType: "universal" },
    });
    expect(created.statusCode, created.body).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await azurite?.stop();
  });

  it("each node's /health names it, its database, its package store and its change feed", async () => {
    for (const node of [a, b]) {
      const res = await send(node, { method: "GET", url: "/health" });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        databaseStatus: "OK",
        packageStores: { status: "OK" },
        node: { id: node.nodeId, database: "PostgreSQL", changeFeed: "OK" },
      });
    }
    expect(a.nodeId).not.toBe(b.nodeId);
  });

  it("the cluster view lists both nodes, alive, exactly one of them running the schedulers", async () => {
    type View = {
      database: string;
      nodes: { nodeId: string; alive: boolean; self: boolean; runsSchedulers: boolean }[];
    };
    const ask = async () => {
      const res = await send(b, { method: "GET", url: "/api/cluster/nodes", headers: admin() });
      expect(res.statusCode).toBe(200);
      return res.json() as View;
    };
    let view = await ask();
    // The first node to try takes the scheduler's lease; the other waits without it.
    for (let i = 0; i < 50 && !view.nodes.some((node) => node.runsSchedulers); i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      view = await ask();
    }
    expect(view.nodes.filter((node) => node.runsSchedulers)).toHaveLength(1);
    expect(view.database).toBe("PostgreSQL");
    expect(view.nodes.map((node) => node.nodeId).sort()).toEqual([a.nodeId, b.nodeId].sort());
    expect(view.nodes.every((node) => node.alive)).toBe(true);
    expect(view.nodes.find((node) => node.self)?.nodeId).toBe(b.nodeId);
    // Anonymous callers do not learn the topology.
    expect((await send(b, { method: "GET", url: "/api/cluster/nodes" })).statusCode).toBe(401);
  });

  it("a package uploaded through one node is listed and downloaded through the other at once", async () => {
    const bytes = await buildUpack({ name: "shared", version: "1.0.0", files: { "a.txt": "from node a" } });
    const upload = await send(a, { method: "PUT", url: "/upack/main/upload", headers: admin(), payload: bytes });
    expect(upload.statusCode, upload.body).toBe(201);
    const listed = await send(b, { method: "GET", url: "/upack/main/versions?name=shared", headers: admin() });
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toMatchObject([{ name: "shared", version: "1.0.0" }]);
    const download = await send(b, { method: "GET", url: "/upack/main/download/shared/1.0.0", headers: admin() });
    expect(download.statusCode).toBe(200);
    expect(createHash("sha256").update(download.rawPayload).digest("hex")).toBe(
      createHash("sha256").update(bytes).digest("hex"),
    );
  });

  it("downloads counted on both nodes at once add up exactly", async () => {
    const bytes = await buildUpack({ name: "counted", version: "1.0.0", files: { "c.txt": "count me" } });
    expect(
      (await send(a, { method: "PUT", url: "/upack/main/upload", headers: admin(), payload: bytes })).statusCode,
    ).toBe(201);
    const download = (node: ClusterTestApp) =>
      send(node, { method: "GET", url: "/upack/main/download/counted/1.0.0", headers: admin() });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => download(i % 2 === 0 ? a : b)));
    expect(answers.every((res) => res.statusCode === 200)).toBe(true);
    // Each node writes its counts in batches (within a second); the other node's listing then shows both.
    const count = async () => {
      const res = await send(b, { method: "GET", url: "/upack/main/versions?name=counted", headers: admin() });
      return (res.json() as { downloads: string }[])[0]?.downloads;
    };
    let seen = await count();
    for (let i = 0; i < 50 && seen !== "20"; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await count();
    }
    expect(seen).toBe("20");
  });

  it("a key revoked through one node is refused by the other within the change feed's bound", async () => {
    const created = await send(a, {
      method: "POST",
      url: "/api/api-keys/create",
      headers: admin(),
      payload: { type: "System", systemApis: ["full-control"] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const { id, key } = created.json() as { id: number; key: string };
    const use = () => send(b, { method: "GET", url: "/api/management/feeds/list", headers: { "x-apikey": key } });
    // B caches the key's principal.
    expect((await use()).statusCode).toBe(200);
    expect((await use()).statusCode).toBe(200);
    const revoked = await send(a, { method: "POST", url: `/api/api-keys/delete?id=${id}`, headers: admin() });
    expect(revoked.statusCode).toBe(200);
    const answered = performance.now();
    let status = (await use()).statusCode;
    while (status === 200 && performance.now() - answered < 2_000) {
      await new Promise((resolve) => setTimeout(resolve, 1));
      status = (await use()).statusCode;
    }
    expect(status).toBe(403);
  });

  it("32 concurrent uploads of one version through both nodes end in one version, and no 5xx", async () => {
    const packages = await Promise.all(
      Array.from({ length: 32 }, (_, i) =>
        buildUpack({ name: "raced", version: "2.0.0", files: { "n.txt": `upload ${i}` } }),
      ),
    );
    const answers = await Promise.all(
      packages.map((payload, i) =>
        send(i % 2 === 0 ? a : b, { method: "PUT", url: "/upack/main/upload", headers: admin(), payload }),
      ),
    );
    const statuses = answers.map((res) => res.statusCode);
    expect(
      statuses.filter((status) => status >= 500),
      JSON.stringify(answers.map((r) => r.body)),
    ).toEqual([]);
    expect(statuses.every((status) => status === 201 || status === 200 || status === 409)).toBe(true);
    for (const node of [a, b]) {
      const listed = await send(node, { method: "GET", url: "/upack/main/versions?name=raced", headers: admin() });
      expect(listed.json()).toHaveLength(1);
    }
    // Whichever upload won, both nodes serve the same bytes for it.
    const fromA = await send(a, { method: "GET", url: "/upack/main/download/raced/2.0.0", headers: admin() });
    const fromB = await send(b, { method: "GET", url: "/upack/main/download/raced/2.0.0", headers: admin() });
    expect(fromA.statusCode).toBe(200);
    expect(fromB.rawPayload.equals(fromA.rawPayload)).toBe(true);
    expect(packages.some((bytes) => bytes.equals(fromA.rawPayload))).toBe(true);
  });
});
