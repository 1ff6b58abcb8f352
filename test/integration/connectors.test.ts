import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createSystemKey, createUser, grant, newKey, readOne } from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";

/**
 * Connector management (docs/compat.md 5.3) as a story: create -> read -> conflict -> bad input ->
 * update -> feeds naming connectors -> delete -> gone, then who may do what.
 */

const CONNECTORS = "/api/management/connectors";
const FEEDS = "/api/management/feeds";
type Method = NonNullable<InjectOptions["method"]>;

const DEFAULTS = {
  timeout: 30,
  metadataCacheEnabled: true,
  metadataCacheMinutes: 30,
  metadataCacheCount: 100,
  mergeWithLocalPackages: false,
};

describe("connector management: a connector's life", () => {
  let t: TestApp;
  const call = (method: Method, url: string, payload?: unknown) =>
    t.app.inject({
      method,
      url,
      headers: { "x-apikey": t.adminKey },
      ...(payload === undefined ? {} : { payload: payload as object }),
    });
  const storedPassword = async (name: string) =>
    (
      await readOne<{ password: string | null }>(
        t.database,
        "SELECT password FROM connectors WHERE name_key = ?",
        name.toLowerCase(),
      )
    )?.password;

  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t.close());

  it("creates a connector (POST, 201): URL normalised, type canonical, filters trimmed, password kept but never shown", async () => {
    const res = await call("POST", `${CONNECTORS}/create`, {
      name: "Upstream",
      url: "HTTPS://Proget.Example.com:443/upack/internal/",
      feedType: "ProGet",
      username: "bob",
      password: "s3cret-pw",
      filters: ["Acme.*", " !Acme.Bad* "],
    });
    const body = expectJson(res, 201);
    expect(body).toEqual({
      name: "Upstream",
      url: "https://proget.example.com/upack/internal",
      feedType: "universal",
      ...DEFAULTS,
      username: "bob",
      filters: ["Acme.*", "!Acme.Bad*"],
    });
    expect(res.body).not.toContain("s3cret-pw");
    expect(res.body).not.toContain("password");
    // Encrypted (connector-secrets.test.ts shows it still reaches the upstream as it was given).
    expect(await storedPassword("upstream")).toMatch(/^v1:[0-9a-f]{16}:/);
    expect(await storedPassword("upstream")).not.toContain("s3cret-pw");
    const settings = (await readOne<{ settings: string }>(t.database, "SELECT settings FROM connectors"))?.settings;
    expect(settings).not.toContain("s3cret-pw");
  });

  it("creates with PUT too, with defaults; other feed types are accepted (stored only), in canonical case", async () => {
    const res = await call("PUT", `${CONNECTORS}/create`, {
      name: "nuget.org",
      url: "https://api.nuget.org/v3/index.json",
      feedType: "NuGet",
    });
    expect(expectJson(res, 201)).toEqual({
      name: "nuget.org",
      url: "https://api.nuget.org/v3/index.json",
      feedType: "nuget",
      ...DEFAULTS,
      filters: [],
    });
    const custom = await call("POST", `${CONNECTORS}/create`, {
      name: "alpha",
      url: "http://upstream.invalid:8624/upack/x",
      feedType: "universal",
      timeout: 3600,
      metadataCacheEnabled: false,
      metadataCacheMinutes: 0,
      metadataCacheCount: 1,
      password: "only-a-password",
    });
    expect(expectJson(custom, 201)).toMatchObject({
      timeout: 3600,
      metadataCacheEnabled: false,
      metadataCacheMinutes: 0,
      metadataCacheCount: 1,
    });
    expect(custom.json()).not.toHaveProperty("username");
  });

  it("gets by name case-insensitively (GET, POST, HEAD), never with the password; ?indent pretty-prints", async () => {
    for (const method of ["GET", "POST"] as const) {
      const got = expectJson(await call(method, `${CONNECTORS}/get/UPSTREAM`), 200) as Record<string, unknown>;
      expect(got.name).toBe("Upstream");
      expect(got).not.toHaveProperty("password");
    }
    const head = await call("HEAD", `${CONNECTORS}/get/upstream`);
    expect(head.statusCode).toBe(200);
    const indented = await call("GET", `${CONNECTORS}/get/upstream?indent`);
    expect(indented.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(indented.body).toContain('\n  "name": "Upstream"');
    expect(indented.body).not.toContain("s3cret-pw");
  });

  it("lists every connector ordered by name, case-insensitively, without passwords", async () => {
    const res = await call("GET", `${CONNECTORS}/list`);
    const list = expectJson(res, 200) as { name: string }[];
    expect(list.map((c) => c.name)).toEqual(["alpha", "nuget.org", "Upstream"]);
    expect(res.body).not.toContain("s3cret-pw");
    expect(res.body).not.toContain("only-a-password");
  });

  it("refuses a name already taken in any case (409)", async () => {
    const res = await call("POST", `${CONNECTORS}/create`, {
      name: "upSTREAM",
      url: "https://elsewhere.example.com",
      feedType: "universal",
    });
    expectText(res, 409, "a connector named 'Upstream' already exists");
  });

  it("refuses bad input with 400 and a message naming the problem", async () => {
    const ok = { name: "bad", url: "https://x.example.com/upack/f", feedType: "universal" };
    const cases: [unknown, string][] = [
      [{ ...ok, name: undefined }, "connector name is required"],
      [{ ...ok, name: "has space" }, "connector name 'has space' may contain only"],
      [{ ...ok, name: "x".repeat(101) }, "connector name must be at most 100 characters"],
      [{ ...ok, name: ".." }, "connector name cannot be '..'"],
      [{ ...ok, name: 42 }, "name"],
      [{ ...ok, url: undefined }, "connector url is required"],
      [{ ...ok, url: "ftp://x.example.com/feed" }, "absolute http or https URL"],
      [{ ...ok, url: "/upack/relative" }, "absolute http or https URL"],
      [{ ...ok, url: "https://user:pw@x.example.com/upack/f" }, "must not contain credentials"],
      [{ ...ok, url: "https://x.example.com/upack/f?a=1" }, "must not have a query or a fragment"],
      [{ ...ok, feedType: undefined }, "a valid feed type is required"],
      [{ ...ok, feedType: "gopher" }, "'gopher' is not a known feed type"],
      [{ ...ok, timeout: 0 }, "timeout must be a whole number from 1 to 3600"],
      [{ ...ok, timeout: 3601 }, "timeout must be a whole number from 1 to 3600"],
      [{ ...ok, timeout: 1.5 }, "timeout must be a whole number from 1 to 3600"],
      [{ ...ok, timeout: "30" }, "timeout"],
      [{ ...ok, metadataCacheCount: 0 }, "metadataCacheCount must be a whole number from 1 to 100000"],
      [{ ...ok, metadataCacheMinutes: -1 }, "metadataCacheMinutes must be a whole number from 0 to 525600"],
      [{ ...ok, filters: ["ok.*", " "] }, "filters: a pattern must not be empty"],
      [{ ...ok, filters: ["!"] }, "filters: pattern '!' has nothing after '!'"],
      [{ ...ok, filters: "Acme.*" }, "filters"],
      [{ ...ok, username: "a:b" }, "username must not contain ':'"],
    ];
    for (const [payload, message] of cases) {
      expectText(await call("POST", `${CONNECTORS}/create`, payload), 400, message);
    }
    expect(await readOne(t.database, "SELECT count(*) AS n FROM connectors WHERE name_key = 'bad'")).toEqual({ n: 0 });
    // A body that is not JSON cannot be a connector.
    const text = await t.app.inject({
      method: "POST",
      url: `${CONNECTORS}/create`,
      headers: { "x-apikey": t.adminKey, "content-type": "text/plain" },
      payload: "name=x",
    });
    expectText(text, 415, "JSON");
  });

  it("refuses malformed JSON (400) and a body far larger than a connector (413) before reading it as one", async () => {
    const raw = (method: Method, url: string, payload: string) =>
      t.app.inject({ method, url, headers: { "x-apikey": t.adminKey, "content-type": "application/json" }, payload });
    expectText(await raw("POST", `${CONNECTORS}/create`, '{"name": "half'), 400, "JSON");
    expectText(await raw("PATCH", `${CONNECTORS}/update/upstream`, "[1, 2"), 400, "JSON");
    const huge = JSON.stringify({
      name: "huge",
      url: "https://x.example.com/upack/f",
      feedType: "universal",
      pad: "x".repeat(5_000_000),
    });
    expectText(await raw("POST", `${CONNECTORS}/create`, huge), 413);
    expectText(await call("GET", `${CONNECTORS}/get/huge`), 404);
  });

  it("a name with ../ or %2e%2e in the path names no connector and reaches no other route", async () => {
    const before = (await call("GET", `${CONNECTORS}/list`)).body;
    for (const name of ["..%2fupstream", "%2e%2e%2fupstream", "%2E%2E", "upstream%2f..%2f", "..%5cupstream"]) {
      for (const method of ["GET", "DELETE"] as const) {
        const url = `${CONNECTORS}/${method === "GET" ? "get" : "delete"}/${name}`;
        expectText(await call(method, url), 404);
      }
      expectText(await call("POST", `${CONNECTORS}/update/${name}`, { timeout: 5 }), 404);
    }
    // Unencoded dot segments are resolved before routing, never past the connector's own name.
    expectText(await call("GET", `${CONNECTORS}/get/..`), 404, "No endpoint");
    expectText(await call("DELETE", `${CONNECTORS}/delete/%2e%2e/feeds/delete/proxy`), 404, "No endpoint");
    expect((await call("GET", `${CONNECTORS}/list`)).body).toBe(before);
  });

  it("updates partially (POST and PATCH): omitted members keep, the password stays until replaced or cleared", async () => {
    const sealed = await storedPassword("upstream");
    const updated = expectJson(await call("POST", `${CONNECTORS}/update/upstream`, { timeout: 60 }), 200);
    expect(updated).toMatchObject({
      name: "Upstream",
      timeout: 60,
      username: "bob",
      filters: ["Acme.*", "!Acme.Bad*"],
    });
    expect(await storedPassword("upstream")).toBe(sealed);

    const patched = await call("PATCH", `${CONNECTORS}/update/Upstream`, {
      password: "new-pw",
      filters: ["Other.*"],
      metadataCacheEnabled: null,
    });
    expect(expectJson(patched, 200)).toMatchObject({ filters: ["Other.*"], metadataCacheEnabled: true });
    expect(patched.body).not.toContain("new-pw");
    expect(await storedPassword("upstream")).toMatch(/^v1:/);
    expect(await storedPassword("upstream")).not.toBe(sealed);
    expect(await storedPassword("upstream")).not.toContain("new-pw");

    const cleared = expectJson(
      await call("POST", `${CONNECTORS}/update/upstream`, { username: null, password: null }),
      200,
    );
    expect(cleared).not.toHaveProperty("username");
    expect(await storedPassword("upstream")).toBeNull();

    // A client that read the connector and posts it back changes nothing (the password stays absent).
    const current = expectJson(await call("GET", `${CONNECTORS}/get/upstream`), 200);
    expect(expectJson(await call("POST", `${CONNECTORS}/update/upstream`, current), 200)).toEqual(current);
  });

  it("update: 404 for an unknown connector, 400 for bad input (nothing changed), 409 for a taken name", async () => {
    expectText(
      await call("POST", `${CONNECTORS}/update/nope`, { timeout: 10 }),
      404,
      "The connector 'nope' was not found.",
    );
    expectText(await call("POST", `${CONNECTORS}/update/upstream`, { timeout: 10, url: "mailto:x@y" }), 400);
    expect((expectJson(await call("GET", `${CONNECTORS}/get/upstream`), 200) as { timeout: number }).timeout).toBe(60);
    expectText(await call("POST", `${CONNECTORS}/update/upstream`, { name: "ALPHA" }), 409, "'alpha' already exists");
  });

  it("renames a connector no feed uses", async () => {
    expectJson(await call("POST", `${CONNECTORS}/update/alpha`, { name: "beta" }), 200);
    expectText(await call("GET", `${CONNECTORS}/get/alpha`), 404);
    expectJson(await call("GET", `${CONNECTORS}/get/beta`), 200);
  });

  it("feeds may now name existing connectors (any case, shown as the connector spells it); unknown ones are still 422", async () => {
    const created = await call("POST", `${FEEDS}/create`, {
      name: "proxy",
      feedType: "universal",
      connectors: ["upstream"],
    });
    expect((expectJson(created, 201) as { connectors: string[] }).connectors).toEqual(["Upstream"]);
    expectText(
      await call("POST", `${FEEDS}/create`, { name: "proxy2", feedType: "universal", connectors: ["ghost"] }),
      422,
      "connector 'ghost' does not exist",
    );
    expectJson(await call("POST", `${FEEDS}/update/proxy`, { connectors: ["Upstream", "beta"] }), 200);
  });

  it("refuses to delete a connector feeds use (409 naming them); renaming one carries the feeds along", async () => {
    for (const method of ["POST", "DELETE"] as const) {
      expectText(
        await call(method, `${CONNECTORS}/delete/upstream`),
        409,
        "connector 'Upstream' cannot be deleted while feeds use it ('proxy')",
      );
    }
    const connectorsOfProxy = async () =>
      (expectJson(await call("GET", `${FEEDS}/get/proxy`), 200) as { connectors: string[] }).connectors;
    expectJson(await call("POST", `${CONNECTORS}/update/beta`, { name: "gamma" }), 200);
    expect(await connectorsOfProxy()).toEqual(["Upstream", "gamma"]);
    expect(
      (expectJson(await call("POST", `${CONNECTORS}/update/gamma`, { name: "BETA" }), 200) as { name: string }).name,
    ).toBe("BETA");
    expect(await connectorsOfProxy()).toEqual(["Upstream", "BETA"]);
    expectJson(await call("GET", `${CONNECTORS}/get/upstream`), 200);
  });

  it("deletes with POST and with DELETE once no feed uses it (200, empty); then it is gone (404)", async () => {
    expectJson(await call("POST", `${FEEDS}/update/proxy`, { connectors: [] }), 200);
    const posted = await call("POST", `${CONNECTORS}/delete/upstream`);
    expect(posted.statusCode).toBe(200);
    expect(posted.body).toBe("");
    expect((await call("DELETE", `${CONNECTORS}/delete/BETA`)).statusCode).toBe(200);
    expectText(await call("GET", `${CONNECTORS}/get/upstream`), 404, "was not found");
    expectText(await call("DELETE", `${CONNECTORS}/delete/upstream`), 404);
    expect((expectJson(await call("GET", `${CONNECTORS}/list`), 200) as { name: string }[]).map((c) => c.name)).toEqual(
      ["nuget.org"],
    );
    // Gone for feeds too.
    expectText(await call("POST", `${FEEDS}/update/proxy`, { connectors: ["upstream"] }), 422);
  });
});

