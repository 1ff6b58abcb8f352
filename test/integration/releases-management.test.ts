import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { type ReleasesFixtures, releasesFixtures } from "../helpers/releases-fixtures.js";

/** Management additions: applications (docs/compat.md 7.8), pipelines, environments (docs/compat.md 8.2). */
let t: TestApp;
let f: ReleasesFixtures;
type Json = Record<string, unknown>;

beforeAll(async () => {
  t = await buildTestApp();
  f = releasesFixtures(t);
});
afterAll(async () => t.close());

describe("applications", () => {
  it("creates, lists, updates, and refuses duplicates and bad values", async () => {
    const created = f.ok<Json>(
      await f.json("POST", "/api/applications/create", {
        name: "Web",
        releaseUsage: "Optional",
        buildNumberScheme: "DateTimeBased",
      }),
    );
    expect(created).toEqual({
      id: created.id,
      name: "Web",
      active: true,
      releaseUsage: "Optional",
      buildNumberScheme: "DateTimeBased",
    });
    expect((await f.json("POST", "/api/applications/create", { name: "web" })).statusCode).toBe(409);
    expect(
      (await f.json("POST", "/api/applications/create", { name: "X", releaseUsage: "Sometimes" })).statusCode,
    ).toBe(400);
    const updated = f.ok<Json>(
      await f.json("POST", "/api/applications/update", { id: created.id, name: "Website", releaseUsage: "Disabled" }),
    );
    expect(updated).toMatchObject({ name: "Website", releaseUsage: "Disabled", buildNumberScheme: "DateTimeBased" });
    const byForm = await t.app.inject({
      method: "POST",
      url: "/api/applications/update",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `key=${encodeURIComponent(t.adminKey)}&name=Website&description=Shop`,
    });
    expect(f.ok<Json>(byForm)).toMatchObject({ description: "Shop" });
    expect((await f.json("POST", "/api/applications/update", { name: "Nope" })).statusCode).toBe(404);
    expect(f.ok<Json[]>(await f.json("GET", "/api/applications/list")).map((a) => a.name)).toEqual(["Website"]);
    const releasesKey = await createSystemKey(t.database, ["releases"]);
    expect((await f.json("GET", "/api/applications/list", undefined, releasesKey)).statusCode).toBe(200);
    expect((await f.json("POST", "/api/applications/create", { name: "Z" }, releasesKey)).statusCode).toBe(403);
  });

  it("numbers builds by the application's scheme; pipeline-less builds reject the previous one", async () => {
    f.ok(await f.json("POST", "/api/pipelines/create", { name: "Solo", stages: [{ name: "Only" }] }));
    f.ok(
      await f.json("POST", "/api/applications/create", {
        name: "Dated",
        releaseUsage: "Optional",
        buildNumberScheme: "DateTimeBased",
      }),
    );
    const dated = f.ok<Json>(
      await f.json("POST", "/api/releases/builds/create", { applicationName: "Dated", pipelineName: "Solo" }),
    );
    expect(dated.number).toMatch(/^\d{8}\.1$/);
    expect(dated).not.toHaveProperty("releaseId");
    expect((await f.json("POST", "/api/releases/builds/create", { applicationName: "Dated" })).statusCode).toBe(400);
    const disabled = await f.json("POST", "/api/releases/builds/create", {
      applicationName: "Website",
      releaseNumber: "1",
    });
    expect(disabled.statusCode).toBe(404);
  });
});

