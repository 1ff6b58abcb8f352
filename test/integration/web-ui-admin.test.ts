import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WHARF_VERSION } from "../../src/version.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { startUpstreamWharf } from "../helpers/connector-fixtures.js";
import { basic, createUser, execute, grant, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { UiClient } from "../helpers/ui-client.js";

/**
 * The web UI's administration (issue 16 part E): /admin, feeds (with storage), connectors, users,
 * groups, permissions and /account, through the APIs' services with the APIs' needs. Attacks:
 * forged posts by a user without the privilege (403), posts without the CSRF token (403), stored
 * hostile text rendered as text, and no secret (passwords, store and connector credentials) in a page.
 */

const ADMIN_PASSWORD = "admin-password-1";
const VIEWER_PASSWORD = "viewer-password-1";
const HOSTILE = `<script>alert("x")</script> & "q" javascript:alert(1)`;
/** A user name may not hold ':' (Basic credentials): the same markup without the URL. */
const HOSTILE_NAME = `<script>alert("x")</script> & "q"`;
const ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &quot;q&quot;";

let t: TestApp;
let admin: UiClient;
let viewer: UiClient;

beforeAll(async () => {
  t = await buildTestApp();
  await grant(t.database, {
    user: await createUser(t.database, "root", ADMIN_PASSWORD),
    attributes: ["Admin_ConfigureProGet", "Admin_ManageFeed"],
  });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", VIEWER_PASSWORD),
    attributes: ["Feeds_ViewFeed"],
  });
  admin = new UiClient(t);
  await admin.signIn("root", ADMIN_PASSWORD);
  viewer = new UiClient(t, "198.51.100.21");
  await viewer.signIn("viewer", VIEWER_PASSWORD);
});
afterAll(async () => t.close());

function expectHtml(res: { statusCode: number; headers: Record<string, unknown>; body: string }, status: number) {
  expect(res.statusCode, res.body.slice(0, 2000)).toBe(status);
  expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
}

describe("/admin", () => {
  it("shows the version, the database and the disk as /health does, and links to every admin page", async () => {
    const res = await admin.get("/admin");
    expectHtml(res, 200);
    const health = (await t.app.inject({ url: "/health" })).json() as { versionNumber: string; databaseStatus: string };
    expect(health.versionNumber).toBe(WHARF_VERSION);
    expect(res.body).toContain(`Wharf ${WHARF_VERSION}`);
    expect(res.body).toMatch(/<dt>Database<\/dt><dd class="">OK<\/dd>/);
    expect(res.body).toMatch(/<dt>Disk<\/dt><dd class="">(OK: [\d.]+ [KMGT]?i?B free|Unknown)/);
    for (const link of ["/admin/feeds", "/admin/connectors", "/admin/users", "/admin/permissions", "/admin/api-keys"]) {
      expect(res.body).toContain(`href="${link}"`);
    }
  });

  it("lists the nodes serving the database: this one, running the schedulers", async () => {
    const res = await admin.get("/admin");
    expectHtml(res, 200);
    const node = ((await t.app.inject({ url: "/health" })).json() as { node: { id: string; database: string } }).node;
    // On PostgreSQL the test app is a cluster of one node (postgres-test-app.ts).
    const [database, serving] = testsRunOnPostgres()
      ? ["PostgreSQL", "A cluster on PostgreSQL"]
      : ["SQLite", "One machine, on SQLite"];
    expect(node.database).toBe(database);
    expect(res.body).toContain("<h2>Nodes</h2>");
    expect(res.body).toContain(`<td>${node.id} (this node)</td>`);
    expect(res.body).toContain("Alive, runs the schedulers");
    expect(res.body).toContain(serving);
  });

  it("is a 403 page for a signed-in user without the privilege and sends Anonymous to sign in", async () => {
    expectHtml(await viewer.get("/admin"), 403);
    const anonymous = await t.app.inject({ url: "/admin" });
    expect(anonymous.statusCode).toBe(303);
    expect(anonymous.headers.location).toBe("/sign-in?next=%2Fadmin");
    for (const page of ["/admin/users", "/admin/permissions", "/admin/connectors", "/admin/api-keys"]) {
      expectHtml(await viewer.get(page), 403);
    }
  });
});

