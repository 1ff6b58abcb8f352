import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatBytes } from "../../src/areas/web-ui/pages/present.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createUser, grant } from "../helpers/fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * GET /feeds (issue 16, part F): each feed the viewer may see with its type, how many packages (or,
 * for an asset directory, files) it holds and their size, read in one grouped query kept until the
 * next write; asset directories link to their file browser; hostile descriptions shown as text.
 */
let t: TestApp;
let upack: ReturnType<typeof createUpackFixtures>;
const carol = basic("carol", "carol-password"); // view on every feed
let mainBytes = 0;

function page(headers: Record<string, string> = {}) {
  return t.app.inject({ method: "GET", url: "/feeds", headers });
}

/** The row of one feed, its cells' text. */
function rowOf(html: string, feed: string): string[] {
  const rows = [...html.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => m[1] ?? "");
  const row = rows.find((r) => r.includes(`>${feed}</a>`));
  expect(row, `a row for ${feed}`).toBeDefined();
  return [...(row ?? "").matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => (m[1] ?? "").trim());
}

async function putFile(feed: string, path: string, body: string): Promise<void> {
  const res = await t.app.inject({
    method: "PUT",
    url: `/endpoints/${feed}/content/${path}`,
    headers: { "x-apikey": t.adminKey, "content-type": "application/octet-stream" },
    payload: body,
  });
  expect(res.statusCode, res.body).toBeLessThan(300);
}

beforeAll(async () => {
  t = await buildTestApp();
  upack = createUpackFixtures(t);
  await upack.createFeed("main");
  await upack.createFeed("empty", "romp");
  await upack.createFeed("files", "asset");
  for (const version of ["1.0.0", "1.1.0"]) {
    const added = await upack.addVersion("main", { name: "tool", version, files: { "a.txt": "A".repeat(3000) } });
    mainBytes += added.bytes.length;
  }
  const other = await upack.addVersion("main", { group: "g", name: "lib", version: "2.0.0" });
  mainBytes += other.bytes.length;
  await putFile("files", "docs/readme.txt", "x".repeat(1500));
  await putFile("files", "b.bin", "y".repeat(548));
  const updated = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/update/empty",
    headers: { "x-apikey": t.adminKey },
    payload: { description: `<script>alert("feeds")</script>` },
  });
  expect(updated.statusCode, updated.body).toBeLessThan(300);
  await grant(t.database, {
    user: await createUser(t.database, "carol", "carol-password"),
    attributes: ["Feeds_ViewFeed"],
  });
  await grant(t.database, { anonymous: true, attributes: ["Feeds_ViewFeed"], feed: "main" });
}, 30_000);
afterAll(async () => t.close());

describe("GET /feeds", () => {
  it("shows each feed's type, package count and the size of its versions", async () => {
    expect(mainBytes).toBeGreaterThan(0);
    const res = await page(carol);
    expect(res.statusCode).toBe(200);
    expect(rowOf(res.body, "main")).toEqual([
      expect.stringContaining('<a href="/feeds/main">main</a>'),
      "universal",
      "2 packages",
      // The sum of the three versions' stored sizes.
      formatBytes(mainBytes),
      "",
    ]);
    expect(rowOf(res.body, "empty").slice(1, 4)).toEqual(["romp", "0 packages", "0 B"]);
  });

  it("links an asset directory to its file browser, with its file count and size", async () => {
    const res = await page(carol);
    expect(res.body).toContain('<a href="/assets/files/">files</a>');
    expect(res.body).not.toContain('href="/feeds/files"');
    expect(rowOf(res.body, "files").slice(1, 4)).toEqual(["asset directory", "2 files", "2.0 KiB"]);
  });

  it("sees a new version at once (the totals are kept only until the next write)", async () => {
    const before = rowOf((await page(carol)).body, "empty");
    expect(before[2]).toBe("0 packages");
    const added = await upack.addVersion("empty", { name: "fresh", version: "1.0.0" });
    const after = rowOf((await page(carol)).body, "empty");
    expect(after[2]).toBe("1 package");
    expect(after[3]).toBe(`${added.bytes.length} B`);
  });

  it("shows a hostile description as text", async () => {
    const res = await page(carol);
    expect(res.body).not.toContain("<script>alert");
    expect(rowOf(res.body, "empty")[4]).toBe("&lt;script&gt;alert(&quot;feeds&quot;)&lt;/script&gt;");
  });

  it("lists for Anonymous only what Anonymous may view, without other feeds' totals", async () => {
    const res = await page();
    expect(res.statusCode).toBe(200);
    expect([...res.body.matchAll(/<a href="\/(?:feeds|assets)\/([^"/]+)\/?">/g)].map((m) => m[1])).toEqual(["main"]);
    expect(res.body).not.toContain("files");
    expect(res.body).toContain("2 packages");
  });
});
