import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { filePart, formBody } from "../helpers/form-data.js";
import { UiClient } from "../helpers/ui-client.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Publishing from the package and feed pages (issue 16, part A): upload through the ui route (the
 * script's raw body with x-csrf-token, the plain multipart form with `_csrf` first), delete with its
 * confirmation form, deployment records and connectors shown as text, the Jenkins snippet, and an
 * asset directory's feed page sending to its file browser. Forged posts: no token, or a viewer
 * without the API's privilege.
 */

const PASSWORD = "packages-password-1";
const HOSTILE = `<script>alert("x")</script>`;

let t: TestApp;
let admin: Record<string, string>;
let publisher: UiClient;
let viewer: UiClient;

const cookieOf = (client: UiClient) => [...client.cookies].map(([name, value]) => `${name}=${value}`).join("; ");

/** What the page's script sends: the package as the raw body, the token as a header. */
function rawUpload(client: UiClient, body: Buffer, token: string | undefined): Promise<LightMyRequestResponse> {
  return t.app.inject({
    method: "POST",
    url: "/ui/feeds/main/upload",
    headers: {
      cookie: cookieOf(client),
      "content-type": "application/octet-stream",
      ...(token === undefined ? {} : { "x-csrf-token": token }),
    },
    payload: body,
  });
}

/** What the plain form sends without JavaScript: `_csrf` first, then the file. */
async function formUpload(client: UiClient, body: Buffer, token: string): Promise<LightMyRequestResponse> {
  const form = formBody([{ name: "_csrf", content: token }, filePart("pkg.upack", body)]);
  return t.app.inject({
    method: "POST",
    url: "/ui/feeds/main/upload",
    headers: { cookie: cookieOf(client), "content-type": form.contentType },
    payload: form.payload,
  });
}

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("files", "asset");
  await grant(t.database, {
    user: await createUser(t.database, "pub", PASSWORD),
    attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage", "Feeds_AddPackage", "Feeds_DeletePackage"],
    feed: "main",
  });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", PASSWORD),
    attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
  });
  await fixtures.addVersion("main", { name: "kept", version: "1.0.0" });
  publisher = new UiClient(t);
  await publisher.signIn("pub", PASSWORD);
  viewer = new UiClient(t);
  await viewer.signIn("viewer", PASSWORD);
});

afterAll(async () => t.close());

describe("upload", () => {
  it("shows the upload zone on the feed and package pages to those who may add packages", async () => {
    for (const url of ["/feeds/main", "/feeds/main/packages/kept"]) {
      const page = await publisher.get(url);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('action="/ui/feeds/main/upload" enctype="multipart/form-data"');
      expect(page.body).toMatch(/data-packages-upload>\s*<input type="hidden" name="_csrf" value="[^"]+">/);
    }
  });

  it("stores the script's raw upload with the token (201 naming the package page), refuses it without (403)", async () => {
    const body = await buildUpack({ group: "acme", name: "raw", version: "1.0.0" });
    const refused = await rawUpload(publisher, body, undefined);
    expect(refused.statusCode).toBe(403);
    expect((await publisher.get("/feeds/main/packages/raw?group=acme")).statusCode).toBe(404);

    await publisher.get("/feeds/main");
    const stored = await rawUpload(publisher, body, publisher.token);
    expect(stored.statusCode, stored.body).toBe(201);
    expect(stored.json()).toMatchObject({ href: "/feeds/main/packages/raw?group=acme&version=1.0.0" });
    const page = await publisher.get("/feeds/main/packages/raw?group=acme");
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("acme/raw <strong>1.0.0</strong>");
  });

  it("stores the plain form's upload (303 to the package page), refuses a form without the token", async () => {
    const body = await buildUpack({ name: "plain", version: "2.0.0" });
    const forged = formBody([filePart("pkg.upack", body)]);
    const refused = await t.app.inject({
      method: "POST",
      url: "/ui/feeds/main/upload",
      headers: { cookie: cookieOf(publisher), "content-type": forged.contentType },
      payload: forged.payload,
    });
    expect(refused.statusCode).toBe(403);

    await publisher.get("/feeds/main");
    const res = await formUpload(publisher, body, publisher.token);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe("/feeds/main/packages/plain?version=2.0.0");
    const download = await publisher.get("/ui/upack/main/download/plain/2.0.0");
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(body)).toBe(true);
  });

  it("offers a viewer without Feeds_AddPackage no upload zone and refuses the forged upload (403)", async () => {
    const page = await viewer.get("/feeds/main/packages/kept");
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("/ui/feeds/main/upload");
    expect(page.body).not.toContain("Delete version");
    expect((await viewer.get("/feeds/main")).body).not.toContain("data-packages-upload");
    const res = await rawUpload(viewer, await buildUpack({ name: "forged", version: "1.0.0" }), viewer.token);
    expect(res.statusCode).toBe(403);
    expect((await viewer.get("/feeds/main/packages/forged")).statusCode).toBe(404);
  });
});