describe("feeds", () => {
  it("creates a feed with a hostile description, shown as text, then edits, renames and deletes it after a confirmation", async () => {
    const created = await admin.post(
      "/admin/feeds",
      [
        ["name", "tools"],
        ["feedType", "universal"],
        ["description", HOSTILE],
      ],
      "/admin/feeds",
    );
    expect(created.statusCode, created.body).toBe(303);
    expect(created.headers.location).toBe("/admin/feeds/tools");
    const api = await t.app.inject({ url: "/api/management/feeds/get/tools", headers: basic("root", ADMIN_PASSWORD) });
    expect(api.json()).toMatchObject({ name: "tools", feedType: "universal", description: HOSTILE });

    const list = await admin.get("/admin/feeds");
    expectHtml(list, 200);
    expect(list.body).toContain(ESCAPED);
    expect(list.body).not.toContain("<script>alert");
    const page = await admin.get("/admin/feeds/tools");
    expectHtml(page, 200);
    expect(page.body).toContain(ESCAPED);
    expect(page.body).not.toContain("<script>alert");
    expect(page.body).toContain("never moved");

    const edited = await admin.post("/admin/feeds/tools", [
      ["name", "tools"],
      ["feedGroup", "team"],
      ["description", "Build tools"],
    ]);
    expect(edited.statusCode, edited.body).toBe(303);
    const renamed = await admin.post(
      "/admin/feeds/tools",
      [
        ["name", "tooling"],
        ["feedGroup", "team"],
        ["description", "Build tools"],
      ],
      "/admin/feeds/tools",
    );
    expect(renamed.statusCode, renamed.body).toBe(303);
    expect(renamed.headers.location).toBe("/admin/feeds/tooling");
    const after = await t.app.inject({
      url: "/api/management/feeds/get/tooling",
      headers: basic("root", ADMIN_PASSWORD),
    });
    expect(after.json()).toMatchObject({ name: "tooling", feedGroup: "team", description: "Build tools" });

    const confirm = await admin.get("/admin/feeds/tooling/delete");
    expectHtml(confirm, 200);
    expect(confirm.body).toContain('action="/admin/feeds/tooling/delete"');
    expect(confirm.body).toContain("cannot be undone");
    const deleted = await admin.post("/admin/feeds/tooling/delete");
    expect(deleted.statusCode).toBe(303);
    expect(deleted.headers.location).toBe("/admin/feeds");
    expectHtml(await admin.get("/admin/feeds/tooling"), 404);
  });

  it("creates and edits an asset directory feed as well", async () => {
    const created = await admin.post(
      "/admin/feeds",
      [
        ["name", "site"],
        ["feedType", "asset"],
      ],
      "/admin/feeds",
    );
    expect(created.statusCode, created.body).toBe(303);
    const edited = await admin.post(
      "/admin/feeds/site",
      [
        ["name", "site"],
        ["description", "Static files"],
        ["connectors", ""],
      ],
      "/admin/feeds/site",
    );
    expect(edited.statusCode, edited.body).toBe(303);
    const api = await t.app.inject({ url: "/api/management/feeds/get/site", headers: basic("root", ADMIN_PASSWORD) });
    expect(api.json()).toMatchObject({ feedType: "asset", description: "Static files" });
  });

  it("shows the service's refusal again with its status and the form filled in", async () => {
    await admin.get("/admin/feeds");
    const badType = await admin.post("/admin/feeds", [
      ["name", "wrong"],
      ["feedType", "nuget"],
      ["description", HOSTILE],
    ]);
    expectHtml(badType, 400);
    expect(badType.body).toContain("not served by Wharf");
    expect(badType.body).toContain(ESCAPED);
    expect(badType.body).toContain('value="wrong"');

    expect(
      (
        await admin.post(
          "/admin/feeds",
          [
            ["name", "dup"],
            ["feedType", "universal"],
          ],
          "/admin/feeds",
        )
      ).statusCode,
    ).toBe(303);
    const duplicate = await admin.post(
      "/admin/feeds",
      [
        ["name", "DUP"],
        ["feedType", "universal"],
      ],
      "/admin/feeds",
    );
    expectHtml(duplicate, 409);
    const unknownConnector = await admin.post(
      "/admin/feeds/dup",
      [
        ["name", "dup"],
        ["connectors", "nowhere"],
      ],
      "/admin/feeds/dup",
    );
    expectHtml(unknownConnector, 422);
    expect(unknownConnector.body).toContain("nowhere");
  });

  it("changes the storage, never showing a store secret, and reports the move", async () => {
    await admin.post(
      "/admin/feeds",
      [
        ["name", "stored"],
        ["feedType", "universal"],
      ],
      "/admin/feeds",
    );
    const secret = "STORE-SECRET-9f8e7d6c5b4a";
    const s3 = await admin.post(
      "/admin/feeds/stored/storage",
      [
        ["storageType", "s3"],
        ["store-s3-AccessKey", "AKIAEXAMPLE"],
        ["store-s3-SecretAccessKey", secret],
        ["store-s3-BucketName", "bucket"],
        ["store-s3-RegionEndpoint", "us-east-1"],
      ],
      "/admin/feeds/stored",
    );
    expect(s3.statusCode, s3.body).toBe(303);
    const page = await admin.get("/admin/feeds/stored");
    expect(page.body).toMatch(/<dt>Store<\/dt><dd>Amazon S3<\/dd>/);
    expect(page.body).toContain("AKIAEXAMPLE");
    expect(page.body).not.toContain(secret);
    expect(page.body).not.toContain("********");
    // A blank secret keeps the stored one; a refusal shown again does not echo the one typed.
    const kept = await admin.post("/admin/feeds/stored/storage", [
      ["storageType", "s3"],
      ["store-s3-AccessKey", "AKIAEXAMPLE"],
      ["store-s3-SecretAccessKey", ""],
      ["store-s3-BucketName", "bucket2"],
      ["store-s3-RegionEndpoint", "us-east-1"],
    ]);
    expect(kept.statusCode, kept.body).toBe(303);
    const refusedS3 = await admin.post(
      "/admin/feeds/stored/storage",
      [
        ["storageType", "s3"],
        ["store-s3-SecretAccessKey", secret],
      ],
      "/admin/feeds/stored",
    );
    expectHtml(refusedS3, 400);
    expect(refusedS3.body).not.toContain(secret);

    const disk = await admin.post("/admin/feeds/stored/storage", [
      ["storageType", "disk"],
      ["store-disk-StoragePath", ""],
    ]);
    expect(disk.statusCode, disk.body).toBe(303);
    // Disk with no path is the server default: the data directory's disk on one machine, the
    // server-wide object store in cluster mode (postgres-test-app.ts: Azurite).
    const [defaultId, defaultName] = testsRunOnPostgres() ? ["azure", "Azure Blob Storage"] : ["disk", "Disk"];
    const api = await t.app.inject({ url: "/api/storage?feed=stored", headers: basic("root", ADMIN_PASSWORD) });
    expect(api.json()).toMatchObject({ id: defaultId });
    const shown = await admin.get("/admin/feeds/stored");
    expect(shown.body).toContain(`<dt>Store</dt><dd>${defaultName}</dd>`);
    expect(shown.body).toMatch(/<dt>Move between stores<\/dt><dd>(never moved|[a-z]+ from)/);

    const refused = await admin.post("/admin/feeds/stored/storage", [["storageType", "floppy"]], "/admin/feeds/stored");
    expectHtml(refused, 400);
    expect(refused.body).toContain("unknown storage type");
  });

  it("reports a failed move between stores (its error as text) and retries it", async () => {
    await admin.post(
      "/admin/feeds",
      [
        ["name", "moving"],
        ["feedType", "universal"],
      ],
      "/admin/feeds",
    );
    const feedId = (await readOne<{ id: number }>(t.database, "SELECT id FROM feeds WHERE name = 'moving'"))?.id;
    // A move stopped by its target store (as feed-store-move.ts records one): the page reports what the row says.
    await execute(
      t.database,
      `INSERT INTO feed_store_moves (feed_id, from_store, to_store, state, failed_in, blobs_total, blobs_done,
                                     bytes_total, bytes_done, started_at, updated_at, error)
       VALUES (?, 'azure:acct/box', 'disk', 'failed', 'copying', 10, 3, 10240, 3072, ?, ?, ?)`,
      [feedId, "2026-01-02T03:04:05.000Z", "2026-01-02T03:05:00.000Z", HOSTILE],
    );
    const page = await admin.get("/admin/feeds/moving");
    expect(page.body).toContain(`failed from azure:acct/box to disk (3 of 10 blobs, 3.0 KiB of 10 KiB): ${ESCAPED}`);
    expect(page.body).toContain('action="/admin/feeds/moving/move"');
    expect(viewer.token).not.toBe("");
    expectHtml(await viewer.post("/admin/feeds/moving/move", [], "/account"), 403);
    const retried = await admin.post("/admin/feeds/moving/move", [], "/admin/feeds/moving");
    expect(retried.statusCode, retried.body).toBe(303);
    await expect
      .poll(
        async () =>
          (await readOne<{ state: string }>(t.database, "SELECT state FROM feed_store_moves WHERE feed_id = ?", feedId))
            ?.state,
      )
      .not.toBe("failed");
    const after = await admin.get("/admin/feeds/moving");
    expect(after.body).not.toContain('action="/admin/feeds/moving/move"');
  });

  it("lists only the feeds a user manages, with no create form, and refuses their forged posts (403)", async () => {
    await admin.post(
      "/admin/feeds",
      [
        ["name", "guarded"],
        ["feedType", "universal"],
      ],
      "/admin/feeds",
    );
    const list = await viewer.get("/admin/feeds");
    expectHtml(list, 200);
    expect(list.body).not.toContain("guarded");
    expect(list.body).not.toContain('action="/admin/feeds"');
    expectHtml(await viewer.get("/admin/feeds/guarded"), 403);
    const forged: [string, [string, string][]][] = [
      [
        "/admin/feeds",
        [
          ["name", "mine"],
          ["feedType", "universal"],
        ],
      ],
      [
        "/admin/feeds/guarded",
        [
          ["name", "guarded"],
          ["description", "hijacked"],
        ],
      ],
      ["/admin/feeds/guarded/storage", [["storageType", "disk"]]],
      ["/admin/feeds/guarded/delete", []],
    ];
    for (const [url, fields] of forged) expectHtml(await viewer.post(url, fields, "/account"), 403);
    const still = await t.app.inject({
      url: "/api/management/feeds/get/guarded",
      headers: basic("root", ADMIN_PASSWORD),
    });
    expect(still.statusCode).toBe(200);
    expect(still.json()).not.toMatchObject({ description: "hijacked" });
  });
});

