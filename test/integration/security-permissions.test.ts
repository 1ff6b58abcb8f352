import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ATTRIBUTES } from "../../src/domain/attributes.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createGroup, createUser } from "../helpers/fixtures.js";

/**
 * `/api/security/tasks/...`, `/api/security/attributes/list` and `/api/security/permissions/...`
 * (docs/compat.md 5.4 and 9; pgutil `security tasks|attributes|permissions`).
 */

describe("tasks, attributes and permissions", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const call = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: admin(), ...(payload === undefined ? {} : { payload: payload as object }) });
  const tasks = async () => (await call("GET", "/api/security/tasks/list")).json() as Record<string, unknown>[];
  const permissions = async () =>
    (await call("GET", "/api/security/permissions/list")).json() as Record<string, unknown>[];

  beforeAll(async () => {
    t = await buildTestApp();
    for (const [name, feedGroup] of [
      ["Approved", "Production-Packages"],
      ["unapproved", undefined],
    ] as const) {
      const res = await call("POST", "/api/management/feeds/create", {
        name,
        feedType: "universal",
        ...(feedGroup ? { feedGroup } : {}),
      });
      expect(res.statusCode, res.body).toBe(201);
    }
    const dave = await createUser(t.database, "dave", "dave-password-1");
    await createGroup(t.database, "Developers", [dave]);
  });
  afterAll(async () => t?.close());

  it("ships the built-in tasks, built-in first", async () => {
    const list = await tasks();
    expect(list.map((task) => task.name)).toEqual([
      "Administer",
      "Manage Feeds",
      "Publish Packages",
      "View & Download Packages",
    ]);
    const byName = Object.fromEntries(list.map((task) => [task.name, task]));
    expect(byName.Administer).toMatchObject({ feedScoped: false, builtIn: true });
    expect(byName.Administer?.attributes).toEqual([...ATTRIBUTES]);
    expect(byName["View & Download Packages"]).toEqual({
      name: "View & Download Packages",
      description: expect.any(String),
      feedScoped: true,
      attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
      builtIn: true,
    });
    expect(byName["Publish Packages"]?.attributes).toEqual(
      expect.arrayContaining(["Feeds_AddPackage", "Feeds_OverwritePackage", "Feeds_AcceptPackagePromotions"]),
    );
    expect(byName["Manage Feeds"]?.attributes).toEqual(
      expect.arrayContaining(["Admin_ManageFeed", "Admin_ManageConnectors"]),
    );
  });

  it("lists every privilege attribute with its feed scope", async () => {
    const res = await call("GET", "/api/security/attributes/list");
    expect(res.statusCode).toBe(200);
    const list = res.json() as { name: string; feedScoped: boolean }[];
    expect(list.map((a) => a.name)).toEqual([...ATTRIBUTES]);
    expect(list.find((a) => a.name === "Feeds_ViewFeed")?.feedScoped).toBe(true);
    expect(list.find((a) => a.name === "Admin_ManageFeed")?.feedScoped).toBe(true);
    expect(list.find((a) => a.name === "Admin_ConfigureProGet")?.feedScoped).toBe(false);
    expect(list.find((a) => a.name === "Infrastructure_Manage")?.feedScoped).toBe(false);
  });

  it("gives Anonymous nothing by default: there are no permissions", async () => {
    expect(await permissions()).toEqual([]);
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/Approved" })).statusCode).toBe(401);
  });

  it("adds custom tasks, storing attributes in their canonical spelling", async () => {
    const res = await call("POST", "/api/security/tasks/add", {
      name: "Basic Feed Access",
      description: "Allows basic feed access",
      attributes: ["feeds_viewfeed", "FEEDS_DOWNLOADPACKAGE", "Feeds_PullPackage", "feeds_viewfeed"],
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      name: "Basic Feed Access",
      description: "Allows basic feed access",
      feedScoped: true,
      attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage", "Feeds_PullPackage"],
      builtIn: false,
    });
    const global = await call("PUT", "/api/security/tasks/add", {
      name: "Auditor",
      attributes: ["Projects_View", "Feeds_ViewFeed"],
    });
    expect(global.json()).toMatchObject({ name: "Auditor", feedScoped: false, builtIn: false });
    expect((await tasks()).map((task) => task.name).slice(4)).toEqual(["Auditor", "Basic Feed Access"]);
  });

  it.each([
    ["a taken name", { name: "basic feed access", attributes: ["Feeds_ViewFeed"] }, 409, "name"],
    ["a built-in name", { name: "ADMINISTER", attributes: ["Feeds_ViewFeed"] }, 409, "name"],
    ["an unknown attribute", { name: "T1", attributes: ["Feeds_ViewFeed", "Feeds_Fly"] }, 400, "attributes"],
    ["no attributes", { name: "T1", attributes: [] }, 400, "attributes"],
    ["attributes that are not a list", { name: "T1", attributes: "Feeds_ViewFeed" }, 400, "attributes"],
    ["no name", { attributes: ["Feeds_ViewFeed"] }, 400, "name"],
    [
      "a feed scope for global attributes",
      { name: "T1", feedScoped: true, attributes: ["Admin_ConfigureProGet"] },
      400,
      "feedScoped",
    ],
  ])("refuses a task with %s", async (_name, payload, status, mention) => {
    const before = (await tasks()).length;
    const res = await call("POST", "/api/security/tasks/add", payload);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toContain(mention);
    expect((await tasks()).length).toBe(before);
  });

  it("grants a feed-scoped task to Anonymous on one feed only", async () => {
    const res = await call("POST", "/api/security/permissions/add", {
      user: "anonymous",
      task: "view & download packages",
      feed: "APPROVED",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      id: expect.any(Number),
      user: "Anonymous",
      task: "View & Download Packages",
      feed: "Approved",
      deny: false,
    });
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/approved" })).statusCode).toBe(200);
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/unapproved" })).statusCode).toBe(401);
  });

  it("grants a task to a group on a feed group, keeping the group's spelling", async () => {
    const res = await call("POST", "/api/security/permissions/add", {
      group: "developers",
      task: "Publish Packages",
      feedGroup: "Production-Packages",
    });
    expect(res.json()).toMatchObject({
      group: "Developers",
      task: "Publish Packages",
      feedGroup: "Production-Packages",
    });
    const headers = basic("dave", "dave-password-1");
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/Approved", headers })).statusCode).toBe(
      200,
    );
    expect(
      (await t.app.inject({ method: "GET", url: "/api/management/feeds/get/unapproved", headers })).statusCode,
    ).toBe(403);
  });

  it("lets a deny of a user win over their group's grant", async () => {
    const deny = await call("POST", "/api/security/permissions/add", {
      user: "dave",
      task: "View & Download Packages",
      feed: "Approved",
      deny: true,
    });
    expect(deny.json()).toMatchObject({ user: "dave", deny: true, feed: "Approved" });
    const headers = basic("dave", "dave-password-1");
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/Approved", headers })).statusCode).toBe(
      403,
    );
    const removed = await call("DELETE", `/api/security/permissions/remove?id=${deny.json().id}`);
    expect(removed.statusCode).toBe(200);
    expect((await t.app.inject({ method: "GET", url: "/api/management/feeds/get/Approved", headers })).statusCode).toBe(
      200,
    );
  });

  it.each([
    ["both a user and a group", { user: "dave", group: "Developers", task: "Administer" }, 400, "user"],
    ["neither user nor group", { task: "Administer" }, 400, "user"],
    ["an unknown user", { user: "ghost", task: "Administer" }, 400, "user"],
    ["an unknown group", { group: "ghosts", task: "Administer" }, 400, "group"],
    ["no task", { user: "dave" }, 400, "task"],
    ["an unknown task", { user: "dave", task: "Fly" }, 400, "task"],
    [
      "a feed and a feed group",
      { user: "dave", task: "Publish Packages", feed: "Approved", feedGroup: "x" },
      400,
      "feedGroup",
    ],
    ["an unknown feed", { user: "dave", task: "Publish Packages", feed: "nope" }, 400, "feed"],
    ["a global task scoped to a feed", { user: "dave", task: "Administer", feed: "Approved" }, 400, "task"],
    ["a global task scoped to a feed group", { user: "dave", task: "Auditor", feedGroup: "g" }, 400, "task"],
    ["a deny that is not a boolean", { user: "dave", task: "Administer", deny: "maybe" }, 400, "deny"],
    [
      "the same permission twice",
      { group: "Developers", task: "publish packages", feedGroup: "production-packages" },
      409,
      "exists",
    ],
  ])("refuses a permission with %s", async (_name, payload, status, mention) => {
    const before = (await permissions()).length;
    const res = await call("POST", "/api/security/permissions/add", payload);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toContain(mention);
    expect((await permissions()).length).toBe(before);
  });

  it("lists permissions in pgutil's shape, without nulls", async () => {
    const res = await call("GET", "/api/security/permissions/list");
    expect(res.body).not.toContain("null");
    const list = res.json() as Record<string, unknown>[];
    expect(list).toEqual([
      { id: expect.any(Number), user: "Anonymous", task: "View & Download Packages", feed: "Approved", deny: false },
      {
        id: expect.any(Number),
        group: "Developers",
        task: "Publish Packages",
        feedGroup: "Production-Packages",
        deny: false,
      },
    ]);
  });

  it("removes permissions by id through delete (pgutil) or remove, with POST or DELETE", async () => {
    const [first, second] = (await permissions()) as { id: number }[];
    expect((await call("POST", `/api/security/permissions/delete?permissionId=${first?.id}`)).statusCode).toBe(200);
    expect((await call("DELETE", `/api/security/permissions/delete?permissionid=${second?.id}`)).statusCode).toBe(200);
    expect(await permissions()).toEqual([]);
    const again = await call("POST", `/api/security/permissions/remove?id=${first?.id}`);
    expect(again.statusCode).toBe(404);
    expect(again.headers["content-type"]).toBe("text/plain");
    const bad = await call("POST", "/api/security/permissions/delete?permissionId=x");
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("permissionId");
  });

  it("deletes custom tasks with their permissions, never built-in ones", async () => {
    const grant = await call("POST", "/api/security/permissions/add", {
      user: "dave",
      task: "Basic Feed Access",
      feed: "Approved",
    });
    expect(grant.statusCode).toBe(200);
    const builtIn = await call("POST", "/api/security/tasks/delete?task=Administer");
    expect(builtIn.statusCode).toBe(400);
    expect(builtIn.body).toContain("built in");
    const res = await call("DELETE", "/api/security/tasks/delete?task=basic%20feed%20access");
    expect(res.statusCode).toBe(200);
    expect((await tasks()).map((task) => task.name)).not.toContain("Basic Feed Access");
    expect(await permissions()).toEqual([]);
    expect((await call("POST", "/api/security/tasks/delete?task=Basic%20Feed%20Access")).statusCode).toBe(404);
    expect((await call("POST", "/api/security/tasks/delete")).statusCode).toBe(400);
    expect((await tasks()).filter((task) => task.builtIn)).toHaveLength(4);
  });

  it("refuses a body that is not JSON on every security route that reads one (415), and stores nothing", async () => {
    const before = { tasks: await tasks(), permissions: await permissions() };
    for (const url of [
      "/api/api-keys/create",
      "/api/security/users/add",
      "/api/security/users/edit",
      "/api/security/groups/add",
      "/api/security/tasks/add",
      "/api/security/permissions/add",
    ]) {
      const res = await t.app.inject({
        method: "POST",
        url,
        headers: { ...admin(), "content-type": "text/plain" },
        payload: "name=Raw&task=Administer&user=dave",
      });
      expect(res.statusCode, url).toBe(415);
      expect(res.headers["x-wharf-error"], url).toBe("JSON_REQUIRED");
      expect(res.body, url).toBe("Send the request body as JSON (Content-Type: application/json).");
    }
    expect({ tasks: await tasks(), permissions: await permissions() }).toEqual(before);
  });

  it("closes every security route to anonymous callers (401) and to non-administrators (403)", async () => {
    const routes: { method: "GET" | "POST" | "DELETE"; url: string; payload?: object }[] = [
      { method: "GET", url: "/api/security/users/list" },
      { method: "POST", url: "/api/security/users/add", payload: { name: "intruder" } },
      { method: "POST", url: "/api/security/users/edit", payload: { name: "dave", password: "owned-password" } },
      { method: "POST", url: "/api/security/users/update", payload: { name: "dave", password: "owned-password" } },
      { method: "DELETE", url: "/api/security/users/delete?user=dave" },
      { method: "GET", url: "/api/security/groups/list" },
      { method: "POST", url: "/api/security/groups/add", payload: { name: "Developers", users: [] } },
      { method: "DELETE", url: "/api/security/groups/delete?group=Developers" },
      { method: "POST", url: "/api/security/groups/members/add?group=Developers&user=dave" },
      { method: "DELETE", url: "/api/security/groups/members/remove?group=Developers&user=dave" },
      { method: "GET", url: "/api/security/tasks/list" },
      { method: "POST", url: "/api/security/tasks/add", payload: { name: "x", attributes: ["Feeds_ViewFeed"] } },
      { method: "POST", url: "/api/security/tasks/delete?task=Auditor" },
      { method: "GET", url: "/api/security/attributes/list" },
      { method: "GET", url: "/api/security/permissions/list" },
      { method: "POST", url: "/api/security/permissions/add", payload: { user: "dave", task: "Administer" } },
      { method: "POST", url: "/api/security/permissions/delete?permissionId=1" },
      { method: "POST", url: "/api/security/permissions/remove?id=1" },
    ];
    const manager = await createUser(t.database, "manager", "manager-password-1");
    const grant = await call("POST", "/api/security/permissions/add", { user: "manager", task: "Manage Feeds" });
    expect(grant.statusCode).toBe(200);
    expect(manager).toBeGreaterThan(0);
    const feedKey = await createFeedKey(t.database, "Approved", ["view", "add", "promote", "delete"]);
    for (const route of routes) {
      const anonymous = await t.app.inject(route);
      expect(anonymous.statusCode, `${route.method} ${route.url}`).toBe(401);
      for (const headers of [
        basic("manager", "manager-password-1"),
        { "x-apikey": feedKey },
        basic("dave", "dave-password-1"),
      ]) {
        const res = await t.app.inject({ ...route, headers });
        expect(res.statusCode, `${route.method} ${route.url}`).toBe(403);
      }
    }
    expect((await call("GET", "/api/security/users/list")).json().map((u: { name: string }) => u.name)).toEqual([
      "dave",
      "manager",
    ]);
  });

  it("describes every security route in /openapi.json with a summary and tags", async () => {
    const doc = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json();
    const expected: [string, string][] = [
      ["/api/api-keys/list", "get"],
      ["/api/api-keys/create", "post"],
      ["/api/api-keys/delete", "delete"],
      ["/api/security/users/list", "get"],
      ["/api/security/users/add", "post"],
      ["/api/security/users/edit", "post"],
      ["/api/security/users/delete", "post"],
      ["/api/security/groups/add", "post"],
      ["/api/security/groups/members/add", "post"],
      ["/api/security/tasks/add", "post"],
      ["/api/security/attributes/list", "get"],
      ["/api/security/permissions/add", "post"],
      ["/api/security/permissions/delete", "delete"],
    ];
    for (const [path, method] of expected) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      expect(operation.summary).toEqual(expect.any(String));
      expect(operation.tags.length).toBeGreaterThan(0);
    }
  });
});
