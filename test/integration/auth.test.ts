import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPostgres } from "../../src/storage/metadata-db.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { manualClock } from "../helpers/clock.js";
import {
  basic,
  createFeedKey,
  createGroup,
  createPersonalKey,
  createSystemKey,
  createUser,
  newKey,
  readAll,
  readOne,
} from "../helpers/fixtures.js";

/**
 * The one authentication path (docs/compat.md 0.1, 13 item 1; docs/clients.md 4 item 8), proven against
 * real routes: `/api/api-keys/list` and `/api/security/users/list` (full control or
 * Admin_ConfigureProGet) and `/metrics` (the `metrics` scope).
 */

const DENIED = "The specified API key does not have the proper permissions to perform this action.";
const KEYS = "/api/api-keys/list";
const USERS = "/api/security/users/list";

describe("authentication: every transport, one principal", () => {
  let t: TestApp;
  const time = manualClock();
  let adminUserKey: string;

  beforeAll(async () => {
    t = await buildTestApp({ clock: time.clock });
    const adminId = await createUser(t.database, "root", "root-password-1");
    await createUser(t.database, "plain", "plain-password-1");
    const res = await t.app.inject({
      method: "POST",
      url: "/api/security/permissions/add",
      headers: { "x-apikey": t.adminKey },
      payload: { user: "root", task: "Administer" },
    });
    expect(res.statusCode).toBe(200);
    adminUserKey = await createPersonalKey(t.database, adminId);
    // Feed keys are bound to a feed that exists (migration 0010).
    const feed = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": t.adminKey },
      payload: { name: "main", feedType: "universal" },
    });
    expect(feed.statusCode).toBe(201);
  });
  afterAll(async () => t?.close());

  const transports: [string, (key: string) => { url?: string; headers?: Record<string, string> }][] = [
    ["X-ApiKey header", (key) => ({ headers: { "X-ApiKey": key } })],
    ["X-ProGet-ApiKey header", (key) => ({ headers: { "X-ProGet-ApiKey": key } })],
    ["query key", (key) => ({ url: `?key=${encodeURIComponent(key)}` })],
    ["query API_Key", (key) => ({ url: `?API_Key=${encodeURIComponent(key)}` })],
    ["query Key", (key) => ({ url: `?Key=${encodeURIComponent(key)}` })],
    ["query api_key", (key) => ({ url: `?api_key=${encodeURIComponent(key)}` })],
    ["query KEY", (key) => ({ url: `?KEY=${encodeURIComponent(key)}` })],
    ["Basic api:<key>", (key) => ({ headers: basic("api", key) })],
  ];

  it.each(transports)("a full-control key in %s is accepted on both admin routes", async (_name, carry) => {
    for (const route of [KEYS, USERS]) {
      const { url = "", headers = {} } = carry(t.adminKey);
      const res = await t.app.inject({ method: "GET", url: `${route}${url}`, headers });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
      expect(Array.isArray(res.json())).toBe(true);
    }
  });

  it("accepts a form field `key` in an application/x-www-form-urlencoded POST", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/security/groups/add",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `key=${encodeURIComponent(t.adminKey)}&name=FormGroup`,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: "FormGroup", users: [] });
  });

  it("accepts a JSON root API_Key in a JSON POST, and never treats it as data", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      payload: { API_Key: t.adminKey, name: "json-made" },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ name: "json-made", groups: [] });
  });

  it("accepts Basic user:password and the X-ApiKey user:password pseudo-key of an administrator", async () => {
    for (const headers of [basic("root", "root-password-1"), { "x-apikey": "root:root-password-1" }]) {
      for (const route of [KEYS, USERS, "/metrics"]) {
        const res = await t.app.inject({ method: "GET", url: route, headers });
        expect(res.statusCode, `${route} ${JSON.stringify(headers)}`).toBe(200);
      }
    }
  });

  it("counts a personal key of an administrator as the administrator", async () => {
    for (const route of [KEYS, USERS, "/metrics"]) {
      const res = await t.app.inject({ method: "GET", url: route, headers: { "x-apikey": adminUserKey } });
      expect(res.statusCode).toBe(200);
    }
  });

  it("answers a caller with no credentials 401, a Basic challenge and a text/plain body", async () => {
    for (const route of [KEYS, USERS, "/metrics"]) {
      const res = await t.app.inject({ method: "GET", url: route });
      expect(res.statusCode).toBe(401);
      expect(res.headers["www-authenticate"]).toBe('Basic realm="Wharf"');
      expect(res.headers["content-type"]).toBe("text/plain");
      expect(res.body.length).toBeGreaterThan(0);
    }
  });

  it("refuses every bad or insufficient credential with 403 and the standard sentence", async () => {
    const expired = await createSystemKey(t.database, ["full-control"], {
      expiresAt: new Date(time.clock.now().getTime() - 1000).toISOString(),
    });
    const goneId = await createUser(t.database, "gone", "gone-password-1");
    const goneKey = await createPersonalKey(t.database, goneId);
    const del = await t.app.inject({
      method: "DELETE",
      url: "/api/security/users/delete?user=gone",
      headers: { "x-apikey": t.adminKey },
    });
    expect(del.statusCode).toBe(200);
    const plainId = (await readOne<{ id: number }>(t.database, "SELECT id FROM users WHERE name = 'plain'"))?.id ?? 0;
    const cases: [string, Record<string, string>, string[]][] = [
      ["an unknown key", { "x-apikey": newKey("unknown") }, [KEYS, USERS, "/metrics"]],
      ["an unknown key as Basic api:<key>", basic("api", newKey("unknown")), [KEYS, USERS]],
      ["an expired key", { "x-apikey": expired }, [KEYS, USERS, "/metrics"]],
      ["a wrong password (Basic)", basic("root", "wrong"), [KEYS, USERS, "/metrics"]],
      ["a wrong password (pseudo-key)", { "x-apikey": "root:wrong" }, [KEYS, USERS]],
      ["an unknown user", basic("nobody", "whatever"), [KEYS]],
      ["a deleted user's personal key", { "x-apikey": goneKey }, [KEYS, USERS]],
      ["a deleted user's password", basic("gone", "gone-password-1"), [USERS]],
      ["a user without the privilege", basic("plain", "plain-password-1"), [KEYS, USERS, "/metrics"]],
      [
        "the personal key of a user without the privilege",
        { "x-apikey": await createPersonalKey(t.database, plainId) },
        [KEYS, USERS],
      ],
      [
        "a feed key on a non-feed endpoint",
        { "x-apikey": await createFeedKey(t.database, "main", ["view", "add", "delete"]) },
        [KEYS, USERS, "/metrics"],
      ],
      [
        "a feeds-scoped System key",
        { "x-apikey": await createSystemKey(t.database, ["feeds"]) },
        [KEYS, USERS, "/metrics"],
      ],
      [
        "a metrics-scoped System key on the admin APIs",
        { "x-apikey": await createSystemKey(t.database, ["metrics"]) },
        [KEYS, USERS],
      ],
    ];
    for (const [name, headers, routes] of cases) {
      for (const route of routes) {
        const res = await t.app.inject({ method: "GET", url: route, headers });
        expect(res.statusCode, `${name} on ${route}`).toBe(403);
        expect(res.headers["content-type"], name).toBe("text/plain");
        expect(res.body, name).toBe(DENIED);
        expect(res.headers["www-authenticate"], name).toBeUndefined();
      }
    }
  });

  it("lets a System key scoped to `metrics` read /metrics only", async () => {
    const key = await createSystemKey(t.database, ["metrics"]);
    expect((await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": key } })).statusCode).toBe(200);
    expect((await t.app.inject({ method: "GET", url: KEYS, headers: { "x-apikey": key } })).statusCode).toBe(403);
  });

  it("refuses an unauthorised JSON or form POST whose key is in the body, without processing it", async () => {
    const json = await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      payload: { API_Key: newKey("bad"), name: "mallory" },
    });
    expect(json.statusCode).toBe(403);
    expect(json.body).toBe(DENIED);
    const weak = await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      payload: { api_key: await createSystemKey(t.database, ["feeds"]), name: "mallory" },
    });
    expect(weak.statusCode).toBe(403);
    const form = await t.app.inject({
      method: "POST",
      url: "/api/security/groups/add",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "key=plain:plain-password-1&name=MalloryGroup",
    });
    expect(form.statusCode).toBe(403);
    const anonymous = await t.app.inject({
      method: "POST",
      url: "/api/security/users/add",
      payload: { name: "mallory" },
    });
    expect(anonymous.statusCode).toBe(401);
    const users = await readAll(t.database, "SELECT name FROM users WHERE name_key = 'mallory'");
    const groups = await readAll(t.database, "SELECT name FROM groups WHERE name_key = 'mallorygroup'");
    expect(users).toEqual([]);
    expect(groups).toEqual([]);
  });

  it("records when a key was last used, at most once a minute", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { "x-apikey": t.adminKey },
      payload: { type: "System", systemApis: ["metrics"], displayName: "scraper" },
    });
    expect(created.statusCode).toBe(201);
    const { id, key } = created.json() as { id: number; key: string };
    const lastUsed = async () => {
      const list = (await t.app.inject({ method: "GET", url: KEYS, headers: { "x-apikey": t.adminKey } })).json();
      return (list as { id: number; lastUsed?: string }[]).find((k) => k.id === id)?.lastUsed;
    };
    expect(await lastUsed()).toBeUndefined();

    const first = time.at();
    await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": key } });
    expect(await lastUsed()).toBe(first);

    time.advance(30_000);
    await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": key } });
    expect(await lastUsed()).toBe(first);

    time.advance(31_000);
    const later = time.at();
    await t.app.inject({ method: "GET", url: "/metrics", headers: { "x-apikey": key } });
    expect(await lastUsed()).toBe(later);
  });

  it("stores API keys as SHA-256 only: no key appears anywhere in the database files", async () => {
    const chosen = `chosen-${newKey("plaintext")}`;
    const created = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { "x-apikey": t.adminKey },
      payload: { type: "System", systemApis: ["full-control"], key: chosen },
    });
    expect(created.statusCode).toBe(201);
    expect(created.json().key).toBe(chosen);
    const generated = await t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: { "x-apikey": t.adminKey },
      payload: { type: "System", systemApis: ["feeds"] },
    });
    const generatedKey = generated.json().key as string;
    expect(generatedKey.length).toBeGreaterThanOrEqual(32);

    const row =
      (await readOne<Record<string, unknown>>(t.database, "SELECT * FROM api_keys WHERE id = ?", created.json().id)) ??
      {};
    const sha256 = createHash("sha256").update(chosen).digest("hex");
    expect(row.key_hash).toBe(sha256);
    expect(Object.values(row)).not.toContain(chosen);

    const bytes = await storedBytes(t);
    expect(bytes.includes(sha256)).toBe(true); // the scan sees what is stored...
    for (const secret of [chosen, generatedKey, t.adminKey, "root-password-1"]) {
      expect(bytes.includes(secret), "a secret is stored in plain text").toBe(false); // ...and no secret is
    }
  });
});

