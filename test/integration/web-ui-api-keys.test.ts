import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUser, grant, readOne } from "../helpers/fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * The API keys administration page of the web UI (issue 16 section 1): list, create (the key shown
 * once), revoke, through the API's own service and with the API's own need; CSRF on every post, a
 * 403 page for a user without the privilege, and every stored string rendered as text.
 */

const ADMIN_PASSWORD = "admin-password-1";
const VIEWER_PASSWORD = "viewer-password-1";
const HOSTILE = `<script>alert("x")</script> & "quotes"`;

/** A browser holding its cookies (paths ignored: the tests use "/" and "/sign-in"). */
class Browser {
  readonly cookies = new Map<string, string>();
  constructor(private readonly t: TestApp) {}

  async request(options: {
    method?: "GET" | "POST";
    url: string;
    form?: [string, string][];
  }): Promise<LightMyRequestResponse> {
    const cookie = [...this.cookies].map(([name, value]) => `${name}=${value}`).join("; ");
    const res = await this.t.app.inject({
      method: options.method ?? "GET",
      url: options.url,
      headers: {
        ...(cookie ? { cookie } : {}),
        ...(options.form ? { "content-type": "application/x-www-form-urlencoded" } : {}),
      },
      ...(options.form ? { payload: new URLSearchParams(options.form).toString() } : {}),
    });
    for (const set of res.cookies) {
      if (set.value === "" || set.maxAge === 0) this.cookies.delete(set.name);
      else this.cookies.set(set.name, set.value);
    }
    return res;
  }

  async signIn(user: string, password: string): Promise<void> {
    const form = await this.request({ url: "/sign-in" });
    const _csrf = tokenIn(form.body, "/sign-in");
    const res = await this.request({
      method: "POST",
      url: "/sign-in",
      form: [
        ["_csrf", _csrf],
        ["user", user],
        ["password", password],
      ],
    });
    expect(res.statusCode).toBe(303);
  }

  /** Posts the create form with these fields and the page's own CSRF token. */
  async create(fields: [string, string][]): Promise<LightMyRequestResponse> {
    const page = await this.request({ url: "/admin/api-keys" });
    expect(page.statusCode).toBe(200);
    return this.request({
      method: "POST",
      url: "/admin/api-keys",
      form: [["_csrf", tokenIn(page.body, "/admin/api-keys")], ...fields],
    });
  }
}

/** The CSRF token of the page's form posting to `action`. */
function tokenIn(html: string, action: string): string {
  const match = new RegExp(`action="${action}"[^>]*>\\s*<input type="hidden" name="_csrf" value="([^"]+)"`).exec(html);
  expect(match, `a CSRF token in the form posting to ${action}`).not.toBeNull();
  return match?.[1] ?? "";
}

/** The key shown on the "created" page. */
function shownKey(html: string): string {
  const match = /<code id="new-key">([^<]+)<\/code>/.exec(html);
  expect(match, "the new key on the page").not.toBeNull();
  return match?.[1] ?? "";
}

async function keyCount(t: TestApp): Promise<number | undefined> {
  return (await readOne<{ n: number }>(t.database, "SELECT COUNT(*) AS n FROM api_keys"))?.n;
}

let t: TestApp;
const logLines: string[] = [];
let admin: Browser;

beforeAll(async () => {
  t = await buildTestApp({
    logger: { level: "info", stream: { write: (line: string) => void logLines.push(line) } },
  });
  await createUpackFixtures(t).createFeed("main");
  await grant(t.database, {
    user: await createUser(t.database, "root", ADMIN_PASSWORD),
    attributes: ["Admin_ConfigureProGet"],
  });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", VIEWER_PASSWORD),
    attributes: ["Feeds_ViewFeed"],
  });
  admin = new Browser(t);
  await admin.signIn("root", ADMIN_PASSWORD);
});
afterAll(async () => t.close());

