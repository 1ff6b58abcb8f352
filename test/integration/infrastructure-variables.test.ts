import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createInfrastructureRepository } from "../../src/areas/configuration/infrastructure-repository.js";
import { createPostgresInfrastructureRepository } from "../../src/areas/configuration/infrastructure-repository-postgres.js";
import { byDatabase } from "../../src/storage/metadata-db.js";
import { loadSecretKeys } from "../../src/storage/secret-keys.js";
import { createSystemKey, readOne } from "../helpers/fixtures.js";
import { expectJson, expectText } from "../helpers/responses.js";

/** `/api/variables/...` (docs/compat.md 8.4), as Otter's clients send them. */
let t: TestApp;
let deployRoot: string;
type Json = Record<string, unknown>;

beforeAll(async () => {
  deployRoot = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-vars-"));
  t = await buildTestApp({ env: { WHARF_DEPLOY_ROOT: deployRoot } });
  await json("POST", "/api/infrastructure/servers/create/web1", {
    serverType: "local",
    rootPath: path.join(deployRoot, "web1"),
  });
  await json("POST", "/api/infrastructure/roles/create/web", {});
  await json("POST", "/api/infrastructure/environments/create/Prod", {});
});
afterAll(async () => {
  await t.close();
  await fs.rm(deployRoot, { recursive: true, force: true });
});

const json = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown, key = t.adminKey) =>
  t.app.inject({
    method,
    url,
    headers: { "x-apikey": key, ...(payload !== undefined && { "content-type": "application/json" }) },
    ...(payload !== undefined && { payload: JSON.stringify(payload) }),
  });
/** A raw body as InedoCore's StreamContent sends it: no Content-Type header at all. */
const raw = (method: "POST" | "PUT" | "DELETE", url: string, body: string, contentType?: string) =>
  t.app.inject({
    method,
    url,
    headers: { "x-apikey": t.adminKey, ...(contentType !== undefined && { "content-type": contentType }) },
    payload: body,
  });
/** The runtime's reads (templates): sensitive values opened. */
const runtime = () => {
  const secrets = loadSecretKeys(t.config).box;
  return byDatabase(
    t.database,
    (sqlite) => createInfrastructureRepository(sqlite, secrets),
    (postgres) => createPostgresInfrastructureRepository(postgres, secrets),
  );
};
const ok = (res: { statusCode: number; body: string }) => {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.body).toBe("");
};

describe("variables of one entity", () => {
  it("replaces all, reads the object, and sets, reads and deletes one as raw text", async () => {
    ok(
      await json("POST", "/api/variables/server/web1", {
        Port: "8080",
        Token: { value: "tok-secret", sensitive: true },
      }),
    );
    expect(expectJson(await json("GET", "/api/variables/server/WEB1"))).toEqual({
      Port: "8080",
      Token: { value: null, sensitive: true },
    });
    const port = await json("GET", "/api/variables/server/web1/port");
    expect(port.statusCode).toBe(200);
    expect(port.headers["content-type"]).toMatch(/^text\/plain/);
    expect(port.body).toBe("8080");
    expectText(await json("GET", "/api/variables/server/web1/Token"), 403, "sensitive");

    ok(await raw("PUT", "/api/variables/server/web1/Port", "9090", "text/plain"));
    ok(await raw("POST", "/api/variables/server/web1/Token", "new-secret"));
    ok(await raw("POST", "/api/variables/server/web1/Extra", "x y z"));
    expect(expectJson(await json("GET", "/api/variables/server/web1"))).toEqual({
      Port: "9090",
      Token: { value: null, sensitive: true },
      Extra: "x y z",
    });
    const row = await readOne<{ id: number; variables: string }>(
      t.database,
      "SELECT id, variables FROM servers WHERE name_key = 'web1'",
    );
    expect(row?.variables).not.toContain("new-secret");
    expect((await runtime().serverVariables(row?.id ?? 0)).get("Token")).toEqual({
      value: "new-secret",
      sensitive: true,
    });

    ok(await json("DELETE", "/api/variables/server/web1/extra"));
    expectText(await json("DELETE", "/api/variables/server/web1/extra"), 404, "extra");
    expectText(await json("GET", "/api/variables/server/web1/extra"), 404);
    // PUT replaces all: the missing ones go.
    ok(await json("PUT", "/api/variables/role/web", { A: "1", B: "2" }));
    ok(await json("PUT", "/api/variables/role/web", { B: "3" }));
    expect(expectJson(await json("GET", "/api/variables/role/web"))).toEqual({ B: "3" });
  });

  it("answers 400 for a bad type or name, 404 for a missing entity", async () => {
    expectText(await json("GET", "/api/variables/planet/x"), 400, "planet");
    expectText(await json("GET", "/api/variables/server/ghost"), 404, "ghost");
    expectText(await raw("POST", "/api/variables/server/ghost/A", "1"), 404, "ghost");
    expectText(await raw("POST", "/api/variables/server/web1/bad!name", "1"), 400, "bad!name");
    expectText(await json("POST", "/api/variables/server/web1", { A: [1] }), 400, "A");
    expectText(await raw("POST", "/api/variables/server/web1", "{not json"), 400, "JSON");
    expectText(await raw("POST", "/api/variables/server/web1", ""), 400, "{} deletes them all");
  });

  it("keeps environment variables plain text, readable by the releases area", async () => {
    ok(await json("POST", "/api/variables/environment/prod", { Region: "eu" }));
    const environments = expectJson(await json("GET", "/api/infrastructure/environments/list?name=Prod")) as Json[];
    expect(environments[0]?.variables).toEqual({ Region: "eu" });
    expectText(
      await json("POST", "/api/variables/environment/prod", { Key: { value: "x", sensitive: true } }),
      400,
      "cannot be sensitive",
    );
    ok(await raw("POST", "/api/variables/environment/Prod/Zone", "b"));
    expect(expectJson(await json("GET", "/api/variables/environments/prod"))).toEqual({ Region: "eu", Zone: "b" });
  });
});