/**
 * Everything the database holds, to search for secrets: SQLite's files (the journal too), or every
 * row of every PostgreSQL table as text.
 */
async function storedBytes(t: TestApp): Promise<Buffer> {
  if (!isPostgres(t.database)) {
    const files = fs.readdirSync(t.dataDir).filter((f) => f.startsWith("wharf.sqlite"));
    return Buffer.concat(files.map((f) => fs.readFileSync(path.join(t.dataDir, f))));
  }
  const tables = await readAll<{ name: string }>(
    t.database,
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`,
  );
  const rows: string[] = [];
  for (const { name } of tables) {
    const table = await readAll<{ row: string }>(t.database, `SELECT r::text AS row FROM "${name}" r`);
    rows.push(...table.map((entry) => entry.row));
  }
  return Buffer.from(rows.join("\n"));
}

describe("authentication: grants, groups, Anonymous and deny", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });

  beforeAll(async () => {
    t = await buildTestApp();
    await createUser(t.database, "member", "member-password-1");
    await createUser(t.database, "outsider", "outsider-password-1");
  });
  afterAll(async () => t?.close());

  async function addPermission(body: Record<string, unknown>): Promise<number> {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/security/permissions/add",
      headers: admin(),
      payload: body,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().id as number;
  }
  async function removePermission(id: number): Promise<void> {
    const res = await t.app.inject({
      method: "POST",
      url: `/api/security/permissions/delete?permissionId=${id}`,
      headers: admin(),
    });
    expect(res.statusCode).toBe(200);
  }
  const status = async (headers: Record<string, string> = {}) =>
    (await t.app.inject({ method: "GET", url: USERS, headers })).statusCode;

  it("gives nothing to anyone by default: Anonymous has no permissions", async () => {
    expect(await status()).toBe(401);
    expect(await status(basic("member", "member-password-1"))).toBe(403);
  });

  it("applies a group's grants to its members only", async () => {
    const memberId = (await readOne<{ id: number }>(t.database, "SELECT id FROM users WHERE name = 'member'"))?.id ?? 0;
    await createGroup(t.database, "Admins", [memberId]);
    const id = await addPermission({ group: "admins", task: "administer" });
    expect(await status(basic("member", "member-password-1"))).toBe(200);
    expect(await status(basic("outsider", "outsider-password-1"))).toBe(403);

    const deny = await addPermission({ user: "member", task: "Administer", deny: true });
    expect(await status(basic("member", "member-password-1"))).toBe(403); // deny beats grant
    await removePermission(deny);
    expect(await status(basic("member", "member-password-1"))).toBe(200);
    await removePermission(id);
    expect(await status(basic("member", "member-password-1"))).toBe(403);
  });

  it("ignores a deny scoped to a feed on a global need, and a feed-scoped grant of the super attribute", async () => {
    await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin(),
      payload: { name: "scoped-feed", feedType: "universal" },
    });
    const grant = await addPermission({ user: "outsider", task: "Manage Feeds", feed: "scoped-feed" });
    expect(await status(basic("outsider", "outsider-password-1"))).toBe(403);
    const global = await addPermission({ user: "outsider", task: "Administer" });
    const feedDeny = await addPermission({
      user: "outsider",
      task: "View & Download Packages",
      feed: "scoped-feed",
      deny: true,
    });
    expect(await status(basic("outsider", "outsider-password-1"))).toBe(200);
    for (const id of [grant, global, feedDeny]) await removePermission(id);
  });

  it("applies Anonymous grants to everyone, with or without credentials", async () => {
    const id = await addPermission({ user: "Anonymous", task: "Administer" });
    expect(await status()).toBe(200);
    expect(await status(basic("outsider", "outsider-password-1"))).toBe(200);
    expect(await status({ "x-apikey": await createSystemKey(t.database, ["feeds"]) })).toBe(403); // keys are judged by their scope
    expect(await status({ "x-apikey": newKey("unknown") })).toBe(403); // bad credentials are never Anonymous
    await removePermission(id);
    expect(await status()).toBe(401);
  });
});
