import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { InjectOptions } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createConnectors } from "../../src/areas/connectors/index.js";
import { createHealthScheduler } from "../../src/areas/connectors/health.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { loadSecretKeys } from "../../src/storage/secret-keys.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { basic, createFeedKey, createSystemKey, createUser, grant, newKey } from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";

/**
 * Connector health (docs/seed-api.md area D; docs/compat.md 6.1): checks through the fetch guard against
 * local upstreams (so WHARF_FETCH_ALLOW_PRIVATE=true where one is reached), on demand and on the
 * schedule; the health endpoints' shapes, statuses and privileges.
 */

const CONNECTORS = "/api/management/connectors";
const HEALTH = "/api/connector-health";
const ALLOW_PRIVATE = { WHARF_FETCH_ALLOW_PRIVATE: "true" };
const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
type Method = NonNullable<InjectOptions["method"]>;

interface Upstream {
  readonly base: string;
  readonly requests: { url: string; authorization: string | undefined }[];
  /** Answers every request with this status from now on. */
  status: number;
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
}

/** A tiny universal feed: answers `status` with `[]`, and records what it was asked. */
async function startUpstream(): Promise<Upstream> {
  let server: Server | undefined;
  const requests: Upstream["requests"] = [];
  const upstream = {
    base: "",
    requests,
    status: 200,
    stop: () => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())),
    restart: async () => {
      await listen(port);
    },
  };
  const handle = (request: IncomingMessage, response: ServerResponse) => {
    requests.push({ url: request.url ?? "", authorization: request.headers.authorization });
    response.writeHead(upstream.status, { "content-type": "application/json" }).end("[]");
  };
  const listen = (at: number) =>
    new Promise<Server>((resolve) => {
      const started = createServer(handle);
      server = started;
      started.listen(at, "127.0.0.1", () => resolve(started));
    });
  const port = ((await listen(0)).address() as AddressInfo).port;
  upstream.base = `http://127.0.0.1:${port}`;
  return upstream;
}

interface HealthJson {
  id: number;
  name: string;
  url: string;
  state: string;
  errorMessage: string | null;
  lastChecked: string | null;
}

/** Exactly the seed's members, with errorMessage only for errors and lastChecked only once checked. */
function expectHealthShape(health: HealthJson): void {
  expect(Object.keys(health).sort()).toEqual(["errorMessage", "id", "lastChecked", "name", "state", "url"]);
  expect(Number.isInteger(health.id)).toBe(true);
  if (health.state === "error") expect(typeof health.errorMessage).toBe("string");
  else expect(health.errorMessage).toBeNull();
  if (health.state === "unknown") expect(health.lastChecked).toBeNull();
  else expect(health.lastChecked).toMatch(ISO_UTC);
}

function helpers(t: TestApp) {
  const admin = { "x-apikey": t.adminKey };
  const call = (method: Method, url: string, payload?: object) =>
    t.app.inject({ method, url, headers: admin, ...(payload ? { payload } : {}) });
  return {
    call,
    async create(payload: object): Promise<number> {
      expect((await call("POST", `${CONNECTORS}/create`, payload)).statusCode).toBe(201);
      const name = (payload as { name: string }).name;
      const all = expectJson(await call("GET", HEALTH), 200) as HealthJson[];
      return (all.find((h) => h.name === name) as HealthJson).id;
    },
    async health(id: number): Promise<HealthJson> {
      const health = expectJson(await call("GET", `${HEALTH}/${id}`), 200) as HealthJson;
      expectHealthShape(health);
      return health;
    },
    async check(name: string): Promise<HealthJson> {
      const health = expectJson(await call("POST", `${CONNECTORS}/check/${name}`), 200) as HealthJson;
      expectHealthShape(health);
      return health;
    },
  };
}

