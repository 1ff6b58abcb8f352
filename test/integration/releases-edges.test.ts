import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { releasesFixtures } from "../helpers/releases-fixtures.js";

/**
 * What every endpoint of areas E and H answers to callers it should not serve: no key, a wrong
 * key, a body that is not JSON, a JSON array, a body beyond the 1 MiB limit (app.ts), and names in
 * paths that look like paths.
 */
let t: TestApp;

beforeAll(async () => {
  t = await buildTestApp();
  const f = releasesFixtures(t);
  await f.setup("Edges");
  f.ok(await f.json("POST", "/api/plans/create", { name: "Plan", steps: [] }));
});
afterAll(async () => t.close());

/**
 * url, then the status of: no key, a JSON array from an administrator. Area E's compat endpoints
 * decide access in the handler and refuse Anonymous with Inedo's 403; the management additions
 * declare what they need, so Anonymous gets 401. List and get endpoints take no body and ignore one.
 */
const ENDPOINTS: ReadonlyArray<readonly [string, number, number]> = [
  ["/api/releases", 403, 400],
  ["/api/releases/create", 403, 400],
  ["/api/releases/builds", 403, 400],
  ["/api/releases/builds/create", 403, 400],
  ["/api/releases/builds/deploy", 403, 400],
  ["/api/releases/packages/create", 403, 400],
  ["/api/applications/create", 401, 400],
  ["/api/applications/update", 401, 400],
  ["/api/applications/list", 401, 200],
  ["/api/pipelines/create", 401, 400],
  ["/api/pipelines/list", 401, 200],
  ["/api/pipelines/update/Nope", 401, 400],
  ["/api/pipelines/delete/Nope", 401, 404],
  ["/api/infrastructure/environments/list", 401, 200],
  ["/api/infrastructure/environments/create/Staging", 401, 400],
  ["/api/infrastructure/environments/update/Integration", 401, 400],
  ["/api/infrastructure/environments/delete/Nope", 401, 404],
  ["/api/plans/create", 401, 400],
  ["/api/plans/list", 401, 200],
  ["/api/plans/get/Plan", 401, 200],
  ["/api/plans/update/Plan", 401, 400],
  ["/api/plans/delete/Nope", 401, 404],
  ["/api/ci-badges/image", 403, 400],
  ["/api/ci-badges/link", 403, 400],
  ["/api/json/Applications_GetApplications", 403, 400],
];

async function post(url: string, headers: Record<string, string>, payload?: string): Promise<number> {
  return (await t.app.inject({ method: "POST", url, headers, ...(payload !== undefined && { payload }) })).statusCode;
}

describe("refusals", () => {
  it.each(ENDPOINTS)("%s: no key, a wrong key, malformed and oversized bodies", async (url, anonymous, array) => {
    const admin = { "x-apikey": t.adminKey, "content-type": "application/json" };
    expect(await post(url, {})).toBe(anonymous);
    expect(await post(url, { "x-apikey": "not-a-key" })).toBe(403);
    expect(await post(url, admin, "{not json")).toBe(400);
    expect(await post(url, admin, "[1,2]")).toBe(array);
    expect(await post(url, admin, JSON.stringify({ name: "x".repeat(1_100_000) }))).toBe(413);
  });

  it("caps a plan's steps", async () => {
    const steps = Array.from({ length: 501 }, () => ({ type: "log", message: "x" }));
    const res = await t.app.inject({
      method: "POST",
      url: "/api/plans/create",
      headers: { "x-apikey": t.adminKey, "content-type": "application/json" },
      payload: JSON.stringify({ name: "Huge", steps }),
    });
    expect(res.statusCode, res.body).toBe(400);
  });

  it("views refuse Anonymous", async () => {
    expect((await t.app.inject({ url: "/applications/1" })).statusCode).toBe(403);
    expect((await t.app.inject({ url: "/applications/1/builds/1" })).statusCode).toBe(403);
  });
});

describe("names in paths", () => {
  const get = async (url: string, method: "GET" | "POST" = "GET") =>
    t.app.inject({
      method,
      url,
      headers: { "x-apikey": t.adminKey, ...(method === "POST" && { "content-type": "application/json" }) },
      ...(method === "POST" && { payload: "{}" }),
    });

  it("an encoded ../ is part of the name, never a path", async () => {
    const pipeline = await get("/api/pipelines/get/..%2F..%2Fetc");
    expect([pipeline.statusCode, pipeline.body]).toEqual([404, "The pipeline '../../etc' was not found."]);
    const plan = await get("/api/plans/get/..%2fPlan");
    expect([plan.statusCode, plan.body]).toEqual([404, "The deployment plan '../Plan' was not found."]);
    const method = await get("/api/json/..%2fApplications_GetApplications");
    expect(method.statusCode).toBe(404);
    expect((await get("/applications/1/releases/..%2f..%2f")).statusCode).toBe(404);
  });

  it("refuses such names where they are checked", async () => {
    const env = await get("/api/infrastructure/environments/create/..%2F..", "POST");
    expect([env.statusCode, env.body]).toEqual([400, "Invalid environment name '../..'."]);
    expect((await get("/applications/..%2F1")).statusCode).toBe(400);
  });

  it("a %2e%2e segment names nothing", async () => {
    // inject() resolves it as a dot segment (no route); over a socket it reaches the handler as the
    // name '..' (checked by hand: 404 "The pipeline '..' was not found."). Either way, 404.
    expect((await get("/api/pipelines/get/%2e%2e")).statusCode).toBe(404);
    expect((await get("/api/plans/get/%2e%2e")).statusCode).toBe(404);
  });
});