describe("connector management: who may do what (as for feeds)", () => {
  let t: TestApp;
  const keys: Record<string, string> = {};
  const FORBIDDEN = PERMISSION_DENIED_MESSAGE;
  const body = (name: string) => ({ name, url: "https://x.example.com/upack/f", feedType: "universal" });
  const as = (headers: Record<string, string>, method: Method, url: string, payload?: object) =>
    t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
  const key = (k: string | undefined): Record<string, string> => (k === undefined ? {} : { "x-apikey": k });
  const names = (res: LightMyRequestResponse) => (expectJson(res, 200) as { name: string }[]).map((c) => c.name);

  const WRITES: [Method, string, object?][] = [
    ["POST", `${CONNECTORS}/create`, body("new-one")],
    ["POST", `${CONNECTORS}/update/main`, { timeout: 5 }],
    ["DELETE", `${CONNECTORS}/delete/main`],
    ["POST", `${CONNECTORS}/check/main`],
  ];
  const READS: [Method, string][] = [
    ["GET", `${CONNECTORS}/get/main`],
    ["GET", `${CONNECTORS}/get/no-such-connector`],
  ];

  beforeAll(async () => {
    t = await buildTestApp();
    expect((await as(key(t.adminKey), "POST", `${CONNECTORS}/create`, body("main"))).statusCode).toBe(201);
    expect(
      (await as(key(t.adminKey), "POST", `${FEEDS}/create`, { name: "f", feedType: "universal" })).statusCode,
    ).toBe(201);
    keys.feeds = await createSystemKey(t.database, ["feeds"]);
    keys.releases = await createSystemKey(t.database, ["releases"]);
    keys.health = await createSystemKey(t.database, ["connector-health"]);
    keys.feedKey = await createFeedKey(t.database, "f", ["view", "add", "promote", "delete"]);
    keys.unknown = newKey("unknown");
  });
  afterAll(async () => t.close());

  it("anonymous: 401 with a Basic challenge; the list answers 200 with nothing", async () => {
    for (const [method, url, payload] of [...WRITES, ...READS]) {
      const res = await as({}, method, url, payload);
      expectText(res, 401);
      expect(res.headers["www-authenticate"], `${method} ${url}`).toBe('Basic realm="Wharf"');
    }
    expect(names(await as({}, "GET", `${CONNECTORS}/list`))).toEqual([]);
  });

  it("unknown keys: 403 with the standard sentence everywhere, list included", async () => {
    for (const [method, url, payload] of [...WRITES, ...READS, ["GET", `${CONNECTORS}/list`] as const]) {
      expect(expectText(await as(key(keys.unknown), method, url, payload), 403)).toBe(FORBIDDEN);
    }
  });

  it("feed keys, and System keys without the feeds scope, may do nothing and list nothing", async () => {
    for (const k of [keys.feedKey, keys.releases, keys.health]) {
      for (const [method, url, payload] of [...WRITES, ...READS]) {
        expectText(await as(key(k), method, url, payload), 403, FORBIDDEN);
      }
      expect(names(await as(key(k), "GET", `${CONNECTORS}/list`))).toEqual([]);
    }
  });

  it("a System key with the feeds scope may do everything", async () => {
    const headers = key(keys.feeds);
    expectJson(await as(headers, "POST", `${CONNECTORS}/create`, body("by-key")), 201);
    expectJson(await as(headers, "GET", `${CONNECTORS}/get/by-key`), 200);
    expectJson(await as(headers, "PATCH", `${CONNECTORS}/update/by-key`, { timeout: 5 }), 200);
    expect(names(await as(headers, "GET", `${CONNECTORS}/list`))).toEqual(["by-key", "main"]);
    expect((await as(headers, "POST", `${CONNECTORS}/delete/by-key`)).statusCode).toBe(200);
  });

  it("users: only a global Admin_ManageFeed reads or changes; viewers and feed-scoped grants see nothing", async () => {
    const viewer = await createUser(t.database, "viewer", "viewer-pw");
    await grant(t.database, { user: viewer, attributes: ["Feeds_ViewFeed"] });
    const manager = await createUser(t.database, "manager", "manager-pw");
    await grant(t.database, { user: manager, attributes: ["Admin_ManageFeed"] });
    const scoped = await createUser(t.database, "scoped", "scoped-pw");
    await grant(t.database, { user: scoped, attributes: ["Feeds_ViewFeed", "Admin_ManageFeed"], feed: "f" });

    // A connector names an upstream and its account: viewing feeds does not show it.
    const v = basic("viewer", "viewer-pw");
    expectText(await as(v, "GET", `${CONNECTORS}/get/main`), 403, FORBIDDEN);
    expect(names(await as(v, "GET", `${CONNECTORS}/list`))).toEqual([]);
    expectText(await as(v, "POST", `${CONNECTORS}/create`, body("nope")), 403, FORBIDDEN);

    const m = basic("manager", "manager-pw");
    expectJson(await as(m, "GET", `${CONNECTORS}/get/main`), 200);
    expect(names(await as(m, "GET", `${CONNECTORS}/list`))).toContain("main");
    expectJson(await as(m, "POST", `${CONNECTORS}/create`, body("managed")), 201);
    expectJson(await as(m, "POST", `${CONNECTORS}/update/managed`, { timeout: 9 }), 200);
    expect((await as(m, "DELETE", `${CONNECTORS}/delete/managed`)).statusCode).toBe(200);

    const s = basic("scoped", "scoped-pw");
    expectText(await as(s, "GET", `${CONNECTORS}/get/main`), 403);
    expect(names(await as(s, "GET", `${CONNECTORS}/list`))).toEqual([]);
    expectText(await as(s, "POST", `${CONNECTORS}/create`, body("nope")), 403);
  });
});
