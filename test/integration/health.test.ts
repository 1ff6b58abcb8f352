import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPostgres } from "../../src/storage/metadata-db.js";
import { NODE_HEARTBEAT_MS } from "../../src/storage/postgres/cluster-nodes.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { testPostgres } from "../helpers/shared-postgres.js";

const DATABASE = testsRunOnPostgres() ? "PostgreSQL" : "SQLite";

/**
 * Takes the app's database away: SQLite's connection closed; PostgreSQL's database closed to new
 * connections and the node's sessions ended, as when the server is gone. Returns what gives it back
 * (PostgreSQL: so that the node can unregister as it closes).
 */
async function makeDatabaseUnusable(t: TestApp): Promise<() => Promise<void>> {
  if (!isPostgres(t.database)) {
    t.db.close();
    return async () => {};
  }
  const name = new URL(t.config.databaseUrl ?? "").pathname.slice(1);
  const admin = new pg.Client({ connectionString: testPostgres().url });
  await admin.connect();
  // Not even a superuser connects to a database that allows no connections.
  await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
  await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", [name]);
  return async () => {
    try {
      await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    } finally {
      await admin.end();
    }
  };
}

describe("health, version and cross-cutting headers", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t.close());

  it.each(["/health", "/health/json", "/health?format=json"])(
    "GET %s answers the JSON pgutil requires, without a key",
    async (url) => {
      const res = await t.app.inject({ method: "GET", url });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      const body = res.json();
      expect(body).toMatchObject({
        databaseStatus: "OK",
        licenseStatus: "OK",
        serviceStatus: "OK",
        applicationName: "Wharf",
      });
      expect(typeof body.versionNumber).toBe("string");
      expect(typeof body.releaseNumber).toBe("string");
    },
  );

  it("names the node and its database, and a cluster node's change feed (one machine has none)", async () => {
    const body = (await t.app.inject({ method: "GET", url: "/health" })).json();
    expect(body.node).toEqual({
      id: expect.stringMatching(/^.+-[0-9a-f]{6}$/),
      database: DATABASE,
      ...(testsRunOnPostgres() ? { changeFeed: "OK" } : {}),
    });
  });

  it("GET /api/cluster/nodes lists this node alone, for administrators only", async () => {
    const anonymous = await t.app.inject({ method: "GET", url: "/api/cluster/nodes" });
    expect(anonymous.statusCode).toBe(401);
    const wrongKey = await t.app.inject({
      method: "GET",
      url: "/api/cluster/nodes",
      headers: { "x-apikey": "no-such-key-1234567" },
    });
    expect(wrongKey.statusCode).toBe(403);
    const metricsOnly = await createSystemKey(t.database, ["metrics"]);
    const narrow = await t.app.inject({
      method: "GET",
      url: "/api/cluster/nodes",
      headers: { "x-apikey": metricsOnly },
    });
    expect(narrow.statusCode).toBe(403);
    const res = await t.app.inject({ method: "GET", url: "/api/cluster/nodes", headers: { "x-apikey": t.adminKey } });
    expect(res.statusCode).toBe(200);
    const id = (await t.app.inject({ method: "GET", url: "/health" })).json().node.id;
    const { secondsSinceHeartbeat } = res.json().nodes[0];
    if (testsRunOnPostgres()) {
      // By the database's clock, since this node's last heartbeat (every NODE_HEARTBEAT_MS).
      expect(secondsSinceHeartbeat).toBeGreaterThanOrEqual(0);
      expect(secondsSinceHeartbeat).toBeLessThan(NODE_HEARTBEAT_MS / 1000 + 5);
    } else {
      expect(secondsSinceHeartbeat).toBe(0);
    }
    expect(res.json()).toEqual({
      database: DATABASE,
      nodes: [
        {
          nodeId: id,
          version: expect.any(String),
          url: null,
          startedAt: expect.any(String),
          lastHeartbeatAt: expect.any(String),
          secondsSinceHeartbeat: expect.any(Number),
          alive: true,
          runsSchedulers: true,
          self: true,
        },
      ],
    });
  });

  it("answers 500 with Error statuses when the database is unusable", async () => {
    const broken = await buildTestApp();
    const giveBack = await makeDatabaseUnusable(broken);
    try {
      const res = await broken.app.inject({ method: "GET", url: "/health" });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toMatchObject({ databaseStatus: "Error" });
    } finally {
      await giveBack();
      await broken.close();
    }
  });

  it("GET /api/version answers text starting with ProGet (Jenkins plugin check)", async () => {
    const res = await t.app.inject({ method: "GET", url: "/api/version" });
    expect(res.statusCode).toBe(200);
    expect(res.body.startsWith("ProGet")).toBe(true);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
  });

  it("sends the ProGet version headers on every response, errors included", async () => {
    for (const url of ["/health", "/no/such/thing"]) {
      const res = await t.app.inject({ method: "GET", url });
      expect(res.headers["x-proget-version"]).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
      expect(res.headers["x-proget-edition"]).toBe("free");
      expect(res.headers["x-request-id"]).toBeTruthy();
    }
  });

  it("answers unknown URLs with a plain-text 404", async () => {
    const res = await t.app.inject({ method: "GET", url: "/no/such/thing" });
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toContain("No endpoint");
  });
});

describe("malformed URLs", () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t.close());

  it.each([
    ["bad percent-encoding", "/api/management/feeds/get/%ZZ", 400],
    ["an over-long parameter", `/api/management/feeds/get/${"a".repeat(5000)}`, 414],
  ])("answers %s with a plain-text client error", async (_what, url, status) => {
    const res = await t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey } });
    expect(res.statusCode).toBe(status);
    expect(res.headers["content-type"]).toBe("text/plain");
  });
});