describe("the API keys page", () => {
  it("creates a System key shown once, which then works against the API, and lists it without the key", async () => {
    const res = await admin.create([
      ["type", "System"],
      ["displayName", "ci robot"],
      ["systemApis", "full-control"],
      ["systemApis", "feeds"],
      ["expiration", "2999-12-31"],
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers["cache-control"]).toBe("no-store");
    expect(res.body).toContain("it will not be shown again");
    expect(res.body).toContain('data-copy="new-key"');
    const key = shownKey(res.body);

    const api = await t.app.inject({ url: "/api/api-keys/list", headers: { "x-apikey": key } });
    expect(api.statusCode).toBe(200);
    const listed = (api.json() as Array<{ displayName?: string; systemApis?: string[]; expiration?: string }>).find(
      (k) => k.displayName === "ci robot",
    );
    expect(listed).toMatchObject({ systemApis: ["full-control", "feeds"], expiration: "2999-12-31T23:59:59.000Z" });

    const list = await admin.request({ url: "/admin/api-keys" });
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain("ci robot");
    expect(list.body).toContain("full-control, feeds");
    // Its row: expires at the end of the day picked, and last used just now (by the API call above).
    const row = /<tr>\s*<td>ci robot[\s\S]*?<\/tr>/.exec(list.body)?.[0] ?? "";
    expect(row).toContain('<td class="wide">2999-12-31 23:59 UTC</td>');
    expect(row).toMatch(/<td class="wide">\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC<\/td>\s*<td>\s*<form/);
    expect(list.body).not.toContain(key);
    expect(list.body).toMatch(/action="\/admin\/api-keys\/\d+\/revoke"/);
    expect(logLines.join("\n")).not.toContain(key);
  });

  it("creates Feed and Personal keys that act as the API says", async () => {
    const feed = await admin.create([
      ["type", "Feed"],
      ["displayName", "reader"],
      ["feed", "main"],
      ["packagePermissions", "view"],
    ]);
    expect(feed.statusCode, feed.body).toBe(201);
    const feedKey = shownKey(feed.body);
    const read = await t.app.inject({ url: "/upack/main/packages", headers: { "x-apikey": feedKey } });
    expect(read.statusCode).toBe(200);
    const admin403 = await t.app.inject({ url: "/api/api-keys/list", headers: { "x-apikey": feedKey } });
    expect(admin403.statusCode).toBe(403);

    const personal = await admin.create([
      ["type", "Personal"],
      ["displayName", "mine"],
      ["user", "root"],
    ]);
    expect(personal.statusCode, personal.body).toBe(201);
    const personalKey = shownKey(personal.body);
    expect((await t.app.inject({ url: "/api/api-keys/list", headers: { "x-apikey": personalKey } })).statusCode).toBe(
      200,
    );
    const list = await admin.request({ url: "/admin/api-keys" });
    expect(list.body).toContain("view on feed main");
    expect(list.body).toContain("acts as root");
  });

  it("shows the service's error again with the form filled in (400), creating nothing", async () => {
    const before = await keyCount(t);
    const res = await admin.create([
      ["type", "Feed"],
      ["displayName", "no scope"],
      ["packagePermissions", "view"],
    ]);
    expect(res.statusCode).toBe(400);
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.body).toContain("feed: a Feed key needs exactly one of feed or feedGroup");
    expect(res.body).toContain('value="no scope"');
    expect(res.body).toMatch(/<option value="Feed" selected>/);

    const system = await admin.create([["type", "System"]]);
    expect(system.statusCode).toBe(400);
    expect(system.body).toContain("systemApis: is required for a System key");
    const unknownUser = await admin.create([
      ["type", "Personal"],
      ["user", "nobody"],
    ]);
    expect(unknownUser.statusCode).toBe(400);
    expect(unknownUser.body).toContain("user: no user is named &#39;nobody&#39;");
    const past = await admin.create([
      ["type", "System"],
      ["systemApis", "feeds"],
      ["expiration", "2001-01-01"],
    ]);
    expect(past.statusCode).toBe(400);
    const badType = await admin.create([["type", "Root"]]);
    expect(badType.statusCode).toBe(400);
    expect(await keyCount(t)).toBe(before);
  });

  it("revokes a key: 303 back to the list, and the key is refused from then on", async () => {
    const created = await admin.create([
      ["type", "System"],
      ["displayName", "short-lived"],
      ["systemApis", "full-control"],
    ]);
    const key = shownKey(created.body);
    const id = (await readOne<{ id: number }>(t.database, "SELECT id FROM api_keys WHERE display_name = 'short-lived'"))
      ?.id;
    expect((await t.app.inject({ url: "/api/api-keys/list", headers: { "x-apikey": key } })).statusCode).toBe(200);
    const list = await admin.request({ url: "/admin/api-keys" });
    const res = await admin.request({
      method: "POST",
      url: `/admin/api-keys/${id}/revoke`,
      form: [["_csrf", tokenIn(list.body, `/admin/api-keys/${id}/revoke`)]],
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/admin/api-keys");
    expect((await t.app.inject({ url: "/api/api-keys/list", headers: { "x-apikey": key } })).statusCode).toBe(403);
    expect((await admin.request({ url: "/admin/api-keys" })).body).not.toContain("short-lived");

    // Once more: the key is gone (404 page), and an id that is no number is no key either.
    const again = await admin.request({
      method: "POST",
      url: `/admin/api-keys/${id}/revoke`,
      form: [["_csrf", tokenIn(list.body, `/admin/api-keys/${id}/revoke`)]],
    });
    expect(again.statusCode).toBe(404);
    const nonsense = await admin.request({
      method: "POST",
      url: "/admin/api-keys/abc/revoke",
      form: [["_csrf", tokenIn(list.body, "/admin/api-keys")]],
    });
    expect(nonsense.statusCode).toBe(404);
  });

  it("renders display names and descriptions carrying HTML as text", async () => {
    const res = await admin.create([
      ["type", "System"],
      ["displayName", HOSTILE],
      ["description", HOSTILE],
      ["systemApis", "feeds"],
    ]);
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain("<script>alert");
    const list = await admin.request({ url: "/admin/api-keys" });
    expect(list.body).not.toContain("<script>alert");
    expect(list.body).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;");
  });
});

describe("what the page refuses", () => {
  it("refuses a forged post without the CSRF token (403) and creates or revokes nothing", async () => {
    const before = await keyCount(t);
    const forged = await admin.request({
      method: "POST",
      url: "/admin/api-keys",
      form: [
        ["type", "System"],
        ["displayName", "forged"],
        ["systemApis", "full-control"],
      ],
    });
    expect(forged.statusCode).toBe(403);
    expect(forged.body).not.toContain("new-key");
    const id = (await readOne<{ id: number }>(t.database, "SELECT MIN(id) AS id FROM api_keys"))?.id;
    const revoke = await admin.request({ method: "POST", url: `/admin/api-keys/${id}/revoke`, form: [] });
    expect(revoke.statusCode).toBe(403);
    expect(await keyCount(t)).toBe(before);
  });

  it("sends Anonymous to sign in, and gives a user without the privilege the 403 page with no buttons", async () => {
    const anonymous = await t.app.inject({ url: "/admin/api-keys" });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe("/sign-in?next=%2Fadmin%2Fapi-keys");

    const viewer = new Browser(t);
    await viewer.signIn("viewer", VIEWER_PASSWORD);
    const page = await viewer.request({ url: "/admin/api-keys" });
    expect(page.statusCode).toBe(403);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.body).not.toContain("Revoke");
    expect(page.body).not.toContain("Create key");
    expect(page.body).not.toContain("ci robot");

    // Forging the posts with the viewer's own valid token: refused by the privilege, nothing changes.
    const feeds = await viewer.request({ url: "/feeds" });
    const token = tokenIn(feeds.body, "/sign-out");
    const before = await keyCount(t);
    const create = await viewer.request({
      method: "POST",
      url: "/admin/api-keys",
      form: [
        ["_csrf", token],
        ["type", "System"],
        ["systemApis", "full-control"],
      ],
    });
    expect(create.statusCode).toBe(403);
    expect(create.body).not.toContain("new-key");
    const id = (await readOne<{ id: number }>(t.database, "SELECT MIN(id) AS id FROM api_keys"))?.id;
    const revoke = await viewer.request({
      method: "POST",
      url: `/admin/api-keys/${id}/revoke`,
      form: [["_csrf", token]],
    });
    expect(revoke.statusCode).toBe(403);
    expect(await keyCount(t)).toBe(before);
  });
});
