import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createFeedKey, createUser, newKey } from "../helpers/fixtures.js";

/** `/api/api-keys/list|create|delete` (docs/compat.md 5.4; pgutil `apikeys`), as a story. */

const DENIED = "The specified API key does not have the proper permissions to perform this action.";

describe("API keys", () => {
  let t: TestApp;
  let now = Date.parse("2030-06-01T12:00:00.000Z");
  const clock: Clock = { now: () => new Date(now) };
  const admin = () => ({ "x-apikey": t.adminKey });

  const create = (payload: unknown, headers: Record<string, string> = admin(), method: "POST" | "PUT" = "POST") =>
    t.app.inject({ method, url: "/api/api-keys/create", headers, payload: payload as Record<string, unknown> });
  const list = async () => {
    const res = await t.app.inject({ method: "GET", url: "/api/api-keys/list", headers: admin() });
    expect(res.statusCode).toBe(200);
    return res;
  };

  beforeAll(async () => {
    t = await buildTestApp({ clock });
    for (const [name, feedGroup] of [
      ["Main-Feed", "Team"],
      ["other-feed", undefined],
    ] as const) {
      const res = await t.app.inject({
        method: "POST",
        url: "/api/management/feeds/create",
        headers: admin(),
        payload: { name, feedType: "universal", ...(feedGroup ? { feedGroup } : {}) },
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    await createUser(t.database, "Alice", "alice-password-1");
  });
  afterAll(async () => t?.close());

  it("creates a System key: 201, the ApiKeyInfo with the key, shown this once", async () => {
    const res = await create({
      type: "System",
      systemApis: ["full-control"],
      displayName: "CI",
      description: "for CI",
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    const body = res.json();
    expect(body).toEqual({
      id: expect.any(Number),
      type: "System",
      key: expect.stringMatching(/^[A-Za-z0-9_-]{40,}$/),
      displayName: "CI",
      description: "for CI",
      systemApis: ["full-control"],
      logging: "None",
    });
    const listed = (await list()).json() as Record<string, unknown>[];
    const item = listed.find((k) => k.id === body.id);
    expect(item).toEqual({ ...body, key: undefined });
    expect(item).not.toHaveProperty("key");
    // The new key works.
    const use = await t.app.inject({
      method: "GET",
      url: "/api/security/users/list",
      headers: { "x-apikey": body.key },
    });
    expect(use.statusCode).toBe(200);
  });

  it("lists keys as a top-level array without keys, hashes or nulls, always with logging", async () => {
    const res = await list();
    expect(res.body).not.toMatch(/[0-9a-f]{64}/); // no SHA-256 hex
    expect(res.body).not.toContain(t.adminKey);
    expect(res.body).not.toContain("null");
    const keys = res.json() as Record<string, unknown>[];
    expect(keys.length).toBeGreaterThanOrEqual(2);
    for (const key of keys) {
      expect(key).not.toHaveProperty("key");
      expect(["None", "Request", "Response", "Both"]).toContain(key.logging);
      expect(["System", "Feed", "Personal"]).toContain(key.type);
    }
  });

  it("creates a Feed key for a feed named in any case, stores the canonical name, and scopes it to that feed", async () => {
    const res = await create({
      type: "feed",
      feed: "MAIN-feed",
      packagePermissions: ["View", "view", "add"],
      logging: "none",
    });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({
      type: "Feed",
      feed: "Main-Feed",
      packagePermissions: ["view", "add"],
      logging: "None",
    });
    expect(body).not.toHaveProperty("feedGroup");
    expect(body).not.toHaveProperty("systemApis");
    const headers = { "x-apikey": body.key };
    const own = await t.app.inject({ method: "GET", url: "/api/management/feeds/get/main-feed", headers });
    expect(own.statusCode).toBe(200);
    const other = await t.app.inject({ method: "GET", url: "/api/management/feeds/get/other-feed", headers });
    expect(other.statusCode).toBe(403);
    const admin = await t.app.inject({ method: "GET", url: "/api/api-keys/list", headers });
    expect(admin.statusCode).toBe(403);
  });

  it("creates a Feed key for a feed group", async () => {
    const res = await create({ type: "Feed", feedGroup: "Team", packagePermissions: ["view"] });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ type: "Feed", feedGroup: "Team", packagePermissions: ["view"] });
    const own = await t.app.inject({
      method: "GET",
      url: "/api/management/feeds/get/Main-Feed",
      headers: { "x-apikey": res.json().key },
    });
    expect(own.statusCode).toBe(200);
  });

  it("creates a Personal key that acts as its user, with PUT as well as POST", async () => {
    const res = await create({ type: "Personal", user: "alice", displayName: "laptop" }, admin(), "PUT");
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ type: "Personal", user: "Alice", displayName: "laptop" });
    // Alice has no privilege yet: her key is refused, then accepted once she is an administrator.
    const headers = { "x-apikey": res.json().key };
    expect((await t.app.inject({ method: "GET", url: "/api/api-keys/list", headers })).statusCode).toBe(403);
    const grant = await t.app.inject({
      method: "POST",
      url: "/api/security/permissions/add",
      headers: admin(),
      payload: { user: "Alice", task: "Administer" },
    });
    expect(grant.statusCode).toBe(200);
    expect((await t.app.inject({ method: "GET", url: "/api/api-keys/list", headers })).statusCode).toBe(200);
  });

  it("takes a client-chosen key as the key, with the caller's own key in API_Key or a header", async () => {
    const chosen = newKey("chosen");
    const res = await create({ API_Key: t.adminKey, type: "System", systemApis: ["metrics"], key: chosen }, {});
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().key).toBe(chosen);
    expect((await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": chosen } })).statusCode).toBe(
      200,
    );
    // The chosen key is data, never a credential: without one the caller is anonymous.
    const anonymous = await create({ type: "System", systemApis: ["metrics"], key: newKey("chosen") }, {});
    expect(anonymous.statusCode).toBe(401);
    const again = await create({ type: "System", systemApis: ["feeds"], key: chosen });
    expect(again.statusCode).toBe(409);
    expect(again.headers["content-type"]).toBe("text/plain");
  });

  it("accepts pgutil's serialization: every member present, nulls included, JSON with a charset", async () => {
    const chosen = newKey("pgutil");
    const res = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { ...admin(), "content-type": "application/json; charset=utf-8" },
      payload: JSON.stringify({
        id: null,
        type: "Feed",
        key: chosen,
        displayName: null,
        description: null,
        systemApis: null,
        packagePermissions: ["view"],
        feed: "other-feed",
        feedGroup: null,
        expiration: null,
        logging: null,
        user: null,
      }),
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({
      id: expect.any(Number),
      type: "Feed",
      key: chosen,
      packagePermissions: ["view"],
      feed: "other-feed",
      logging: "None",
    });
  });

  it("tolerates unknown and read-only members (id, lastUsed, extras)", async () => {
    const res = await create({ id: 4242, type: "System", systemApis: ["feeds"], lastUsed: "x", replication: { a: 1 } });
    expect(res.statusCode).toBe(201);
    expect(res.json().id).not.toBe(4242);
    expect(res.json()).not.toHaveProperty("replication");
  });

  it.each([
    ["no type", {}, "type"],
    ["an unsupported type", { type: "Other" }, "type"],
    ["a System key without APIs", { type: "System" }, "systemApis"],
    ["an SBOM System key", { type: "System", systemApis: ["sbom-upload"] }, "systemApis"],
    ["an unknown System API", { type: "System", systemApis: ["everything"] }, "systemApis"],
    ["a Feed key without feed or group", { type: "Feed", packagePermissions: ["view"] }, "feed"],
    [
      "a Feed key with feed and group",
      { type: "Feed", feed: "Main-Feed", feedGroup: "Team", packagePermissions: ["view"] },
      "feed",
    ],
    ["a Feed key for a missing feed", { type: "Feed", feed: "nope", packagePermissions: ["view"] }, "feed"],
    ["a Feed key without permissions", { type: "Feed", feed: "Main-Feed" }, "packagePermissions"],
    [
      "an unknown feed permission",
      { type: "Feed", feed: "Main-Feed", packagePermissions: ["overwrite"] },
      "packagePermissions",
    ],
    ["a Personal key without user", { type: "Personal" }, "user"],
    ["a Personal key for a missing user", { type: "Personal", user: "ghost" }, "user"],
    ["an unparseable expiration", { type: "System", systemApis: ["feeds"], expiration: "next week" }, "expiration"],
    ["a past expiration", { type: "System", systemApis: ["feeds"], expiration: "2020-01-01T00:00:00Z" }, "expiration"],
    ["a short chosen key", { type: "System", systemApis: ["feeds"], key: "short" }, "key"],
    ["a chosen key with ':'", { type: "System", systemApis: ["feeds"], key: "user:password-like-1234" }, "key"],
    ["a chosen key that is not a string", { type: "System", systemApis: ["feeds"], key: 1234567890123456 }, "key"],
    ["an unknown logging mode", { type: "System", systemApis: ["feeds"], logging: "Verbose" }, "logging"],
    ["a display name that is not a string", { type: "System", systemApis: ["feeds"], displayName: 42 }, "displayName"],
    ["APIs that are not a list", { type: "System", systemApis: "feeds" }, "systemApis"],
  ])("refuses %s with 400 naming the member", async (_name, payload, field) => {
    const before = (await list()).json().length;
    const res = await create(payload);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toContain(field);
    expect((await list()).json().length).toBe(before);
  });

  it("refuses bodies that are not a JSON object", async () => {
    const array = await t.app.inject({ method: "POST", url: "/api/api-keys/create", headers: admin(), payload: "[]" });
    expect(array.statusCode).toBe(415); // no Content-Type: a raw body
    const jsonArray = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { ...admin(), "content-type": "application/json" },
      payload: "[1,2]",
    });
    expect(jsonArray.statusCode).toBe(400);
    const broken = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { ...admin(), "content-type": "application/json" },
      payload: "{broken",
    });
    expect(broken.statusCode).toBe(400);
    expect(broken.headers["content-type"]).toBe("text/plain");
  });

  it("expires a key at its expiration date", async () => {
    const res = await create({ type: "System", systemApis: ["metrics"], expiration: "2030-06-02T00:00:00Z" });
    expect(res.statusCode).toBe(201);
    expect(res.json().expiration).toBe("2030-06-02T00:00:00.000Z");
    const headers = { "x-apikey": res.json().key };
    expect((await t.app.inject({ method: "GET", url: "/metrics", headers })).statusCode).toBe(200);
    now = Date.parse("2030-06-02T00:00:00.001Z");
    const expired = await t.app.inject({ method: "GET", url: "/metrics", headers });
    expect(expired.statusCode).toBe(403);
    expect(expired.body).toBe(DENIED);
  });

  it("deletes a key by id with POST or DELETE; the key stops working; unknown ids are 404", async () => {
    for (const method of ["POST", "DELETE"] as const) {
      const created = (await create({ type: "System", systemApis: ["metrics"] })).json();
      const res = await t.app.inject({ method, url: `/api/api-keys/delete?id=${created.id}`, headers: admin() });
      expect(res.statusCode).toBe(200);
      expect(res.body).toBe("");
      expect((await list()).json().map((k: { id: number }) => k.id)).not.toContain(created.id);
      const use = await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": created.key } });
      expect(use.statusCode).toBe(403);
      const again = await t.app.inject({ method, url: `/api/api-keys/delete?ID=${created.id}`, headers: admin() });
      expect(again.statusCode).toBe(404);
      expect(again.headers["content-type"]).toBe("text/plain");
    }
    for (const url of ["/api/api-keys/delete", "/api/api-keys/delete?id=abc", "/api/api-keys/delete?id=0"]) {
      const res = await t.app.inject({ method: "POST", url, headers: admin() });
      expect(res.statusCode, url).toBe(400);
      expect(res.body).toContain("id");
    }
  });

  it("is closed to anonymous callers (401) and to feed keys, narrower System keys and non-admin users (403)", async () => {
    const requests = [
      { method: "GET" as const, url: "/api/api-keys/list" },
      {
        method: "POST" as const,
        url: "/api/api-keys/create",
        payload: { type: "System", systemApis: ["full-control"] },
      },
      { method: "POST" as const, url: "/api/api-keys/delete?id=1" },
    ];
    const feedKey = await createFeedKey(t.database, "Main-Feed", ["view", "add", "promote", "delete"]);
    const feedsKey = (await create({ type: "System", systemApis: ["feeds", "metrics", "configuration"] })).json().key;
    const before = (await list()).json().length;
    for (const request of requests) {
      expect((await t.app.inject(request)).statusCode).toBe(401);
      for (const key of [feedKey, feedsKey, "Alice:wrong-password"]) {
        const res = await t.app.inject({ ...request, headers: { "x-apikey": key } });
        expect(res.statusCode).toBe(403);
        expect(res.body).toBe(DENIED);
      }
    }
    expect((await list()).json().length).toBe(before);
  });
});
