import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createUser, grant, readOne } from "../helpers/fixtures.js";
import { UiClient } from "../helpers/ui-client.js";
import { buildUpack, readZip } from "../helpers/upack-fixtures.js";

/**
 * Promotion and repackaging on the package page (issue 17 section 5): the forms post through the
 * promotions service with the API's needs, the page shows the version's provenance, and every
 * refusal (no privilege, no CSRF token, a bad version, another feed type) is a page with the
 * message and a 4xx, nothing written. Hostile text is escaped wherever it is shown.
 */

const HOSTILE = `<script>alert("x")</script> & 'quotes'`;
const HOSTILE_ESCAPED = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;";
const PAGE = "/feeds/dev/packages/cli?group=tools";
const PROMOTE = "/ui/feeds/dev/packages/cli/promote";
const REPACKAGE = "/ui/feeds/dev/packages/cli/repackage";

let t: TestApp;
/** View everywhere, add on dev, accept promotions on prod and add on the romp feed; nothing more on locked. */
let releaser: UiClient;
/** View only. */
let viewer: UiClient;
let rcBytes: Buffer;

const countOf = async (sql: string, ...params: unknown[]) =>
  (await readOne<{ n: number }>(t.database, sql, ...params))?.n;
const versionCount = (feed: string) =>
  countOf(
    `SELECT count(*) AS n FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
       JOIN feeds f ON f.id = p.feed_id WHERE f.name = ?`,
    feed,
  );
const recordCount = () =>
  countOf("SELECT (SELECT count(*) FROM package_promotions) + (SELECT count(*) FROM package_repackagings) AS n");

function admin(method: "GET" | "POST" | "PUT", url: string, payload?: object | Buffer) {
  return t.app.inject({ method, url, headers: { "x-apikey": t.adminKey }, ...(payload ? { payload } : {}) });
}

