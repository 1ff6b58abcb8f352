import type { LightMyRequestResponse } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { expectError, sendJson, startFakeUpstream } from "../helpers/connector-fixtures.js";

/**
 * A connector whose URL the fetch guard would refuse is refused as it is created or its URL
 * changed (400 CONNECTOR_URL_REFUSED, naming WHARF_FETCH_ALLOW_PRIVATE where that would change
 * it), and its requests are still checked as they are made, since DNS answers change.
 */

const CONNECTORS = "/api/management/connectors";
const apps: TestApp[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((t) => t.close()));
});

async function app(env: Record<string, string> = {}): Promise<TestApp> {
  const t = await buildTestApp({ env });
  apps.push(t);
  return t;
}

function post(t: TestApp, url: string, payload: object): Promise<LightMyRequestResponse> {
  return t.app.inject({ method: "POST", url, headers: { "x-apikey": t.adminKey }, payload });
}

const create = (t: TestApp, url: string, name = "up") =>
  post(t, `${CONNECTORS}/create`, { name, url, feedType: "universal" });

async function names(t: TestApp): Promise<string[]> {
  const res = await t.app.inject({ url: `${CONNECTORS}/list`, headers: { "x-apikey": t.adminKey } });
  return res.json<{ name: string }[]>().map((connector) => connector.name);
}

describe("a connector's URL, as it is set", () => {
  it.each([
    ["http://127.0.0.1:8624/upack/feed", "127.0.0.1: it is a loopback address"],
    ["http://[::1]/upack/feed", "[::1]: it is a loopback address"],
    ["http://10.0.0.5:8624/upack/feed", "10.0.0.5: it is a private address"],
    ["https://192.168.1.20/upack/feed", "192.168.1.20: it is a private address"],
    ["http://localhost:8624/upack/feed", "localhost: it resolves to a loopback address"],
  ])("refuses %s by default, naming WHARF_FETCH_ALLOW_PRIVATE, and stores nothing", async (url, reason) => {
    const t = await app();
    const res = await create(t, url);
    expectError(res, 400, `Refused a connector to ${reason}`, "unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true");
    expect(res.headers["x-wharf-error"]).toBe("CONNECTOR_URL_REFUSED");
    expect(await names(t)).toEqual([]);
  });

  it("refuses metadata and link-local addresses even when private ones are allowed, without naming a setting", async () => {
    const t = await app({ WHARF_FETCH_ALLOW_PRIVATE: "true" });
    for (const url of ["http://169.254.169.254/latest", "http://[fe80::1]/x", "http://metadata.google.internal/x"]) {
      const res = await create(t, url);
      expectError(res, 400, "which is never allowed");
      expect(res.body).not.toContain("WHARF_");
    }
    expect(await names(t)).toEqual([]);
  });

  it("accepts private and loopback upstreams once WHARF_FETCH_ALLOW_PRIVATE=true", async () => {
    const t = await app({ WHARF_FETCH_ALLOW_PRIVATE: "true" });
    expect((await create(t, "http://127.0.0.1:8624/upack/a", "a")).statusCode).toBe(201);
    expect((await create(t, "http://localhost:8624/upack/b", "b")).statusCode).toBe(201);
    expect((await create(t, "http://10.0.0.5/upack/c", "c")).statusCode).toBe(201);
  });

  it("accepts a name that does not resolve yet (set up offline, or before the upstream exists)", async () => {
    const t = await app();
    const res = await create(t, "https://packages.wharf-upstream.invalid/upack/feed");
    expect(res.statusCode, res.body).toBe(201);
  });

  it("checks a changed URL as on create, and leaves other changes of a stored connector alone", async () => {
    const t = await app();
    expect((await create(t, "https://upstream.invalid/upack/feed")).statusCode).toBe(201);
    const moved = await post(t, `${CONNECTORS}/update/up`, { url: "http://127.0.0.1:9/upack/feed" });
    expectError(moved, 400, "Refused a connector to 127.0.0.1", "WHARF_FETCH_ALLOW_PRIVATE");
    // A connector stored under WHARF_FETCH_ALLOW_PRIVATE=true, before the setting was turned off.
    await writeFromOutside(t, "UPDATE connectors SET url = ? WHERE name_key = 'up'", "http://127.0.0.1:9/upack/feed");
    const timeout = await post(t, `${CONNECTORS}/update/up`, { timeout: 5 });
    expect(timeout.statusCode, timeout.body).toBe(200);
    expect(timeout.json()).toMatchObject({ url: "http://127.0.0.1:9/upack/feed", timeout: 5 });
  });
});

describe("a connector's requests, as they are made", () => {
  it("are refused when its upstream is (or has become) loopback, naming the connector and the setting", async () => {
    const fake = await startFakeUpstream((_request, response) => sendJson(response, 200, []));
    try {
      const t = await app();
      expect((await create(t, "https://upstream.invalid/upack/feed")).statusCode).toBe(201);
      const feed = await post(t, "/api/management/feeds/create", {
        name: "proxy",
        feedType: "universal",
        connectors: ["up"],
      });
      expect(feed.statusCode, feed.body).toBe(201);
      // What DNS changing its answer, or a connector stored under a more lenient setting, leads to.
      await writeFromOutside(t, "UPDATE connectors SET url = ? WHERE name_key = 'up'", `${fake.base}/upack/feed`);
      const res = await t.app.inject({ url: "/upack/proxy/packages?name=x", headers: { "x-apikey": t.adminKey } });
      expectError(res, 502, "Connector 'up'", "loopback", "unless the server sets WHARF_FETCH_ALLOW_PRIVATE=true");
      expect(fake.requests).toHaveLength(0);
    } finally {
      await fake.close();
    }
  });
});
