import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createUser, grant } from "../helpers/fixtures.js";
import { insertLegacyFeed } from "../helpers/legacy-feed.js";
import { UiClient } from "../helpers/ui-client.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * A feed's retention page (issue 17 section 5): the rules in words and as JSON, saved through the
 * feed service; a preview equal to the API's; a run that deletes exactly the preview; the runs
 * with their logs; and the API's need (Admin_ManageFeed on the feed) for all of it.
 */

const PAGE = "/admin/feeds/main/retention";
let t: TestApp;
let manager: UiClient;
let viewer: UiClient;

const admin = () => ({ "x-apikey": t.adminKey });
const versions = async () => {
  const res = await t.app.inject({ url: "/upack/main/packages?name=tool", headers: admin() });
  return (res.json() as { versions: string[] }).versions;
};
const rulesOf = async () => {
  const res = await t.app.inject({ url: "/api/management/feeds/get/main", headers: admin() });
  return res.json() as {
    retentionRules: Record<string, unknown>[];
    retentionSchedule?: string;
    retentionRulesEnabled: boolean;
  };
};
const rulesForm = (rules: string, schedule = "", enabled = false): [string, string][] => [
  ["rules", rules],
  ["schedule", schedule],
  ...(enabled ? [["enabled", "yes"] as [string, string]] : []),
];

beforeAll(async () => {
  t = await buildTestApp();
  const upack = createUpackFixtures(t);
  await upack.createFeed("main");
  await upack.createFeed("other");
  for (const version of ["1.0.0", "2.0.0", "3.0.0"]) await upack.addVersion("main", { name: "tool", version });
  await createAssetDirectory(t, "files", { retentionRules: [{ deletePackageIds: ["*.tmp"] }] });
  await insertLegacyFeed(t, "nuget-feed", "nuget");
  const managerId = await createUser(t.database, "manager", "manager-password-1");
  await grant(t.database, { user: managerId, attributes: ["Admin_ManageFeed"], feed: "main" });
  await grant(t.database, { user: managerId, attributes: ["Admin_ManageFeed"], feed: "files" });
  await grant(t.database, { user: managerId, attributes: ["Admin_ManageFeed"], feed: "nuget-feed" });
  await grant(t.database, {
    user: await createUser(t.database, "viewer", "viewer-password-1"),
    attributes: ["Feeds_ViewFeed"],
  });
  manager = new UiClient(t);
  await manager.signIn("manager", "manager-password-1");
  viewer = new UiClient(t, "198.51.100.22");
  await viewer.signIn("viewer", "viewer-password-1");
});
afterAll(async () => t?.close());