async function download(feed: string, id: string): Promise<Buffer> {
  const res = await admin("GET", `/upack/${feed}/download/${id}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.rawPayload;
}

const hex = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest("hex");

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  for (const [name, feedType] of [
    ["dev", "universal"],
    ["prod", "universal"],
    ["locked", "universal"],
    ["romp-feed", "romp"],
    ["files", "asset"],
  ] as const) {
    const res = await admin("POST", "/api/management/feeds/create", { name, feedType });
    expect(res.statusCode, res.body).toBe(201);
  }
  rcBytes = await buildUpack({
    group: "tools",
    name: "cli",
    version: "1.2.0-rc.3",
    manifest: { title: "The CLI" },
    files: { "bin/tool.txt": "tool" },
  });
  expect((await admin("PUT", "/upack/dev/upload", rcBytes)).statusCode).toBe(201);

  const releaserId = await createUser(t.database, HOSTILE, "releaser-password-1");
  await grant(t.database, { user: releaserId, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"] });
  await grant(t.database, { user: releaserId, attributes: ["Feeds_AddPackage"], feed: "dev" });
  await grant(t.database, { user: releaserId, attributes: ["Feeds_AcceptPackagePromotions"], feed: "prod" });
  await grant(t.database, { user: releaserId, attributes: ["Feeds_AddPackage"], feed: "romp-feed" });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", "viewer-password-1"),
    attributes: ["Feeds_ViewFeed"],
  });
  releaser = new UiClient(t);
  await releaser.signIn(HOSTILE, "releaser-password-1");
  viewer = new UiClient(t, "198.51.100.22");
  await viewer.signIn("viewer", "viewer-password-1");
});
afterAll(async () => t?.close());

describe("the package page's provenance, promote and repackage forms", () => {
  it("offers the forms only to those who may use them, with only feeds of the same type", async () => {
    const page = await releaser.get(`${PAGE}&version=1.2.0-rc.3`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Provenance of 1.2.0-rc.3");
    expect(page.body).toContain("Published here directly");
    expect(page.body).toContain(`action="${PROMOTE}"`);
    expect(page.body).toContain(`action="${REPACKAGE}"`);
    // Promote: prod (accepts promotions) only; not dev itself, not locked, not the romp or asset feed.
    const promoteSelect = /<select id="promote-to"[^>]*>([\s\S]*?)<\/select>/.exec(page.body)?.[1] ?? "";
    expect([...promoteSelect.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual(["prod"]);
    // Repackage: where the releaser may add, of dev's type: dev itself only.
    const repackageSelect = /<select id="repackage-to"[^>]*>([\s\S]*?)<\/select>/.exec(page.body)?.[1] ?? "";
    expect([...repackageSelect.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1])).toEqual([""]);
    expect(repackageSelect).toContain("dev (this feed)");

    const seen = await viewer.get(PAGE);
    expect(seen.statusCode).toBe(200);
    expect(seen.body).toContain("Provenance of 1.2.0-rc.3");
    expect(seen.body).not.toContain(PROMOTE);
    expect(seen.body).not.toContain(REPACKAGE);
  });

  it("promotes from the page: the target has the same file and its page shows where it came from (escaped)", async () => {
    const res = await releaser.post(
      PROMOTE,
      [
        ["group", "tools"],
        ["version", "1.2.0-rc.3"],
        ["toFeed", "prod"],
        ["comments", `passed QA ${HOSTILE}`],
      ],
      PAGE,
    );
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe("/feeds/prod/packages/cli?group=tools&version=1.2.0-rc.3");
    expect(hex("sha256", await download("prod", "tools/cli/1.2.0-rc.3"))).toBe(hex("sha256", rcBytes));

    const page = await releaser.get(String(res.headers.location));
    expect(page.statusCode).toBe(200);
    const provenance = page.body.slice(page.body.indexOf('id="provenance"'));
    expect(provenance).toMatch(
      /<dt>Promoted from<\/dt><dd><a href="\/feeds\/dev\/packages\/cli\?group=tools&amp;version=1.2.0-rc.3">dev<\/a><\/dd>/,
    );
    expect(provenance).toContain(`<dt>Promoted by</dt><dd>${HOSTILE_ESCAPED}</dd>`);
    expect(provenance).toContain(`<dt>Comments</dt><dd>passed QA ${HOSTILE_ESCAPED}</dd>`);
    expect(page.body).not.toContain("<script>alert");
    // The list of the package's promotions, from either side.
    for (const feed of ["prod", "dev"]) {
      const listed = await releaser.get(`/feeds/${feed}/packages/cli?group=tools`);
      expect(listed.body).toMatch(/<td>dev<\/td><td>prod<\/td><td class="wide">&lt;script&gt;/);
      expect(listed.body).not.toContain("<script>alert");
    }
  });

  it("repackages 1.2.0-rc.3 as 1.2.0 from the page: upack.json names 1.2.0 and the original, and both pages say so", async () => {
    const res = await releaser.post(
      REPACKAGE,
      [
        ["group", "tools"],
        ["version", "1.2.0-rc.3"],
        ["newVersion", "1.2.0"],
        ["toFeed", ""],
        ["comments", "release"],
      ],
      PAGE,
    );
    expect(res.statusCode, res.body).toBe(303);
    expect(res.headers.location).toBe("/feeds/dev/packages/cli?group=tools&version=1.2.0");

    const entries = await readZip(await download("dev", "tools/cli/1.2.0"));
    const manifest = JSON.parse(entries.get("upack.json") ?? "{}") as Record<string, unknown>;
    expect(manifest).toMatchObject({ group: "tools", name: "cli", version: "1.2.0", title: "The CLI" });
    expect(manifest.repackageHistory).toEqual([
      expect.objectContaining({
        id: `tools/cli:1.2.0-rc.3:${hex("sha1", rcBytes)}`,
        reason: "release",
        _sha256: hex("sha256", rcBytes),
        _feed: "dev",
      }),
    ]);
    expect(entries.get("package/bin/tool.txt")).toBe("tool");

    const page = await releaser.get(String(res.headers.location));
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("Provenance of 1.2.0");
    expect(page.body).toContain(
      '<dt>Repackaged from</dt><dd><a href="/feeds/dev/packages/cli?group=tools&amp;version=1.2.0-rc.3">1.2.0-rc.3</a> in dev</dd>',
    );
    expect(page.body).toContain(`<dt>Original SHA-256</dt><dd><code>${hex("sha256", rcBytes)}</code></dd>`);
    expect(page.body).toContain(`<dt>Original SHA-1</dt><dd><code>${hex("sha1", rcBytes)}</code></dd>`);
    expect(page.body).toContain(`<dt>Repackaged by</dt><dd>${HOSTILE_ESCAPED}</dd>`);

    const original = await releaser.get(`${PAGE}&version=1.2.0-rc.3`);
    expect(original.body).toMatch(
      /Repackaged as: <a href="\/feeds\/dev\/packages\/cli\?group=tools&amp;version=1.2.0">1.2.0<\/a> in dev/,
    );
  });

  it("refuses a target without add or accept-promotions with a clear 403 page, nothing written", async () => {
    const before = await recordCount();
    const res = await releaser.post(
      PROMOTE,
      [
        ["group", "tools"],
        ["version", "1.2.0-rc.3"],
        ["toFeed", "locked"],
        ["comments", HOSTILE],
      ],
      PAGE,
    );
    expect(res.statusCode).toBe(403);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.body).toContain("Promotion refused");
    expect(res.body).toContain("You may not promote from &#39;dev&#39; to &#39;locked&#39;");
    expect(res.body).toContain("Feeds_AcceptPackagePromotions or Feeds_AddPackage on the target feed");
    // The form again, as it was filled in (escaped).
    expect(res.body).toContain(`>${HOSTILE_ESCAPED}</textarea>`);
    expect(res.body).toMatch(/<details class="package-delete" open>\s*<summary>Promote/);
    expect(res.body).not.toContain("<script>alert");
    expect(await versionCount("locked")).toBe(0);

    const repackage = await releaser.post(REPACKAGE, [
      ["group", "tools"],
      ["version", "1.2.0-rc.3"],
      ["newVersion", "1.2.1"],
      ["toFeed", "prod"],
    ]);
    expect(repackage.statusCode).toBe(403);
    expect(repackage.body).toContain("You may not repackage into &#39;prod&#39;");
    expect(await versionCount("prod")).toBe(1);

    // A viewer's forged form: the same 403, nothing written.
    const forged = await viewer.post(
      PROMOTE,
      [
        ["group", "tools"],
        ["version", "1.2.0-rc.3"],
        ["toFeed", "locked"],
      ],
      PAGE,
    );
    expect(forged.statusCode).toBe(403);
    expect(await recordCount()).toBe(before);
  });

  it("refuses a form without its CSRF token, nothing written", async () => {
    const before = await recordCount();
    const posts: Array<[string, [string, string]]> = [
      [PROMOTE, ["toFeed", "prod"]],
      [REPACKAGE, ["newVersion", "9.0.0"]],
    ];
    for (const [url, field] of posts) {
      const res = await releaser.postWithoutToken(url, [["group", "tools"], ["version", "1.2.0-rc.3"], field]);
      expect(res.statusCode).toBe(403);
      expect(res.body).toContain("This form has expired or did not come from this site.");
    }
    expect(await recordCount()).toBe(before);
    expect(await versionCount("dev")).toBe(2);
  });

  it("answers a bad or missing new version and a missing target with 400 and the message", async () => {
    const bad = await releaser.post(
      REPACKAGE,
      [
        ["group", "tools"],
        ["version", "1.2.0-rc.3"],
        ["newVersion", `<b>${HOSTILE}`],
      ],
      PAGE,
    );
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("Repackaging refused");
    expect(bad.body).toMatch(/<p class="error" role="alert">newVersion &#39;&lt;b&gt;&lt;script&gt;[^<]+<\/p>/);
    expect(bad.body).toContain(`value="&lt;b&gt;${HOSTILE_ESCAPED}"`);
    expect(bad.body).not.toContain("<script>alert");

    const blank = await releaser.post(REPACKAGE, [
      ["group", "tools"],
      ["version", "1.2.0-rc.3"],
      ["newVersion", " "],
    ]);
    expect(blank.statusCode).toBe(400);
    expect(blank.body).toContain("Enter the new version.");

    const noTarget = await releaser.post(PROMOTE, [
      ["group", "tools"],
      ["version", "1.2.0-rc.3"],
      ["toFeed", ""],
    ]);
    expect(noTarget.statusCode).toBe(400);
    expect(noTarget.body).toContain("Choose the feed to promote to.");

    const missing = await releaser.post(PROMOTE, [
      ["group", "tools"],
      ["version", "7.7.7"],
      ["toFeed", "prod"],
    ]);
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toContain("was not found in the feed &#39;dev&#39;");
    expect(await versionCount("dev")).toBe(2);
  });

  it("moves a version only between feeds of one type (a forged target of another type: 400)", async () => {
    const before = await recordCount();
    const romp = await releaser.post(
      PROMOTE,
      [
        ["group", "tools"],
        ["version", "1.2.0"],
        ["toFeed", "romp-feed"],
      ],
      PAGE,
    );
    expect(romp.statusCode).toBe(400);
    expect(romp.body).toContain("are of different types; a package moves only between feeds of the same type.");
    const repackaged = await releaser.post(REPACKAGE, [
      ["group", "tools"],
      ["version", "1.2.0"],
      ["newVersion", "1.2.1"],
      ["toFeed", "romp-feed"],
    ]);
    expect(repackaged.statusCode).toBe(400);
    expect(repackaged.body).toContain("of different types");
    expect(await versionCount("romp-feed")).toBe(0);
    expect(await recordCount()).toBe(before);
  });

  it("no longer names a promotion once the version's file was replaced by an upload", async () => {
    const other = await buildUpack({
      group: "tools",
      name: "cli",
      version: "1.2.0-rc.3",
      files: { "bin/tool.txt": "rebuilt" },
    });
    expect((await admin("PUT", "/upack/prod/upload", other)).statusCode).toBe(201);
    const page = await releaser.get("/feeds/prod/packages/cli?group=tools&version=1.2.0-rc.3");
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain("<dt>Promoted from</dt>");
    expect(page.body).toContain("Published here directly");
    // The promotion itself stays in the list.
    expect(page.body).toMatch(/<td>dev<\/td><td>prod<\/td>/);
  });
});
