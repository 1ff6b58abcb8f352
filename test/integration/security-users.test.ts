import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, readOne } from "../helpers/fixtures.js";

/** `/api/security/users/...` and `/api/security/groups/...` (docs/compat.md 5.4; pgutil `security users|groups`). */

describe("users and groups", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const call = (method: "GET" | "POST" | "PUT" | "DELETE", url: string, payload?: unknown) =>
    t.app.inject({ method, url, headers: admin(), ...(payload === undefined ? {} : { payload: payload as object }) });
  const users = async (query = "") => {
    const res = await call("GET", `/api/security/users/list${query}`);
    expect(res.statusCode).toBe(200);
    return res.json() as { name: string; displayName?: string; email?: string; groups: string[] }[];
  };
  const groups = async () =>
    (await call("GET", "/api/security/groups/list")).json() as { name: string; users: string[] }[];
  const canAdminister = async (user: string, password: string) =>
    (await t.app.inject({ method: "GET", url: "/api/security/groups/list", headers: basic(user, password) }))
      .statusCode;

  beforeAll(async () => {
    t = await buildTestApp();
  });
  afterAll(async () => t?.close());

  it("starts with no users and no groups (top-level arrays)", async () => {
    expect(await users()).toEqual([]);
    expect(await groups()).toEqual([]);
  });

  it("adds a user and answers it without its password", async () => {
    const res = await call("POST", "/api/security/users/add", {
      name: "jsmith",
      displayName: "John Smith",
      email: "john@example.com",
      password: "first-password-1",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(res.json()).toEqual({ name: "jsmith", displayName: "John Smith", email: "john@example.com", groups: [] });
    const row = await readOne<{ password_hash: string }>(
      t.database,
      "SELECT password_hash FROM users WHERE name_key = 'jsmith'",
    );
    expect(row?.password_hash).toMatch(/^scrypt\$/);
    expect(row?.password_hash).not.toContain("first-password-1");
    expect(JSON.stringify(await users())).not.toContain("password");
  });

  it("takes ProGet's `mail` spelling, PUT, and a user with no password or optional members", async () => {
    const res = await call("PUT", "/api/security/users/add", { name: "Dana", mail: "dana@example.com", extra: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: "Dana", email: "dana@example.com", groups: [] });
    const bare = await call("POST", "/api/security/users/add", { name: "bare", displayName: null, email: "  " });
    expect(bare.json()).toEqual({ name: "bare", groups: [] });
  });

  it.each([
    ["a taken name, in another case", { name: "JSMITH" }, 409, "name"],
    ["the reserved name Anonymous", { name: "anonymous" }, 400, "name"],
    ["a name with ':'", { name: "a:b" }, 400, "name"],
    ["no name", { displayName: "x" }, 400, "name"],
    ["a blank name", { name: "   " }, 400, "name"],
    ["a name that is not a string", { name: 5 }, 400, "name"],
    ["an empty password", { name: "pw-less", password: "" }, 400, "password"],
    ["a one-letter password", { name: "weak", password: "a" }, 400, "password: must be at least 8 characters"],
    ["a password of one space", { name: "weak", password: " " }, 400, "password: must be at least 8 characters"],
    ["a password of spaces", { name: "weak", password: "          " }, 400, "password: must not be one character"],
    ["a common password", { name: "weak", password: "Password1" }, 400, "password: is one of the most common"],
    ["the name as password", { name: "Weakling7", password: "weakling7" }, 400, "password: must not be the user name"],
    ["an unknown group", { name: "grouped", groups: ["nope"] }, 400, "groups"],
    ["groups that are not a list", { name: "grouped", groups: "Developers" }, 400, "groups"],
  ])("refuses %s", async (_name, payload, status, mention) => {
    const before = (await users()).length;
    const res = await call("POST", "/api/security/users/add", payload);
    expect(res.statusCode, res.body).toBe(status);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toContain(mention);
    expect((await users()).length).toBe(before);
  });

  it("lets a user log in with the password once granted a privilege", async () => {
    expect(await canAdminister("jsmith", "first-password-1")).toBe(403);
    const grant = await call("POST", "/api/security/permissions/add", { user: "JSmith", task: "Administer" });
    expect(grant.statusCode).toBe(200);
    expect(await canAdminister("jsmith", "first-password-1")).toBe(200);
    expect(await canAdminister("JSMITH", "first-password-1")).toBe(200); // names are case-insensitive
    expect(await canAdminister("jsmith", "wrong")).toBe(403);
  });

  it("finds users by a search term in name, display name or e-mail", async () => {
    expect((await users("?search-term=SMITH")).map((u) => u.name)).toEqual(["jsmith"]);
    expect((await users("?search-term=example.com")).map((u) => u.name)).toEqual(["Dana", "jsmith"]);
    expect((await users("?search-term=zzz")).map((u) => u.name)).toEqual([]);
    expect((await users()).map((u) => u.name)).toEqual(["bare", "Dana", "jsmith"]);
  });

  it("edits only the members given, at /users/edit and ProGet's /users/update", async () => {
    const edit = await call("POST", "/api/security/users/edit", { name: "JSMITH", displayName: "J. Smith" });
    expect(edit.statusCode).toBe(200);
    expect(edit.json()).toEqual({ name: "jsmith", displayName: "J. Smith", email: "john@example.com", groups: [] });
    const update = await call("POST", "/api/security/users/update", {
      name: "jsmith",
      email: "",
      password: "second-password-2",
    });
    expect(update.json()).toEqual({ name: "jsmith", displayName: "J. Smith", groups: [] });
    expect(await canAdminister("jsmith", "first-password-1")).toBe(403);
    expect(await canAdminister("jsmith", "second-password-2")).toBe(200);
    const weak = await call("POST", "/api/security/users/edit", { name: "jsmith", password: "12345678" });
    expect(weak.statusCode).toBe(400);
    expect(weak.body).toBe("password: is one of the most common passwords, which are tried first; choose another");
    expect(await canAdminister("jsmith", "second-password-2")).toBe(200);
    const missing = await call("POST", "/api/security/users/edit", { name: "ghost", displayName: "x" });
    expect(missing.statusCode).toBe(404);
    const nameless = await call("POST", "/api/security/users/edit", { displayName: "x" });
    expect(nameless.statusCode).toBe(400);
    expect(nameless.body).toContain("name");
  });

  it("creates a group, then replaces its members through groups/add as pgutil does", async () => {
    const created = await call("POST", "/api/security/groups/add", { name: "Developers" });
    expect(created.statusCode).toBe(200);
    expect(created.json()).toEqual({ name: "Developers", users: [] });
    // pgutil `security groups members add`: read the group, post the whole member list back.
    const replaced = await call("POST", "/api/security/groups/add", {
      name: "developers",
      users: ["JSMITH", "dana", "Dana"],
    });
    expect(replaced.json()).toEqual({ name: "Developers", users: ["Dana", "jsmith"] });
    const alias = await call("POST", "/api/security/groups/add", { name: "Ops", user: ["bare"] });
    expect(alias.json()).toEqual({ name: "Ops", users: ["bare"] });
    expect(await groups()).toEqual([
      { name: "Developers", users: ["Dana", "jsmith"] },
      { name: "Ops", users: ["bare"] },
    ]);
    expect((await users()).find((u) => u.name === "jsmith")?.groups).toEqual(["Developers"]);
    // A name alone keeps the members.
    const kept = await call("POST", "/api/security/groups/add", { name: "Developers" });
    expect(kept.json().users).toEqual(["Dana", "jsmith"]);
    const unknown = await call("POST", "/api/security/groups/add", { name: "Developers", users: ["ghost"] });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.body).toContain("users");
    const nameless = await call("POST", "/api/security/groups/add", { users: [] });
    expect(nameless.statusCode).toBe(400);
    expect(nameless.body).toContain("name");
  });

  it("sets a user's groups through users/edit", async () => {
    const res = await call("POST", "/api/security/users/edit", { name: "bare", groups: ["developers", "OPS"] });
    expect(res.json().groups).toEqual(["Developers", "Ops"]);
    const cleared = await call("POST", "/api/security/users/edit", { name: "bare", groups: [] });
    expect(cleared.json().groups).toEqual([]);
    expect((await groups()).find((g) => g.name === "Ops")?.users).toEqual([]);
  });

  it("adds and removes single members", async () => {
    const added = await call("POST", "/api/security/groups/members/add?group=ops&user=BARE");
    expect(added.statusCode).toBe(200);
    expect(added.json()).toEqual({ name: "Ops", users: ["bare"] });
    const twice = await call("POST", "/api/security/groups/members/add?group=Ops&user=bare");
    expect(twice.json().users).toEqual(["bare"]);
    const removed = await call("DELETE", "/api/security/groups/members/remove?group=Ops&user=bare");
    expect(removed.json()).toEqual({ name: "Ops", users: [] });
    const body = await call("POST", "/api/security/groups/members/add", { group: "Ops", user: "Dana" });
    expect(body.json().users).toEqual(["Dana"]);
    expect((await call("POST", "/api/security/groups/members/add?group=nope&user=bare")).statusCode).toBe(404);
    expect((await call("POST", "/api/security/groups/members/add?group=Ops&user=ghost")).statusCode).toBe(404);
    const missing = await call("POST", "/api/security/groups/members/add?user=bare");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("group");
  });

  it("grants a group's permissions to its members", async () => {
    await call("POST", "/api/security/users/add", { name: "carol", password: "carol-password-1" });
    expect(await canAdminister("carol", "carol-password-1")).toBe(403);
    const grant = await call("POST", "/api/security/permissions/add", { group: "Ops", task: "Administer" });
    expect(grant.statusCode).toBe(200);
    await call("POST", "/api/security/groups/members/add?group=Ops&user=carol");
    expect(await canAdminister("carol", "carol-password-1")).toBe(200);
  });

  it("deletes a group with POST or DELETE, with its permissions; deleting a missing group is not an error", async () => {
    const res = await call("DELETE", "/api/security/groups/delete?group=OPS");
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("");
    expect((await groups()).map((g) => g.name)).toEqual(["Developers"]);
    expect(await canAdminister("carol", "carol-password-1")).toBe(403);
    const permissions = (await call("GET", "/api/security/permissions/list")).json() as { group?: string }[];
    expect(permissions.some((p) => p.group === "Ops")).toBe(false);
    expect((await call("POST", "/api/security/groups/delete?group=Ops")).statusCode).toBe(200);
    const missing = await call("POST", "/api/security/groups/delete");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("group");
  });

  it("deletes a user with its memberships, permissions and personal keys; a missing user is not an error", async () => {
    const key = await call("POST", "/api/api-keys/create", { type: "Personal", user: "jsmith" });
    expect(key.statusCode).toBe(201);
    const res = await call("POST", "/api/security/users/delete?user=JSmith");
    expect(res.statusCode).toBe(200);
    expect((await users()).map((u) => u.name)).not.toContain("jsmith");
    expect((await groups()).find((g) => g.name === "Developers")?.users).toEqual(["Dana"]);
    const permissions = (await call("GET", "/api/security/permissions/list")).json() as { user?: string }[];
    expect(permissions.some((p) => p.user?.toLowerCase() === "jsmith")).toBe(false);
    const keys = (await call("GET", "/api/api-keys/list")).json() as { id: number }[];
    expect(keys.map((k) => k.id)).not.toContain(key.json().id);
    expect(await canAdminister("jsmith", "second-password-2")).toBe(403);
    expect((await call("DELETE", "/api/security/users/delete?user=jsmith")).statusCode).toBe(200);
    const missing = await call("DELETE", "/api/security/users/delete");
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("user");
  });

  it("refuses a body that is not JSON", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      headers: { ...admin(), "content-type": "text/plain" },
      payload: "name=x",
    });
    expect(res.statusCode).toBe(415);
  });
});
