import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UpackBrowseQueries } from "../../src/areas/upack/read/browse-queries.js";
import type { UpackQueryRepository } from "../../src/areas/upack/read/query-repository.js";
import { upackBrowseQueriesOf, upackQueryRepositoryOf } from "../../src/areas/upack/services.js";
import { systemClock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { execute, feedIdOf } from "../helpers/fixtures.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * The web UI's paged reads (read/browse-queries.ts): pages in SQL that join up to the API's whole
 * lists, in the same order, and a search that finds what the API's `search` finds.
 */

let t: TestApp;
let browse: UpackBrowseQueries;
/** The API's reads on the app's database, which the pages must agree with. */
let api: UpackQueryRepository;
let feedId: number;
let upack: ReturnType<typeof createUpackFixtures>;
const day = (n: number) => new Date(Date.UTC(2030, 0, 1 + n));

beforeAll(async () => {
  t = await buildTestApp();
  upack = createUpackFixtures(t);
  await upack.createFeed("main");
  await upack.createFeed("other");
  // Published in an order unlike the names', so that both orders are checked.
  const names = ["delta", "alpha", "echo", "charlie", "bravo"];
  for (const [i, name] of names.entries()) {
    await upack.addVersion(
      "main",
      { name, version: "1.0.0", manifest: { title: `${name} title` } },
      { publishedAt: day(i) },
    );
  }
  await upack.addVersion("main", { group: "g/h", name: "alpha", version: "1.0.0" }, { publishedAt: day(9) });
  for (let i = 0; i < 12; i += 1) {
    await upack.addVersion("main", { name: "many", version: `2.${i}.0` }, { publishedAt: day(20 + i) });
  }
  await upack.addVersion("main", { name: "many", version: "10.0.0-rc.1" }, { publishedAt: day(1) });
  await upack.addVersion("other", { name: "elsewhere", version: "1.0.0" });
  browse = upackBrowseQueriesOf(t.database);
  api = upackQueryRepositoryOf(t.database, systemClock);
  feedId = await feedIdOf(t.database, "main");
});
afterAll(async () => t.close());

const ids = (rows: ReadonlyArray<{ group_name: string; name: string }>) =>
  rows.map((row) => (row.group_name === "" ? row.name : `${row.group_name}/${row.name}`));

describe("packagesPage", () => {
  it("pages by name in the API's order, saying whether more follow", async () => {
    const whole = await api.listPackages(feedId, undefined, 1000);
    const pages = await Promise.all(
      [0, 3, 6].map((offset) => browse.packagesPage(feedId, { order: "name", offset, limit: 3 })),
    );
    expect(pages.flatMap((p) => ids(p.rows))).toEqual(ids(whole));
    expect(pages.map((p) => p.more)).toEqual([true, true, false]);
    expect(ids(pages[0]?.rows ?? [])).toEqual(["alpha", "bravo", "charlie"]);
    expect(ids(pages[1]?.rows ?? [])).toEqual(["delta", "echo", "many"]);
    expect(ids(pages[2]?.rows ?? [])).toEqual(["g/h/alpha"]);
  });

  it("orders by the latest version's publication, newest first", async () => {
    const page = await browse.packagesPage(feedId, { order: "updated", offset: 0, limit: 10 });
    // many's latest version is 10.0.0-rc.1 (the highest, prereleases included), published on day 1 like
    // alpha: a tie is ordered by name.
    expect(ids(page.rows)).toEqual(["g/h/alpha", "bravo", "charlie", "echo", "alpha", "many", "delta"]);
    expect(page.rows.find((row) => row.name === "many")?.latest_version).toBe("10.0.0-rc.1");
  });

  it("sees a new version at once in the last-updated order it keeps between writes", async () => {
    const before = await browse.packagesPage(feedId, { order: "updated", offset: 0, limit: 2 });
    expect(ids(before.rows)).toEqual(["g/h/alpha", "bravo"]);
    await upack.addVersion(
      "main",
      { name: "delta", version: "1.1.0", manifest: { title: "delta title" } },
      { publishedAt: day(40) },
    );
    const after = await browse.packagesPage(feedId, { order: "updated", offset: 0, limit: 2 });
    expect(ids(after.rows)).toEqual(["delta", "g/h/alpha"]);
    expect(after.rows[0]?.latest_version).toBe("1.1.0");
  });

  it("searches as the API's search does, best match first, wildcards taken literally", async () => {
    for (const term of ["alpha", "a", "title", "charlie title", "%", "_"]) {
      const page = await browse.packagesPage(feedId, { termKey: term, order: "relevance", offset: 0, limit: 100 });
      expect(ids(page.rows), term).toEqual(ids(await api.searchPackages(feedId, term, 100)));
    }
    const second = await browse.packagesPage(feedId, { termKey: "a", order: "relevance", offset: 2, limit: 2 });
    expect(ids(second.rows)).toEqual(ids(await api.searchPackages(feedId, "a", 100)).slice(2, 4));
    const byName = await browse.packagesPage(feedId, { termKey: "title", order: "name", offset: 0, limit: 100 });
    expect(ids(byName.rows)).toEqual(["alpha", "bravo", "charlie", "delta", "echo"]);
  });
});

describe("search's pre-filter on raw texts (a first search skips parsing manifests that cannot match)", () => {
  let feed: number;
  beforeAll(async () => {
    await upack.createFeed("texts");
    feed = await feedIdOf(t.database, "texts");
    const specs = [
      { name: "quoted", manifest: { title: 'say "hi" loud' } },
      { name: "described", manifest: { description: "Holds the Widget maker" } },
      { name: "short", manifest: { shortDescription: "tiny WIDGET" } },
      { name: "tagged", manifest: { tags: ["widgetry", "x"] } },
      { name: "plain", manifest: { title: "nothing here" } },
      { name: "escaped", manifest: { title: "placeholder" } },
    ];
    for (const { name, manifest } of specs) await upack.addVersion("texts", { name, version: "1.0.0", manifest });
    // A manifest written by hand with JSON escapes: its raw text does not hold the words its title does.
    await execute(
      t.database,
      `UPDATE upack_versions SET manifest = ? WHERE id = (SELECT latest_version_id FROM upack_packages
       WHERE feed_id = ? AND name_key = 'escaped')`,
      [String.raw`{"name":"escaped","version":"1.0.0","title":"Secret Widget été"}`, feed],
    );
  });

  it.each([["widget"], ['"hi"'], ['say "hi'], ["secret widget"], ["\u0057"], ["nothing"], ["zzz"]])(
    "%s: the same packages, in the same order, as the API's search",
    async (term) => {
      const page = await browse.packagesPage(feed, { termKey: term, order: "relevance", offset: 0, limit: 100 });
      expect(ids(page.rows)).toEqual(ids(await api.searchPackages(feed, term, 100)));
    },
  );

  it("follows manifest edits and new latest versions (migration 0016's triggers), and ranks an unknown text", async () => {
    const found = async (term: string) =>
      ids((await browse.packagesPage(feed, { termKey: term, order: "relevance", offset: 0, limit: 100 })).rows);
    const latestOf = (name: string) =>
      `(SELECT latest_version_id FROM upack_packages WHERE feed_id = ${feed} AND name_key = '${name}')`;
    await execute(
      t.database,
      `UPDATE upack_versions SET manifest = '{"title":"now a gizmo"}' WHERE id = ${latestOf("plain")}`,
      [],
    );
    expect(await found("gizmo")).toEqual(["plain"]);
    await upack.addVersion("texts", { name: "plain", version: "2.0.0", manifest: { title: "a doohickey" } });
    expect(await found("gizmo")).toEqual([]);
    expect(await found("doohickey")).toEqual(["plain"]);
    // A text not known (NULL: written before the column, or a manifest that is not JSON) is ranked.
    await execute(
      t.database,
      "UPDATE upack_packages SET search_text = NULL WHERE feed_id = ? AND name_key = 'tagged'",
      [feed],
    );
    expect(await found("widgetry")).toEqual(["tagged"]);
  });

  it("finds texts hidden from the raw manifest by JSON escapes, and every kind of text", async () => {
    const found = async (term: string) =>
      ids((await browse.packagesPage(feed, { termKey: term, order: "relevance", offset: 0, limit: 100 })).rows);
    expect(await found("widget")).toEqual(["escaped", "described", "short", "tagged"]);
    expect(await found("secret widget")).toEqual(["escaped"]);
    expect(await found("été")).toEqual(["escaped"]);
    expect(await found('say "hi"')).toEqual(["quoted"]);
    // The escape sequence itself is not text of the manifest.
    expect(await found("\\u0057")).toEqual([]);
    expect(await found("zzz")).toEqual([]);
  });
});

describe("one package", () => {
  it("pages versions newest first and counts them", async () => {
    expect(await browse.findPackage(feedId, "", "many")).toMatchObject({
      latest_version: "10.0.0-rc.1",
      version_count: 13,
    });
    const first = (await browse.versionsPage(feedId, "", "many", 0, 5)).map((v) => v.version);
    expect(first).toEqual(["10.0.0-rc.1", "2.11.0", "2.10.0", "2.9.0", "2.8.0"]);
    const last = (await browse.versionsPage(feedId, "", "many", 10, 5)).map((v) => v.version);
    expect(last).toEqual(["2.2.0", "2.1.0", "2.0.0"]);
    expect(await browse.findPackage(feedId, "", "elsewhere")).toBeUndefined();
  });

  it("finds a version, the latest by default, with its digests and file list", async () => {
    const latest = await browse.findVersion(feedId, "g/h", "alpha");
    expect(latest).toMatchObject({ version: "1.0.0", sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await browse.findVersion(feedId, "", "many", "2.3.0"))?.version).toBe("2.3.0");
    expect(await browse.findVersion(feedId, "", "many", "9.9.9")).toBeUndefined();
    const files = JSON.parse((await browse.fileListOf(feedId, "", "many", "2.3.0")) ?? "[]") as Array<{ name: string }>;
    expect(files.map((file) => file.name)).toContain("package/readme.txt");
  });

  it("tells which dependencies are packages of the feed", async () => {
    const found = await browse.existing(feedId, [
      { groupKey: "g/h", nameKey: "alpha" },
      { groupKey: "", nameKey: "elsewhere" },
    ]);
    expect([...found]).toEqual(["g/h\0alpha"]);
  });
});