describe("a feed's retention page", () => {
  it("is linked from the feed's administration page and shows that there is no rule yet", async () => {
    const feedPage = await manager.get("/admin/feeds/main");
    expect(feedPage.body).toContain(`<a href="${PAGE}">Retention</a>`);
    const page = await manager.get(PAGE);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("No rule: retention deletes nothing.");
    expect(page.body).toContain("Scheduled runs: <strong>none</strong>");
  });

  it("saves rules and a schedule through the feed service and shows them in words, escaped", async () => {
    const rules = JSON.stringify([{ keepVersionsCount: 1, deletePackageIds: ["tool", "<script>*"] }]);
    const saved = await manager.post(PAGE, rulesForm(rules, "0 3 * * *", true), PAGE);
    expect(saved.statusCode, saved.body).toBe(303);
    expect(saved.headers.location).toBe(PAGE);
    expect(await rulesOf()).toMatchObject({
      retentionRules: [{ keepVersionsCount: 1, deletePackageIds: ["tool", "<script>*"] }],
      retentionSchedule: "0 3 * * *",
      retentionRulesEnabled: true,
    });
    const page = await manager.get(PAGE);
    expect(page.body).toContain("Delete versions: only packages matching tool, &lt;script&gt;*.");
    expect(page.body).toContain("Keep the latest 1 of each package.");
    expect(page.body).toContain("The latest stable version stays.");
    expect(page.body).toContain("Scheduled runs: <strong>0 3 * * * (UTC)</strong>");
    expect(page.body).not.toContain("<script>*");
  });

  it("refuses bad JSON, a bad field and a bad schedule with 400, keeping what was typed and the stored rules", async () => {
    const before = await rulesOf();
    const notJson = await manager.post(PAGE, rulesForm(`[{"keepVersionsCount": </textarea><b>`), PAGE);
    expect(notJson.statusCode).toBe(400);
    expect(notJson.body).toContain("The rules are not JSON");
    expect(notJson.body).toContain("&lt;/textarea&gt;&lt;b&gt;");
    expect(notJson.body).not.toContain("</textarea><b>");
    const badField = await manager.post(PAGE, rulesForm(`[{"keepVersionsCount": "many"}]`), PAGE);
    expect(badField.statusCode).toBe(400);
    expect(badField.body).toContain("retentionRules.0.keepVersionsCount");
    const badCron = await manager.post(PAGE, rulesForm("[]", "every night"), PAGE);
    expect(badCron.statusCode).toBe(400);
    expect(badCron.body).toContain('value="every night"');
    expect(await rulesOf()).toEqual(before);
  });

  it("previews what the API previews, and the run from the page deletes exactly that list", async () => {
    const preview = await manager.post(`${PAGE}/preview`, [], PAGE);
    expect(preview.statusCode).toBe(200);
    const api = await t.app.inject({ url: "/api/retention/preview?feed=main", headers: admin() });
    const apiVersions = (api.json() as { items: { version: string }[] }).items.map((item) => item.version);
    expect(apiVersions).toEqual(["2.0.0", "1.0.0"]);
    const rows = [...preview.body.matchAll(/<tr><td class="wide">tool<\/td><td>([^<]+)<\/td>/g)].map((m) => m[1]);
    expect(rows).toEqual(apiVersions);
    expect(preview.body).toContain("A run would delete <strong>2</strong> of 3 versions");
    const token = /name="token" value="([0-9a-f]{32})"/.exec(preview.body)?.[1];
    expect(token).toBeDefined();

    // A version published after the preview is not the preview's to delete.
    await createUpackFixtures(t).addVersion("main", { name: "tool", version: "4.0.0" });
    const run = await manager.post(`${PAGE}/run`, [["token", token ?? ""]]);
    expect(run.statusCode, run.body).toBe(303);
    const runUrl = String(run.headers.location);
    expect(runUrl).toMatch(/^\/admin\/feeds\/main\/retention\/runs\/\d+$/);
    let page = await manager.get(runUrl);
    for (let i = 0; i < 200 && /<dt>Status<\/dt><dd>(pending|executing)/.test(page.body); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      page = await manager.get(runUrl);
    }
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("<dt>Status</dt><dd>succeeded</dd>");
    expect(page.body).toContain("<dd>yes: exactly its list</dd>");
    expect(page.body).toMatch(/<dt>Deleted<\/dt><dd>2 versions, /);
    expect(page.body).toContain("tool 1.0.0");
    expect(await versions()).toEqual(["4.0.0", "3.0.0"]);
    const list = await manager.get(PAGE);
    expect(list.body).toContain(`<a href="${runUrl}">`);
  });

  it("an unknown token, or none known, is refused with the page and nothing deleted", async () => {
    const refused = await manager.post(`${PAGE}/run`, [["token", "0".repeat(32)]], PAGE);
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain("The preview token is unknown");
    expect(await versions()).toEqual(["4.0.0", "3.0.0"]);
    expect((await manager.get(`${PAGE}/runs/999999`)).statusCode).toBe(404);
    expect((await manager.get(`${PAGE}/runs/x`)).statusCode).toBe(404);
  });

  it("an asset directory's page lists files by path", async () => {
    for (const path of ["a/build.tmp", "a/build.zip"])
      expect((await putAsset(t, "files", path, path)).statusCode).toBeLessThan(300);
    const page = await manager.get("/admin/feeds/files/retention");
    expect(page.body).toContain("Delete files: only paths matching *.tmp.");
    expect(page.body).not.toContain("latest stable");
    const preview = await manager.post("/admin/feeds/files/retention/preview", [], "/admin/feeds/files/retention");
    expect(preview.body).toContain("A run would delete <strong>1</strong> of 2 files");
    expect(preview.body).toContain('<td class="wide">a/build.tmp</td>');
    expect(preview.body).toContain("Delete this file");
  });

  it("asks what the API asks: viewers get 403, Anonymous signs in first, other feeds are not the manager's", async () => {
    const anonymous = new UiClient(t, "198.51.100.23");
    const signIn = await anonymous.get(PAGE);
    expect(signIn.statusCode).toBe(303);
    expect(signIn.headers.location).toBe(`/sign-in?next=${encodeURIComponent(PAGE)}`);
    expect((await viewer.get(PAGE)).statusCode).toBe(403);
    const forged = await viewer.post(`${PAGE}/preview`, [], "/feeds");
    expect(forged.statusCode).toBe(403);
    expect((await viewer.post(PAGE, rulesForm("[]"), "/feeds")).statusCode).toBe(403);
    expect((await manager.get("/admin/feeds/other/retention")).statusCode).toBe(403);
    // A feed type without retention.
    const legacy = await manager.get("/admin/feeds/nuget-feed/retention");
    expect(legacy.statusCode).toBe(400);
    expect(legacy.body).toContain("Retention applies to universal feeds and asset directories");
  });

  it("refuses a form without the CSRF token and changes nothing", async () => {
    const before = await rulesOf();
    const res = await manager.postWithoutToken(PAGE, rulesForm("[]"));
    expect(res.statusCode).toBe(403);
    expect(await rulesOf()).toEqual(before);
    expect((await manager.postWithoutToken(`${PAGE}/run`)).statusCode).toBe(403);
    expect(await versions()).toEqual(["4.0.0", "3.0.0"]);
  });
});
