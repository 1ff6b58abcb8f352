import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUser, grant, readOne } from "../helpers/fixtures.js";
import { UiClient } from "../helpers/ui-client.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";
import { type Receiver, startReceiver } from "../helpers/webhook-receiver.js";

/**
 * The webhooks pages of the web UI (issue 17 section 5): list, create (the secret shown once),
 * edit, test, delete and the delivery log, through the API's service with the API's needs: a feed
 * manager sees and makes only their feed's webhooks, and a forged form cannot do more.
 */

const HOSTILE = `<script>alert("x")</script> & "quotes"`;
let t: TestApp;
let receiver: Receiver;
let admin: UiClient;
let manager: UiClient;
let viewer: UiClient;

const count = async () => (await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM webhooks"))?.n;
const newestId = async () => (await readOne<{ id: number }>(t.database, "SELECT max(id) AS id FROM webhooks"))?.id;

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_FETCH_ALLOW_PRIVATE: "true" } });
  receiver = await startReceiver();
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
  await grant(t.database, {
    user: await createUser(t.database, "root", "root-password-1"),
    attributes: ["Admin_ConfigureProGet"],
  });
  const managerId = await createUser(t.database, "manager", "manager-password-1");
  await grant(t.database, { user: managerId, attributes: ["Admin_ManageFeed"], feed: "main" });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", "viewer-password-1"),
    attributes: ["Feeds_ViewFeed"],
  });
  admin = new UiClient(t);
  await admin.signIn("root", "root-password-1");
  manager = new UiClient(t, "198.51.100.21");
  await manager.signIn("manager", "manager-password-1");
  viewer = new UiClient(t, "198.51.100.22");
  await viewer.signIn("viewer", "viewer-password-1");
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

const form = (fields: Record<string, string | string[]>): [string, string][] =>
  Object.entries(fields).flatMap(([name, value]) =>
    (Array.isArray(value) ? value : [value]).map((v): [string, string] => [name, v]),
  );

describe("the webhooks pages", () => {
  it("an administrator creates a webhook (secret shown once, hostile text escaped), tests, edits and deletes it", async () => {
    const list = await admin.get("/admin/webhooks");
    expect(list.statusCode).toBe(200);
    expect(list.body).toContain('<option value="" selected>All feeds (global)</option>');
    const created = await admin.post(
      "/admin/webhooks",
      form({
        feed: "",
        name: HOSTILE,
        url: `${receiver.base}/hook?q="><b>`,
        method: "POST",
        events: ["package.added", "package.deleted"],
        headers: `X-Note: ${HOSTILE}`,
        active: "yes",
      }),
    );
    expect(created.statusCode, created.body).toBe(201);
    expect(created.body).not.toContain("<script>alert");
    expect(created.body).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;quotes&quot;");
    expect(created.body).not.toContain('"><b>');
    const secret = /<code>(whsec_[A-Za-z0-9_-]+)<\/code>/.exec(created.body)?.[1];
    expect(secret).toBeDefined();
    const id = await newestId();
    const page = await admin.get(`/admin/webhooks/${id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain(secret);
    expect(page.body).toContain("Nothing was delivered yet.");

    const tested = await admin.post(`/admin/webhooks/${id}/test`);
    expect(tested.statusCode).toBe(303);
    expect(tested.headers.location).toMatch(new RegExp(`^/admin/webhooks/${id}\\?tested=\\d+$`));
    const after = await admin.get(String(tested.headers.location));
    expect(after.body).toContain("Test: succeeded, HTTP 200");
    expect(after.body).toMatch(/<td>ping<\/td><td>succeeded<\/td><td>1<\/td>/);
    expect(receiver.received.at(-1)?.headers["x-note"]).toBe(HOSTILE);

    const refused = await admin.post(
      `/admin/webhooks/${id}/edit`,
      form({ name: "x", url: "http://169.254.169.254/", method: "POST", events: "package.added" }),
    );
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("never allowed");
    const edited = await admin.post(
      `/admin/webhooks/${id}/edit`,
      form({ name: "renamed", url: `${receiver.base}/b`, method: "PUT", events: "package.added" }),
    );
    expect(edited.statusCode).toBe(303);
    expect(await readOne(t.database, "SELECT name, method, active, events FROM webhooks WHERE id = ?", id)).toEqual({
      name: "renamed",
      method: "PUT",
      active: 0,
      events: '["package.added"]',
    });

    expect((await admin.post(`/admin/webhooks/${id}/delete`, [])).statusCode).toBe(400);
    const deleted = await admin.post(`/admin/webhooks/${id}/delete`, [["confirm", "yes"]]);
    expect(deleted.statusCode).toBe(303);
    expect(await count()).toBe(0);
    expect((await admin.get(`/admin/webhooks/${id}`)).statusCode).toBe(404);
  });

  it("a feed manager sees and makes only their feed's webhooks; a forged form cannot make a global one", async () => {
    await admin.post(
      "/admin/webhooks",
      form({
        feed: "",
        name: "global one",
        url: `${receiver.base}/g`,
        method: "POST",
        events: "package.added",
        active: "yes",
      }),
    );
    const globalId = await newestId();
    const page = await manager.get("/admin/webhooks");
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("All feeds (global)");
    expect(page.body).not.toContain("global one");
    expect(page.body).toContain('<option value="main">main</option>');
    expect(page.body).not.toContain('<option value="other">');

    const before = await count();
    for (const feed of ["", "other"]) {
      const forged = await manager.post(
        "/admin/webhooks",
        form({ feed, name: "forged", url: `${receiver.base}/f`, method: "POST", events: "package.added" }),
      );
      expect(forged.statusCode, feed).toBe(403);
    }
    expect(await count()).toBe(before);
    expect((await manager.get(`/admin/webhooks/${globalId}`)).statusCode).toBe(403);
    expect((await manager.post(`/admin/webhooks/${globalId}/delete`, [["confirm", "yes"]])).statusCode).toBe(403);
    expect((await manager.post(`/admin/webhooks/${globalId}/test`)).statusCode).toBe(403);
    expect(await count()).toBe(before);

    const mine = await manager.post(
      "/admin/webhooks",
      form({
        feed: "main",
        name: "mine",
        url: `${receiver.base}/m`,
        method: "POST",
        events: "package.added",
        active: "yes",
      }),
    );
    expect(mine.statusCode).toBe(201);
    expect(await readOne(t.database, "SELECT created_by FROM webhooks WHERE id = ?", await await newestId())).toEqual({
      created_by: "manager",
    });
  });

  it("others get a 403 page, Anonymous the sign-in, and a post without its CSRF token changes nothing", async () => {
    expect((await viewer.get("/admin/webhooks")).statusCode).toBe(403);
    const anonymous = new UiClient(t, "198.51.100.23");
    const signIn = await anonymous.get("/admin/webhooks");
    expect(signIn.statusCode).toBe(303);
    expect(signIn.headers.location).toBe("/sign-in?next=%2Fadmin%2Fwebhooks");
    const before = await count();
    const csrf = await admin.postWithoutToken(
      "/admin/webhooks",
      form({ feed: "", name: "csrf", url: `${receiver.base}/c`, method: "POST", events: "package.added" }),
    );
    expect(csrf.statusCode).toBe(403);
    expect(await count()).toBe(before);
    expect((await admin.get("/admin/webhooks/abc")).statusCode).toBe(404);
    expect((await admin.get("/admin")).body).toContain('href="/admin/webhooks"');
  });
});