describe("pipelines", () => {
  it("creates, gets, lists, updates and deletes; validates stages and plans", async () => {
    const body = {
      name: "Main",
      stages: [
        {
          name: "Dev",
          plan: [
            { type: "log", message: "hi" },
            { type: "sleep", seconds: 1 },
          ],
        },
        { name: "Prod", environmentName: "Prod" },
      ],
    };
    const created = f.ok<Json>(await f.json("POST", "/api/pipelines/create", body));
    expect(created).toMatchObject({
      name: "Main",
      rejectOlderBuilds: true,
      stages: [{ name: "Dev" }, { name: "Prod", environmentName: "Prod" }],
    });
    expect((await f.json("POST", "/api/pipelines/create", body)).statusCode).toBe(409);
    const badStep = { name: "Bad", stages: [{ name: "A", plan: [{ type: "explode" }] }] };
    expect((await f.json("POST", "/api/pipelines/create", badStep)).statusCode).toBe(400);
    const missingPlan = { name: "Bad", stages: [{ name: "A", planName: "Nope" }] };
    expect((await f.json("POST", "/api/pipelines/create", missingPlan)).statusCode).toBe(422);
    const twice = { name: "Bad", stages: [{ name: "A" }, { name: "a" }] };
    expect((await f.json("POST", "/api/pipelines/create", twice)).statusCode).toBe(400);
    expect(f.ok<Json>(await f.json("GET", "/api/pipelines/get/main"))).toMatchObject({ name: "Main" });
    expect((await f.json("GET", "/api/pipelines/get/none")).statusCode).toBe(404);
    const updated = f.ok<Json>(
      await f.json("POST", "/api/pipelines/update/Main", { ...body, name: "Main2", rejectOlderBuilds: false }),
    );
    expect(updated).toMatchObject({ name: "Main2", rejectOlderBuilds: false });
    expect(f.ok<Json[]>(await f.json("GET", "/api/pipelines/list")).map((p) => p.name)).toContain("Main2");

    f.ok(await f.json("POST", "/api/applications/create", { name: "Uses" }));
    f.ok(
      await f.json("POST", "/api/releases/create", {
        applicationName: "Uses",
        releaseNumber: "1",
        pipelineName: "Main2",
      }),
    );
    expect((await f.json("DELETE", "/api/pipelines/delete/Main2")).statusCode).toBe(409);
    expect((await f.json("DELETE", "/api/pipelines/delete/Solo")).statusCode).toBe(409);
    f.ok(await f.json("POST", "/api/pipelines/create", { name: "Temp", stages: [{ name: "X" }] }));
    const deleted = await f.json("POST", "/api/pipelines/delete/Temp");
    expect(deleted.statusCode).toBe(200);
    expect((await f.json("POST", "/api/pipelines/delete/Temp")).statusCode).toBe(404);
  });
});

describe("environments (docs/compat.md 8.2)", () => {
  it("creates with a parent, lists, renames, removes the parent and deletes", async () => {
    expect((await f.json("POST", "/api/infrastructure/environments/create/Prod", { active: true })).statusCode).toBe(
      201,
    );
    const child = await f.json("POST", "/api/infrastructure/environments/create/Prod-EU", {
      parent: "Prod",
      variables: { Region: "eu" },
    });
    expect(child.statusCode).toBe(201);
    expect(child.json()).toMatchObject({
      name: "Prod-EU",
      parentName: "Prod",
      parent: "Prod",
      variables: { Region: "eu" },
    });
    expect(
      (await f.json("POST", "/api/infrastructure/environments/create/Orphan", { parentName: "None" })).statusCode,
    ).toBe(422);
    expect((await f.json("POST", "/api/infrastructure/environments/create/bad-", {})).statusCode).toBe(400);
    // No body and no Content-Type, as some clients send a bare POST: created from the URL alone.
    const bare = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/environments/create/Bare",
      headers: { "x-apikey": t.adminKey },
    });
    expect(bare.statusCode, bare.body).toBe(201);
    expect((await f.json("POST", "/api/infrastructure/environments/create/prod", {})).statusCode).toBe(409);
    const one = f.ok<Json[]>(await f.json("GET", "/api/infrastructure/environments/list?name=prod-eu"));
    expect(one.map((e) => e.name)).toEqual(["Prod-EU"]);
    const renamed = f.ok<Json>(
      await f.json("POST", "/api/infrastructure/environments/update/Prod-EU", { name: "ProdEU", parent: null }),
    );
    expect(renamed).toEqual({ id: renamed.id, name: "ProdEU", active: true, variables: { Region: "eu" } });
    expect((await f.json("POST", "/api/infrastructure/environments/update/Nope", {})).statusCode).toBe(404);
    expect((await f.json("POST", "/api/infrastructure/environments/delete/ProdEU")).statusCode).toBe(200);
    expect((await f.json("POST", "/api/infrastructure/environments/delete/ProdEU")).statusCode).toBe(404);
  });

  it("415 for a body that is neither JSON nor a form, and creates nothing", async () => {
    for (const action of ["create", "update"]) {
      for (const type of ["text/plain", "application/octet-stream"]) {
        const res = await t.app.inject({
          method: "POST",
          url: `/api/infrastructure/environments/${action}/Raw`,
          headers: { "x-apikey": t.adminKey, "content-type": type },
          payload: '{"active":true}',
        });
        expect([res.statusCode, res.headers["content-type"]], `${action} ${type}`).toEqual([415, "text/plain"]);
        expect(res.body).toBe("Send the request body as JSON (Content-Type: application/json).");
      }
    }
    expect((await f.json("GET", "/api/infrastructure/environments/list?name=Raw")).statusCode).toBe(404);
    // A form is parsed into fields, as before; only raw bodies are refused.
    const form = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/environments/create/Formed",
      headers: { "x-apikey": t.adminKey, "content-type": "application/x-www-form-urlencoded" },
      payload: "name=Formed",
    });
    expect(form.statusCode).toBe(201);
  });
});