describe("connectors", () => {
  it("creates, lists with health, edits and deletes a connector; its password is never shown", async () => {
    const password = "CONNECTOR-PASSWORD-1a2b3c";
    const created = await admin.post(
      "/admin/connectors",
      [
        ["name", "upstream"],
        ["url", "https://packages.example.com/upack/public"],
        ["username", "robot"],
        ["password", password],
      ],
      "/admin/connectors",
    );
    expect(created.statusCode, created.body).toBe(303);
    const list = await admin.get("/admin/connectors");
    expectHtml(list, 200);
    expect(list.body).toContain("upstream");
    expect(list.body).toContain("https://packages.example.com/upack/public");
    expect(list.body).toMatch(/<td>unknown/);
    expect(list.body).not.toContain(password);

    const edited = await admin.post("/admin/connectors/edit", [
      ["current", "upstream"],
      ["name", "upstream"],
      ["url", "https://mirror.example.com/upack/public"],
      ["username", "robot"],
      ["filters", "Acme.*"],
    ]);
    expect(edited.statusCode, edited.body).toBe(303);
    const api = await t.app.inject({
      url: "/api/management/connectors/get/upstream",
      headers: basic("root", ADMIN_PASSWORD),
    });
    expect(api.json()).toMatchObject({
      url: "https://mirror.example.com/upack/public",
      username: "robot",
      filters: ["Acme.*"],
    });
    // A blank password field kept the stored one (sealed in its row, never in a page).
    const row = await readOne<{ password: string | null }>(
      t.database,
      "SELECT password FROM connectors WHERE name = 'upstream'",
    );
    expect(row?.password).toEqual(expect.any(String));
    expect(row?.password).not.toContain(password);

    const refused = await admin.post(
      "/admin/connectors",
      [
        ["name", HOSTILE],
        ["url", "https://x.example.com/"],
      ],
      "/admin/connectors",
    );
    expectHtml(refused, 400);
    expect(refused.body).not.toContain("<script>alert");

    const deleted = await admin.post("/admin/connectors/delete", [["name", "upstream"]], "/admin/connectors");
    expect(deleted.statusCode).toBe(303);
    expect((await admin.get("/admin/connectors")).body).toContain("There is no connector.");
  });

  it("checks a connector's upstream now and shows its health", { timeout: 30_000 }, async () => {
    const up = await startUpstreamWharf();
    // The upstream is on loopback: a server allowing private addresses, as its operator would.
    const local = await buildTestApp({ env: { WHARF_FETCH_ALLOW_PRIVATE: "true" } });
    try {
      await grant(local.database, {
        user: await createUser(local.database, "root", ADMIN_PASSWORD),
        attributes: ["Admin_ConfigureProGet"],
      });
      const browser = new UiClient(local);
      await browser.signIn("root", ADMIN_PASSWORD);
      const created = await browser.post(
        "/admin/connectors",
        [
          ["name", "remote"],
          ["url", up.feedUrl],
          ["username", up.credentials.username],
          ["password", up.credentials.password],
        ],
        "/admin/connectors",
      );
      expect(created.statusCode, created.body).toBe(303);
      expect(
        (await browser.post("/admin/connectors/check", [["name", "remote"]], "/admin/connectors")).statusCode,
      ).toBe(303);
      const healthy = await browser.get("/admin/connectors");
      expect(healthy.body).toMatch(/<td>healthy \(checked \d{4}-\d{2}-\d{2}/);
      expect(healthy.body).not.toContain(up.credentials.password);
      await up.stop();
      await browser.post("/admin/connectors/check", [["name", "remote"]], "/admin/connectors");
      expect((await browser.get("/admin/connectors")).body).toMatch(/<td>error \(checked /);
    } finally {
      await local.close();
      await up.close();
    }
  });

  it("refuses a viewer's forged connector posts (403)", async () => {
    for (const url of [
      "/admin/connectors",
      "/admin/connectors/edit",
      "/admin/connectors/delete",
      "/admin/connectors/check",
    ]) {
      expectHtml(
        await viewer.post(
          url,
          [
            ["name", "x"],
            ["url", "https://x.example.com/"],
          ],
          "/account",
        ),
        403,
      );
    }
  });
});

describe("users, groups and permissions", () => {
  it("creates a user and a group, grants the user view on a feed, and the user then sees it; revoking takes it back", async () => {
    await admin.post(
      "/admin/feeds",
      [
        ["name", "granted"],
        ["feedType", "universal"],
      ],
      "/admin/feeds",
    );
    const password = "carol-password-77";
    const user = await admin.post(
      "/admin/users",
      [
        ["name", "carol"],
        ["displayName", HOSTILE],
        ["email", "carol@example.com"],
        ["password", password],
      ],
      "/admin/users",
    );
    expect(user.statusCode, user.body).toBe(303);
    const group = await admin.post(
      "/admin/groups",
      [
        ["name", "builders"],
        ["users", "carol"],
      ],
      "/admin/users",
    );
    expect(group.statusCode, group.body).toBe(303);
    const users = await admin.get("/admin/users");
    expectHtml(users, 200);
    expect(users.body).toContain(ESCAPED);
    expect(users.body).not.toContain("<script>alert");
    expect(users.body).not.toContain(password);
    expect(users.body).toMatch(/<td>carol<\/td>[\s\S]*?<td>builders<\/td>/);

    const carol = new UiClient(t, "198.51.100.30");
    await carol.signIn("carol", password);
    expectHtml(await carol.get("/feeds/granted"), 403);

    const granted = await admin.post(
      "/admin/permissions",
      [
        ["group", "builders"],
        ["task", "View & Download Packages"],
        ["feed", "granted"],
      ],
      "/admin/permissions",
    );
    expect(granted.statusCode, granted.body).toBe(303);
    const permissions = await admin.get("/admin/permissions");
    expect(permissions.body).toMatch(
      /<td>group builders<\/td><td>View &amp; Download Packages<\/td><td>feed granted<\/td><td class="wide">grant<\/td>/,
    );
    expectHtml(await carol.get("/feeds/granted"), 200);

    const id =
      /action="\/admin\/permissions\/(\d+)\/revoke"[\s\S]{0,300}?Revoke View &amp; Download Packages of group builders/.exec(
        permissions.body,
      )?.[1];
    expect(id).toBeDefined();
    expect((await admin.post(`/admin/permissions/${id}/revoke`)).statusCode).toBe(303);
    expectHtml(await carol.get("/feeds/granted"), 403);
    expectHtml(await admin.post(`/admin/permissions/${id}/revoke`, [], "/admin/permissions"), 404);
  });

  it("edits a user (a new password ends their sessions), shows refusals with their status, and deletes users and groups", async () => {
    await admin.post(
      "/admin/users",
      [
        ["name", "dave"],
        ["password", "dave-password-1"],
      ],
      "/admin/users",
    );
    const dave = new UiClient(t, "198.51.100.31");
    await dave.signIn("dave", "dave-password-1");
    const edited = await admin.post(
      "/admin/users/edit",
      [
        ["name", "dave"],
        ["displayName", "Dave"],
        ["email", ""],
        ["groups", ""],
        ["password", "dave-password-2"],
      ],
      "/admin/users",
    );
    expect(edited.statusCode, edited.body).toBe(303);
    expect((await dave.get("/account")).statusCode).toBe(303);
    await dave.signIn("dave", "dave-password-2");

    const duplicate = await admin.post(
      "/admin/users",
      [
        ["name", "dave"],
        ["displayName", HOSTILE],
      ],
      "/admin/users",
    );
    expectHtml(duplicate, 409);
    expect(duplicate.body).toContain(ESCAPED);
    const badGroup = await admin.post(
      "/admin/groups",
      [
        ["name", "g"],
        ["users", "nobody-at-all"],
      ],
      "/admin/users",
    );
    expect([400, 404]).toContain(badGroup.statusCode);
    expect(badGroup.body).toContain("nobody-at-all");

    expect((await admin.post("/admin/users/delete", [["name", "dave"]], "/admin/users")).statusCode).toBe(303);
    expect((await admin.get("/admin/users")).body).not.toContain("<td>dave</td>");
    expect((await dave.get("/account")).statusCode).toBe(303);
    await admin.post("/admin/groups", [["name", "temporary"]], "/admin/users");
    expect((await admin.post("/admin/groups/delete", [["name", "temporary"]], "/admin/users")).statusCode).toBe(303);
    expect((await admin.get("/admin/users")).body).not.toContain("temporary");
  });

  it("renders hostile user and group names as text everywhere, and deletes them through the forms", async () => {
    const user = await admin.post(
      "/admin/users",
      [
        ["name", HOSTILE_NAME],
        ["password", "hostile-password-1"],
      ],
      "/admin/users",
    );
    expect(user.statusCode, user.body).toBe(303);
    const group = await admin.post(
      "/admin/groups",
      [
        ["name", `${HOSTILE_NAME} group`],
        ["users", HOSTILE_NAME],
      ],
      "/admin/users",
    );
    expect(group.statusCode, group.body).toBe(303);
    const grantRes = await admin.post(
      "/admin/permissions",
      [
        ["group", `${HOSTILE_NAME} group`],
        ["task", "View & Download Packages"],
      ],
      "/admin/permissions",
    );
    expect(grantRes.statusCode, grantRes.body).toBe(303);
    for (const url of ["/admin/users", "/admin/permissions"]) {
      const page = await admin.get(url);
      expect(page.body).toContain(ESCAPED);
      expect(page.body).not.toContain("<script>alert");
    }
    const hostileBrowser = new UiClient(t, "198.51.100.50");
    await hostileBrowser.signIn(HOSTILE_NAME, "hostile-password-1");
    const account = await hostileBrowser.get("/account");
    expect(account.body).toContain(`<dd>${ESCAPED}</dd>`);
    expect(account.body).toContain(`<dd>${ESCAPED} group</dd>`);
    expect(account.body).not.toContain("<script>alert");

    expect(
      (await admin.post("/admin/groups/delete", [["name", `${HOSTILE_NAME} group`]], "/admin/users")).statusCode,
    ).toBe(303);
    expect((await admin.post("/admin/users/delete", [["name", HOSTILE_NAME]], "/admin/users")).statusCode).toBe(303);
    const after = (await admin.get("/admin/users")).body;
    expect(after).not.toContain(`<td>${ESCAPED}</td>`);
    expect(after).not.toContain(`${ESCAPED} group`);
  });

  it("refuses every forged security post of a user without the privilege (403) and changes nothing", async () => {
    const principals = () =>
      readOne(t.database, "SELECT (SELECT COUNT(*) FROM users) + (SELECT COUNT(*) FROM permissions) AS n");
    const before = await principals();
    const forged: [string, [string, string][]][] = [
      [
        "/admin/users",
        [
          ["name", "mallory"],
          ["password", "mallory-password-1"],
        ],
      ],
      [
        "/admin/users/edit",
        [
          ["name", "viewer"],
          ["groups", "admins"],
        ],
      ],
      ["/admin/users/delete", [["name", "root"]]],
      [
        "/admin/groups",
        [
          ["name", "admins"],
          ["users", "viewer"],
        ],
      ],
      ["/admin/groups/delete", [["name", "builders"]]],
      [
        "/admin/permissions",
        [
          ["user", "viewer"],
          ["task", "Administer"],
        ],
      ],
      ["/admin/permissions/1/revoke", []],
      [
        "/admin/api-keys",
        [
          ["type", "System"],
          ["systemApis", "full-control"],
        ],
      ],
      ["/admin/api-keys/1/revoke", []],
    ];
    for (const [url, fields] of forged) expectHtml(await viewer.post(url, fields, "/account"), 403);
    expect(await principals()).toEqual(before);
  });

  it("refuses every admin post without the CSRF token (403), even the administrator's", async () => {
    for (const url of [
      "/admin/feeds",
      "/admin/feeds/granted",
      "/admin/feeds/granted/storage",
      "/admin/feeds/granted/delete",
      "/admin/connectors",
      "/admin/users",
      "/admin/users/delete",
      "/admin/groups",
      "/admin/permissions",
      "/account/sessions/revoke-others",
    ]) {
      const res = await admin.postWithoutToken(url, [["name", "x"]]);
      expect(res.statusCode, url).toBe(403);
    }
    expect((await admin.get("/admin/feeds/granted")).statusCode).toBe(200);
  });
});

describe("/account", () => {
  it("lists my sessions only, marks this one, signs out another and every other", async () => {
    await createUser(t.database, "erin", "erin-password-1");
    const laptop = new UiClient(t, "198.51.100.40", "Laptop <b>Browser</b>");
    const phone = new UiClient(t, "198.51.100.41", "Phone Browser");
    const tablet = new UiClient(t, "198.51.100.42", "Tablet Browser");
    for (const browser of [laptop, phone, tablet]) await browser.signIn("erin", "erin-password-1");

    const page = await laptop.get("/account");
    expectHtml(page, 200);
    expect(page.body).toContain("<dd>erin</dd>");
    expect(page.body).toContain("Laptop &lt;b&gt;Browser&lt;/b&gt; <strong>(this browser)</strong>");
    expect(page.body).toContain("Phone Browser");
    expect(page.body).toContain("198.51.100.41");
    expect(page.body).not.toContain("UiClient/1.0");
    expect(page.body).toContain("only an administrator set a password");
    const ids = [...page.body.matchAll(/action="\/account\/sessions\/(\d+)\/revoke"/g)].map((m) => m[1]);
    expect(ids).toHaveLength(2);

    // Someone else's session id ends nothing (404), and that session still works.
    const adminIds = [...(await admin.get("/account")).body.matchAll(/\/account\/sessions\/(\d+)\/revoke/g)];
    expect(adminIds).toHaveLength(0);
    const phoneRow = /Phone Browser[\s\S]*?action="\/account\/sessions\/(\d+)\/revoke"/.exec(page.body)?.[1];
    expectHtml(await admin.post(`/account/sessions/${phoneRow}/revoke`, [], "/account"), 404);
    expect((await phone.get("/account")).statusCode).toBe(200);

    expect((await laptop.post(`/account/sessions/${phoneRow}/revoke`)).statusCode).toBe(303);
    expect((await phone.get("/account")).statusCode).toBe(303);
    expect((await tablet.get("/account")).statusCode).toBe(200);
    expect((await laptop.post("/account/sessions/revoke-others", [], "/account")).statusCode).toBe(303);
    expect((await tablet.get("/account")).statusCode).toBe(303);
    const alone = await laptop.get("/account");
    expect(alone.statusCode).toBe(200);
    expect(alone.body).not.toContain("/account/sessions/revoke-others");
  });

  it("sends Anonymous to sign in", async () => {
    const res = await t.app.inject({ url: "/account" });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/sign-in?next=%2Faccount");
  });
});
