import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { expectJson, expectText } from "../helpers/responses.js";

/** `/api/infrastructure/roles/...` (docs/compat.md 8.2; issue 13 section 1): dependencies, items, deletes. */
let t: TestApp;
let deployRoot: string;
type Json = Record<string, unknown>;

beforeAll(async () => {
  deployRoot = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-roles-"));
  t = await buildTestApp({ env: { WHARF_DEPLOY_ROOT: deployRoot } });
});
afterAll(async () => {
  await t.close();
  await fs.rm(deployRoot, { recursive: true, force: true });
});

const send = (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown) =>
  t.app.inject({
    method,
    url,
    headers: { "x-apikey": t.adminKey, ...(payload !== undefined && { "content-type": "application/json" }) },
    ...(payload !== undefined && { payload: JSON.stringify(payload) }),
  });
const create = (name: string, body: unknown = {}) => send("POST", `/api/infrastructure/roles/create/${name}`, body);
const update = (name: string, body: unknown) => send("POST", `/api/infrastructure/roles/update/${name}`, body);

describe("roles", () => {
  it("creates (an empty body too), lists, updates partially, renames and deletes", async () => {
    const empty = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/roles/create/base",
      headers: { "x-apikey": t.adminKey },
    });
    expect(expectJson(empty, 201)).toEqual({ name: "base", variables: {}, dependsOn: [], items: [] });
    const web = expectJson(
      await create("web", {
        description: "Web servers",
        dependsOn: ["BASE"],
        variables: { Port: "80" },
        items: [{ type: "directory", path: "/var/www", mode: "0755" }],
      }),
      201,
    ) as Json;
    expect(web).toMatchObject({
      name: "web",
      description: "Web servers",
      dependsOn: ["base"],
      variables: { Port: "80" },
    });
    expect((web.items as Json[])[0]).toMatchObject({ type: "directory", path: "/var/www" });

    const listed = expectJson(await send("GET", "/api/infrastructure/roles/list")) as Json[];
    expect(listed.map((r) => r.name)).toEqual(["base", "web"]);
    expect(expectJson(await send("POST", "/api/infrastructure/roles/list?name=WEB"))).toEqual([web]);

    const renamed = expectJson(await update("web", { name: "www" })) as Json;
    expect(renamed).toEqual({ ...web, name: "www" });
    expectText(await update("web", {}), 404, "web");
    expectText(await create("WWW"), 409, "already exists");
    expectText(await create("bad-"), 400, "Invalid role name");

    const cleared = expectJson(await update("www", { dependsOn: [], items: [], description: null })) as Json;
    expect(cleared).toEqual({ name: "www", variables: { Port: "80" }, dependsOn: [], items: [] });
    expect((await send("POST", "/api/infrastructure/roles/delete/www")).body).toBe("");
    expectText(await send("DELETE", "/api/infrastructure/roles/delete/www"), 404);
  });

  it("refuses a missing dependency and any cycle, naming it", async () => {
    expectText(await create("a", { dependsOn: ["ghost"] }), 422, "The role 'ghost' does not exist.");
    expectText(await create("self", { dependsOn: ["self"] }), 422, "self -> self");
    await create("a");
    await create("b", { dependsOn: ["a"] });
    await create("c", { dependsOn: ["b"] });
    expectText(await update("a", { dependsOn: ["a"] }), 422, "a -> a");
    expectText(await update("a", { dependsOn: ["c"] }), 422, "cycle: a -> c -> b -> a");
    expectText(await update("b", { name: "b2", dependsOn: ["c"] }), 422, "b2 -> c -> b2");
    expect(expectJson(await send("GET", "/api/infrastructure/roles/list?name=a"))).toEqual([
      expect.objectContaining({ dependsOn: [] }),
    ]);
  });

  it("refuses to delete a role that servers or roles use, naming them", async () => {
    await create("used");
    await create("user", { dependsOn: ["used"] });
    await send("POST", "/api/infrastructure/servers/create/srv1", {
      serverType: "local",
      rootPath: path.join(deployRoot, "srv1"),
      roles: ["used"],
    });
    expectText(await send("POST", "/api/infrastructure/roles/delete/used"), 409, "srv1", "user");
    await send("POST", "/api/infrastructure/servers/update/srv1", { roles: [] });
    await update("user", { dependsOn: [] });
    expect((await send("POST", "/api/infrastructure/roles/delete/used")).statusCode).toBe(200);
  });

  it("validates items naming the field and keeps the order of a server's roles", async () => {
    expectText(await create("bad", { items: [{ type: "file" }] }), 400, "items[0]");
    expectText(await create("bad", { items: "nope" }), 400);
    // A huge list is refused before any item is looked at: by the JSON body's bounds over HTTP
    // (20,000 values), by its count (MAX_ITEMS) where no such bound applies (the CLI test).
    const huge = Array.from({ length: 10_001 }, (_, i) => ({ type: "process", pattern: `p${i}` }));
    expectText(await create("huge", { items: huge }), 413, "values");
    expectText(await send("GET", "/api/infrastructure/roles/list?name=huge"), 404);
    await create("r1");
    await create("r2");
    const server = expectJson(
      await send("POST", "/api/infrastructure/servers/create/srv2", {
        serverType: "local",
        rootPath: path.join(deployRoot, "srv2"),
        roles: ["r2", "r1", "R2"],
      }),
      201,
    ) as Json;
    expect(server.roles).toEqual(["r2", "r1"]);
    const sensitive = expectJson(
      await create("secret", { items: [{ type: "file", path: "/s", content: "very-secret-text", sensitive: true }] }),
      201,
    );
    expect(JSON.stringify(sensitive)).not.toContain("very-secret-text");
    expect(JSON.stringify(expectJson(await send("GET", "/api/infrastructure/roles/list")))).not.toContain(
      "very-secret-text",
    );
  });
});