describe("delete", () => {
  it("deletes a version through its confirmation form; the version disappears, the package page stays", async () => {
    await publisher.get("/feeds/main");
    for (const version of ["1.0.0", "1.1.0"]) {
      const res = await rawUpload(publisher, await buildUpack({ name: "gone", version }), publisher.token);
      expect(res.statusCode).toBe(201);
    }
    const page = await publisher.get("/feeds/main/packages/gone?version=1.0.0");
    expect(page.body).toContain("<summary>Delete version 1.0.0…</summary>");
    expect(page.body).toContain('action="/ui/feeds/main/packages/gone/delete"');

    expect(
      (await publisher.postWithoutToken("/ui/feeds/main/packages/gone/delete", [["version", "1.0.0"]])).statusCode,
    ).toBe(403);
    const res = await publisher.post("/ui/feeds/main/packages/gone/delete", [
      ["group", ""],
      ["version", "1.0.0"],
    ]);
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe("/feeds/main/packages/gone");
    expect((await publisher.get("/feeds/main/packages/gone?version=1.0.0")).statusCode).toBe(404);
    const left = await publisher.get("/feeds/main/packages/gone");
    expect(left.body).toContain("gone <strong>1.1.0</strong>");

    // The last version: the package is gone, back to the feed.
    const last = await publisher.post("/ui/feeds/main/packages/gone/delete", [["version", "1.1.0"]]);
    expect(last.headers.location).toBe("/feeds/main");
    expect((await publisher.get("/feeds/main/packages/gone")).statusCode).toBe(404);
  });

  it("deletes a version of a package whose group holds '/'", async () => {
    await publisher.get("/feeds/main");
    const body = await buildUpack({ group: "acme/tools", name: "deep", version: "1.0.0+build.7" });
    expect((await rawUpload(publisher, body, publisher.token)).statusCode).toBe(201);
    const page = await publisher.get("/feeds/main/packages/deep?group=acme%2Ftools");
    expect(page.body).toContain('<input type="hidden" name="group" value="acme/tools">');
    const res = await publisher.post("/ui/feeds/main/packages/deep/delete", [
      ["group", "acme/tools"],
      ["version", "1.0.0+build.7"],
    ]);
    expect(res.statusCode, res.body).toBe(303);
    expect((await publisher.get("/feeds/main/packages/deep?group=acme%2Ftools")).statusCode).toBe(404);
  });

  it("refuses a viewer's forged delete (403) and keeps the version; an unknown version is 404", async () => {
    const res = await viewer.post("/ui/feeds/main/packages/kept/delete", [["version", "1.0.0"]], "/feeds/main");
    expect(res.statusCode).toBe(403);
    expect((await viewer.get("/feeds/main/packages/kept")).statusCode).toBe(200);
    const missing = await publisher.post("/ui/feeds/main/packages/kept/delete", [["version", "9.9.9"]], "/feeds/main");
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toContain("text/html");
  });
});

describe("deployments, connectors, snippets", () => {
  it("lists the shown version's deployment records as text, links only web addresses", async () => {
    // The API accepts only http(s) addresses (the page links nothing else either: webAddress).
    for (const url of ["https://ci.example/run/7"]) {
      const res = await t.app.inject({
        method: "POST",
        url: "/api/package-deployment/",
        headers: { ...admin, "content-type": "application/json" },
        payload: {
          Application: `${HOSTILE}app`,
          Description: `${HOSTILE}description`,
          Target: `${HOSTILE}target`,
          FeedName: "main",
          PackageName: "kept",
          Version: "1.0.0",
          UserName: `${HOSTILE}user`,
          Url: url,
        },
      });
      expect(res.statusCode, res.body).toBe(200);
    }
    const page = await viewer.get("/feeds/main/packages/kept");
    expect(page.body).toContain("<h2>Deployments of 1.0.0</h2>");
    expect(page.body).not.toContain(HOSTILE);
    expect(page.body).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;target");
    expect(page.body).toContain('<a href="https://ci.example/run/7" rel="noopener noreferrer">');
    expect(page.body).not.toContain("javascript:");
  });

  it("shows the feed's connectors and their health to those the health API answers, not to a viewer", async () => {
    const created = await t.app.inject({
      method: "POST",
      url: "/api/management/connectors/create",
      headers: admin,
      payload: { name: "upstream-one", url: `https://upstream.example/upack/x"${HOSTILE}`, feedType: "universal" },
    });
    expect(created.statusCode, created.body).toBe(201);
    const updated = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/update/main",
      headers: admin,
      payload: { connectors: ["upstream-one"] },
    });
    expect(updated.statusCode, updated.body).toBeLessThan(300);
    const root = new UiClient(t);
    await grant(t.database, {
      user: await createUser(t.database, "root", PASSWORD),
      attributes: ["Admin_ConfigureProGet"],
    });
    await root.signIn("root", PASSWORD);
    const page = await root.get("/feeds/main");
    expect(page.body).toContain("<h2>Connectors</h2>");
    expect(page.body).toMatch(/<td>upstream-one<\/td>\s*<td><span class="connector-unknown">unknown<\/span>/);
    // The connector's URL (the admin's text) is shown as text, never as markup.
    expect(page.body).not.toContain(HOSTILE);
    expect(page.body).toMatch(/<code>https:\/\/upstream\.example\/upack\/x(&quot;&lt;script&gt;|%22%3Cscript%3E)/);
    expect((await viewer.get("/feeds/main")).body).not.toContain("<h2>Connectors</h2>");
  });

  it("offers the Jenkins plugin's pipeline steps next to upack, pgutil and curl", async () => {
    const page = await viewer.get("/feeds/main/packages/kept");
    expect(page.body).toContain('<h3 id="use-jenkins">jenkins</h3>');
    expect(page.body).toContain("uploadProgetPackage feedName: &#39;main&#39;");
    expect((await viewer.get("/feeds/main")).body).toContain("downloadProgetPackage feedName: &#39;main&#39;");
  });

  it("sends an asset directory's feed page to its file browser (303)", async () => {
    const res = await viewer.get("/feeds/files");
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe("/assets/files/");
  });
});