describe("connector health checks", () => {
  let t: TestApp;
  let upstream: Upstream;
  let h: ReturnType<typeof helpers>;

  beforeAll(async () => {
    upstream = await startUpstream();
    t = await buildTestApp({ env: ALLOW_PRIVATE });
    h = helpers(t);
  });
  afterAll(async () => {
    await t.close();
    await upstream.stop().catch(() => undefined);
  });

  it("goes unknown -> healthy -> error (upstream stopped) -> healthy, asking for one package with Basic credentials", async () => {
    const id = await h.create({
      name: "main",
      url: `${upstream.base}/upack/internal/`,
      feedType: "universal",
      username: "bob",
      password: "pw:with:colons",
    });
    expect(await h.health(id)).toEqual({
      id,
      name: "main",
      url: `${upstream.base}/upack/internal`,
      state: "unknown",
      errorMessage: null,
      lastChecked: null,
    });

    const before = Date.now();
    const healthy = await h.check("MAIN");
    expect(healthy).toMatchObject({ id, name: "main", state: "healthy", errorMessage: null });
    expect(Date.parse(healthy.lastChecked as string)).toBeGreaterThanOrEqual(before - 5);
    expect(upstream.requests.at(-1)).toEqual({
      url: "/upack/internal/packages?count=1",
      authorization: `Basic ${Buffer.from("bob:pw:with:colons").toString("base64")}`,
    });
    expect(await h.health(id)).toEqual(healthy);

    await upstream.stop();
    const down = await h.check("main");
    expect(down.state).toBe("error");
    expect(down.errorMessage).toContain("ECONNREFUSED");
    expect(await h.health(id)).toEqual(down);

    await upstream.restart();
    expect((await h.check("main")).state).toBe("healthy");
  });

  it("an upstream answering an error status is unhealthy, with the status in the message", async () => {
    await h.create({ name: "flaky", url: upstream.base, feedType: "universal" });
    upstream.status = 503;
    try {
      const res = await h.check("flaky");
      expect(res).toMatchObject({ state: "error", errorMessage: "HTTP 503 Service Unavailable" });
      expect(upstream.requests.at(-1)).toEqual({ url: "/packages?count=1", authorization: undefined });
      upstream.status = 401;
      expect((await h.check("flaky")).errorMessage).toBe("HTTP 401 Unauthorized");
    } finally {
      upstream.status = 200;
    }
  });

  it("a connector of another type is checked at its URL itself", async () => {
    await h.create({ name: "nuget", url: `${upstream.base}/v3/index.json`, feedType: "NuGet" });
    expect((await h.check("nuget")).state).toBe("healthy");
    expect(upstream.requests.at(-1)?.url).toBe("/v3/index.json");
  });

  it("an upstream that never answers is an error after the connector's timeout", async () => {
    const silent = createServer(() => undefined); // accepts, never answers
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      await h.create({ name: "silent", url: `http://127.0.0.1:${port}`, feedType: "universal", timeout: 1 });
      const started = Date.now();
      const res = await h.check("silent");
      const elapsed = Date.now() - started;
      expect(res.state).toBe("error");
      expect(res.errorMessage).toBe("Fetching from 127.0.0.1 timed out after 1000 ms.");
      expect(elapsed).toBeGreaterThanOrEqual(900);
      expect(elapsed).toBeLessThan(5000);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("the fetch guard refuses metadata addresses even when private upstreams are allowed", async () => {
    // Refused as it is set (connector-url-check.test.ts); here, one whose name has come to resolve there.
    await h.create({ name: "metadata", url: "http://metadata-upstream.invalid/", feedType: "universal" });
    await writeFromOutside(t, "UPDATE connectors SET url = 'http://169.254.169.254/' WHERE name_key = 'metadata'");
    const res = await h.check("metadata");
    expect(res.state).toBe("error");
    expect(res.errorMessage).toContain("Refused to fetch from 169.254.169.254");
    expect(res.errorMessage).toContain("metadata");
  });

  it("changing the upstream forgets its health; other changes keep it", async () => {
    expect((await h.check("main")).state).toBe("healthy");
    expectJson(await h.call("POST", `${CONNECTORS}/update/main`, { timeout: 7, filters: ["x.*"] }), 200);
    const id = (await h.check("main")).id;
    expect((await h.health(id)).state).toBe("healthy");
    expectJson(await h.call("POST", `${CONNECTORS}/update/main`, { password: "changed" }), 200);
    expect((await h.health(id)).state).toBe("unknown");
    await h.check("main");
    expectJson(await h.call("POST", `${CONNECTORS}/update/main`, { url: `${upstream.base}/upack/other` }), 200);
    expect(await h.health(id)).toMatchObject({
      state: "unknown",
      lastChecked: null,
      url: `${upstream.base}/upack/other`,
    });
  });

  it("a check of an unknown connector is 404", async () => {
    expectText(await h.call("POST", `${CONNECTORS}/check/ghost`), 404, "The connector 'ghost' was not found.");
  });

  it("the due checks run each connector never checked or checked an interval ago, and no other", async () => {
    const service = createConnectors({
      db: t.database,
      clock: { now: () => new Date() },
      config: t.config,
      feeds: { listFeeds: async () => [] },
      secrets: loadSecretKeys(t.config).box,
    });
    expectJson(await h.call("POST", `${CONNECTORS}/update/main`, { url: `${upstream.base}/upack/again` }), 200);
    const changes = await service.checkDue(3_600_000);
    expect(changes.map((c) => c.after.name)).toEqual(["main"]);
    expect(changes[0]?.before.state).toBe("unknown");
    expect(changes[0]?.after.health.state).toBe("healthy");
    expect(await service.checkDue(3_600_000)).toEqual([]);
    // Four at a time: they finish in any order.
    const all = (await service.checkDue(0)).map((c) => c.after.name).sort();
    expect(all).toEqual(["flaky", "main", "metadata", "nuget", "silent"]);
  });
});

describe("loopback upstreams without WHARF_FETCH_ALLOW_PRIVATE", () => {
  it("are refused by the guard before any connection is made", async () => {
    const upstream = await startUpstream();
    const t = await buildTestApp();
    try {
      const h = helpers(t);
      // Refused as it is set (connector-url-check.test.ts); here, one stored under WHARF_FETCH_ALLOW_PRIVATE=true.
      await h.create({ name: "local", url: "http://local-upstream.invalid", feedType: "universal" });
      await writeFromOutside(t, "UPDATE connectors SET url = ? WHERE name_key = 'local'", upstream.base);
      const res = await h.check("local");
      expect(res.state).toBe("error");
      expect(res.errorMessage).toContain("Refused to fetch from 127.0.0.1");
      expect(upstream.requests).toEqual([]);
    } finally {
      await t.close();
      await upstream.stop();
    }
  });
});

describe("scheduled health checks", () => {
  let upstream: Upstream;
  beforeAll(async () => {
    upstream = await startUpstream();
  });
  afterAll(async () => upstream.stop().catch(() => undefined));

  async function waitFor(read: () => Promise<string>, state: string): Promise<void> {
    const deadline = Date.now() + 8000;
    while ((await read()) !== state) {
      if (Date.now() > deadline) throw new Error(`still not ${state}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it("run from ready to close at WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES, without a request", async () => {
    const t = await buildTestApp({ env: { ...ALLOW_PRIVATE, WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "0.01" } });
    try {
      const h = helpers(t);
      const id = await h.create({ name: "scheduled", url: upstream.base, feedType: "universal" });
      await waitFor(async () => (await h.health(id)).state, "healthy");
      upstream.status = 500;
      await waitFor(async () => (await h.health(id)).state, "error");
      expect((await h.health(id)).errorMessage).toBe("HTTP 500 Internal Server Error");
    } finally {
      upstream.status = 200;
      await t.close();
    }
    // Closed: the timer is gone, so the upstream hears nothing more.
    const heard = upstream.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(upstream.requests.length).toBe(heard);
  });

  it("do not run with the default interval (an hour) during a short test", async () => {
    const t = await buildTestApp({ env: ALLOW_PRIVATE });
    try {
      const h = helpers(t);
      const id = await h.create({ name: "idle", url: upstream.base, feedType: "universal" });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect((await h.health(id)).state).toBe("unknown");
    } finally {
      await t.close();
    }
  });
});

describe("the health scheduler", () => {
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  it("runs one tick at a time, reports errors instead of throwing, and stop() aborts and waits", async () => {
    const errors: unknown[] = [];
    let ticks = 0;
    let release: () => void = () => undefined;
    let seen: AbortSignal | undefined;
    const scheduler = createHealthScheduler({
      intervalMs: 3_600_000,
      tick: async (signal) => {
        ticks++;
        seen = signal;
        await new Promise<void>((resolve) => {
          release = resolve;
          signal.addEventListener("abort", () => resolve());
        });
        if (ticks === 1) throw new Error("database is busy");
      },
      onError: (error) => errors.push(error),
    });
    stops.push(() => scheduler.stop());
    scheduler.start();
    const first = scheduler.run();
    expect(scheduler.run()).toBe(first); // no overlap
    release();
    await first;
    expect(errors.map(String)).toEqual(["Error: database is busy"]);

    const second = scheduler.run();
    await scheduler.stop();
    await second;
    expect(seen?.aborted).toBe(true);
    expect(ticks).toBe(2);
    expect(errors).toHaveLength(1); // an aborted tick's failure is not an error
  });

  it("0 means off: start() sets no timer", async () => {
    let ticks = 0;
    const scheduler = createHealthScheduler({
      intervalMs: 0,
      tick: async () => {
        ticks++;
      },
      onError: () => undefined,
    });
    stops.push(() => scheduler.stop());
    scheduler.start();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ticks).toBe(0);
  });
});

describe("health endpoints: shapes and statuses", () => {
  let t: TestApp;
  let h: ReturnType<typeof helpers>;
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    t = await buildTestApp();
    h = helpers(t);
    for (const name of ["zeta", "Alpha", "mid"]) {
      ids[name] = await h.create({
        name,
        url: `https://${name.toLowerCase()}.example.com/upack/f`,
        feedType: "universal",
      });
    }
  });
  afterAll(async () => t.close());

  it("lists every connector ordered by name with exactly the seed's members", async () => {
    const list = expectJson(await h.call("GET", HEALTH), 200) as HealthJson[];
    expect(list.map((c) => c.name)).toEqual(["Alpha", "mid", "zeta"]);
    list.forEach(expectHealthShape);
    expect(list[0]).toEqual({
      id: ids.Alpha,
      name: "Alpha",
      url: "https://alpha.example.com/upack/f",
      state: "unknown",
      errorMessage: null,
      lastChecked: null,
    });
  });

  it("answers HEAD for both endpoints", async () => {
    for (const url of [HEALTH, `${HEALTH}/${ids.mid}`]) {
      const res = await h.call("HEAD", url);
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe("");
    }
  });

  it("404 for an unknown, zero, negative or non-numeric id, or one with ../ or %2e%2e", async () => {
    const traversal = ["..", "%2e%2e", `..%2f${ids.mid}`, `%2e%2e%2f${ids.mid}`, `${ids.mid}%2f..`];
    for (const id of ["99999", "0", "-1", "abc", "1.0", "mid", "99999999999999999999", ...traversal]) {
      expectText(await h.call("GET", `${HEALTH}/${id}`), 404);
    }
  });

  it("privileges: the connector-health scope or Feeds_Manage; 401 for anonymous without a grant", async () => {
    const url = `${HEALTH}/${ids.mid}`;
    const get = (headers: Record<string, string>, target = url) =>
      t.app.inject({ method: "GET", url: target, headers });
    const anonymous = await get({});
    expectText(anonymous, 401);
    expect(anonymous.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
    expectText(await get({}, `${HEALTH}/424242`), 401); // no hint whether an id exists

    for (const apis of [["feeds"], ["releases"]] as const) {
      const res = await get({ "x-apikey": await createSystemKey(t.database, apis) });
      expectText(res, 403);
      expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    }
    expectText(await get({ "x-apikey": newKey("unknown") }, HEALTH), 403);
    // A feed named like the connector: its key and its feed-scoped grants still reach no connector.
    const feed = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": t.adminKey },
      payload: { name: "mid", feedType: "universal" },
    });
    expectJson(feed, 201);
    expectText(await get({ "x-apikey": await createFeedKey(t.database, "mid", ["view", "add", "delete"]) }), 403);
    expectJson(await get({ "x-apikey": await createSystemKey(t.database, ["connector-health"]) }), 200);
    expectJson(await get({ "x-apikey": await createSystemKey(t.database, ["connector-health"]) }, HEALTH), 200);

    const plain = await createUser(t.database, "plain", "plain-pw");
    await grant(t.database, { user: plain, attributes: ["Feeds_ViewFeed", "Admin_ManageFeed"] });
    expectText(await get(basic("plain", "plain-pw")), 403);
    const scoped = await createUser(t.database, "scoped", "scoped-pw");
    await grant(t.database, { user: scoped, attributes: ["Feeds_Manage"], feed: "mid" });
    expectText(await get(basic("scoped", "scoped-pw")), 403);
    const manager = await createUser(t.database, "manager", "manager-pw");
    await grant(t.database, { user: manager, attributes: ["Feeds_Manage"] });
    expectJson(await get(basic("manager", "manager-pw")), 200);
    expectJson(await get(basic("manager", "manager-pw"), HEALTH), 200);

    await grant(t.database, { anonymous: true, attributes: ["Feeds_Manage"] });
    expectJson(await get({}), 200);
  });
});

describe("WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES", () => {
  it("defaults to an hour, takes fractions and 0 (off), and refuses the rest", () => {
    expect(loadConfig({}).connectorHealthIntervalMs).toBe(3_600_000);
    expect(loadConfig({ WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "0" }).connectorHealthIntervalMs).toBe(0);
    expect(loadConfig({ WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "0.5" }).connectorHealthIntervalMs).toBe(30_000);
    expect(loadConfig({ WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "1440" }).connectorHealthIntervalMs).toBe(86_400_000);
    for (const bad of ["-1", "abc", "0.001", "40000", "1e3"]) {
      expect(() => loadConfig({ WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: bad }), bad).toThrow(ConfigError);
    }
  });
});