describe("global and scoped variables", () => {
  it("sets a global value from a text/plain body as InedoCore does, and replaces all", async () => {
    ok(await raw("POST", "/api/variables/global/Version", "1.2.3", "text/plain"));
    const version = await json("GET", "/api/variables/global/version");
    expect(version.body).toBe("1.2.3");
    ok(await json("PUT", "/api/variables/global", { Version: "2", Owner: "ops" }));
    expect(expectJson(await json("GET", "/api/variables/global"))).toEqual({ Version: "2", Owner: "ops" });
    ok(await json("DELETE", "/api/variables/global/owner"));
    expectText(await json("DELETE", "/api/variables/global/owner"), 404);
  });

  it("reads scoped/single JSON sent with no Content-Type, sets sensitivity, deletes by body", async () => {
    const body = JSON.stringify({ name: "DbPassword", value: "pw-123", sensitive: true, server: "web1" });
    ok(await raw("POST", "/api/variables/scoped/single", body));
    ok(await raw("PUT", "/api/variables/scoped/single", JSON.stringify({ name: "Motd", value: "hello", role: "web" })));
    ok(await json("POST", "/api/variables/scoped/single", { name: "Colour", value: "blue" }));
    const all = expectJson(await json("GET", "/api/variables/scoped/all")) as Json[];
    expect(all).toContainEqual({
      name: "DbPassword",
      value: null,
      sensitive: true,
      server: "web1",
      role: null,
      environment: null,
    });
    expect(all).toContainEqual({
      name: "Motd",
      value: "hello",
      sensitive: false,
      server: null,
      role: "web",
      environment: null,
    });
    expect(all).toContainEqual({
      name: "Colour",
      value: "blue",
      sensitive: false,
      server: null,
      role: null,
      environment: null,
    });
    expect(JSON.stringify(all)).not.toContain("pw-123");
    expectText(await json("GET", "/api/variables/server/web1/DbPassword"), 403);

    expectText(
      await raw(
        "POST",
        "/api/variables/scoped/single",
        JSON.stringify({ name: "X", value: "1", server: "web1", role: "web" }),
      ),
      400,
      "one server, role or environment",
    );
    expectText(
      await raw("POST", "/api/variables/scoped/single", JSON.stringify({ name: "X", value: "1", server: "ghost" })),
      404,
    );
    expectText(await raw("POST", "/api/variables/scoped/single", JSON.stringify({ value: "1" })), 400, "name");
    ok(await raw("DELETE", "/api/variables/scoped/single", JSON.stringify({ name: "motd", role: "web" })));
    ok(await json("DELETE", "/api/variables/scoped/single", { Name: "Colour" }));
    expectText(await json("GET", "/api/variables/global/Colour"), 404);
    expectText(await raw("DELETE", "/api/variables/scoped/single", JSON.stringify({ name: "motd", role: "web" })), 404);
  });

  it("never answers a sensitive value anywhere, and stores it sealed", async () => {
    ok(await json("POST", "/api/variables/global", { Api: { value: "global-secret-1", sensitive: true } }));
    const stored = await readOne<{ value: string }>(
      t.database,
      "SELECT value FROM global_variables WHERE name_key = 'api'",
    );
    expect(stored?.value).not.toContain("global-secret-1");
    expect((await runtime().globalVariables()).get("Api")).toEqual({ value: "global-secret-1", sensitive: true });
    const answers = await Promise.all(
      [
        "/api/variables/global",
        "/api/variables/scoped/all",
        "/api/variables/server/web1",
        "/api/infrastructure/servers/list",
      ].map(async (url) => (await json("GET", url)).body),
    );
    for (const body of answers) {
      expect(body).not.toContain("global-secret-1");
      expect(body).not.toContain("new-secret");
      expect(body).not.toContain("pw-123");
    }
  });

  it("needs Infrastructure_View to read and Infrastructure_Manage (infrastructure scope) to write", async () => {
    const feeds = await createSystemKey(t.database, ["feeds"]);
    const infra = await createSystemKey(t.database, ["infrastructure"]);
    expectText(await json("GET", "/api/variables/global", undefined, feeds), 403);
    expectText(await json("POST", "/api/variables/global", { A: "1" }, feeds), 403);
    expect((await json("GET", "/api/variables/scoped/all", undefined, infra)).statusCode).toBe(200);
    expect((await json("POST", "/api/variables/server/web1/Z", "z", infra)).statusCode).toBe(200);
  });
});
