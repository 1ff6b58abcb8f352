import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { type RetentionPreviewJson, type RetentionRunJson, retentionApi } from "../helpers/retention-api.js";
import { manualClock } from "../helpers/clock.js";
import { createFeedKey, createSystemKey, readAll, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Retention of asset directories (issue 17 section 1 "and per asset directory where they make
 * sense"): the rule members that mean something for files (path patterns, not downloaded for D
 * days, older than D days, a size cap) each and combined, through the same preview and run API as
 * universal feeds; the members about versions refused by name; a run from a preview deleting
 * exactly its list through the directory's own delete (the blob goes); download stamps at most
 * once a minute; a schedule fired by the (hand-moved) clock.
 */

const DAY = 86_400_000;
const time = manualClock(Date.parse("2030-01-01T00:00:00.000Z"));
let t: TestApp;
let api: ReturnType<typeof retentionApi>;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await buildTestApp({ clock: time.clock, env: { WHARF_RETENTION_CHECK_SECONDS: "1" } });
  admin = { "x-apikey": t.adminKey };
  api = retentionApi(t);
});
afterAll(async () => t.close());

const setRules = (feed: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
  api.setRules(feed, body, headers);
const preview = (feed: string, method?: "GET" | "POST") => api.preview(feed, method);
const finished = (feed: string, id: number) => api.finished(feed, id);
const run = (feed: string, token?: string) => api.run(feed, token);

type Preview = RetentionPreviewJson;
type Run = RetentionRunJson;

async function createDirectory(name: string): Promise<void> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: admin,
    payload: { name, feedType: "asset" },
  });
  expect(res.statusCode, res.body).toBe(201);
}

/** Distinct bytes per file, so that no two files share a blob. */
let fill = 0;
async function upload(dir: string, path: string, size: number, method: "PUT" | "POST" = "PUT"): Promise<Buffer> {
  const body = Buffer.alloc(size, ++fill % 256);
  body.write(`${dir}/${path}/${fill}`);
  const res = await t.app.inject({
    method,
    url: `/endpoints/${dir}/content/${path}`,
    headers: { ...admin, "content-type": "application/octet-stream" },
    payload: body,
  });
  expect(res.statusCode, res.body).toBe(201);
  return body;
}

async function download(dir: string, path: string, method: "GET" | "HEAD" = "GET"): Promise<void> {
  const res = await t.app.inject({ method, url: `/endpoints/${dir}/content/${path}`, headers: admin });
  expect(res.statusCode, res.body).toBe(200);
}

async function filesLeft(dir: string): Promise<string[]> {
  const rows = await readAll<{ path: string }>(
    t.database,
    `SELECT a.path FROM asset_items a JOIN feeds f ON f.id = a.feed_id
      WHERE f.name = ? AND a.is_folder = 0 ORDER BY a.path_key`,
    dir,
  );
  return rows.map((row) => row.path).sort();
}

const labels = (result: Preview) => result.items.map((item) => `${item.rule}:${item.path}`);

describe("each rule and combinations, through the API", () => {
  // Written on days 0, 10 and 20 (the app's clock); builds/app-1.0.zip downloaded on day 25;
  // evaluated on day 40. 7,500 bytes in all.
  const started = time.clock.now().getTime();
  const dayOf = (day: number) => new Date(started + day * DAY).toISOString();
  beforeAll(async () => {
    await createDirectory("files");
    await upload("files", "builds/app-1.0.zip", 1000);
    await upload("files", "docs/readme.md", 100);
    await upload("files", "tmp/a.tmp", 200);
    time.advance(10 * DAY);
    await upload("files", "builds/app-1.1.zip", 1000);
    await upload("files", "cache/big.iso", 4000);
    time.advance(10 * DAY);
    await upload("files", "builds/app-2.0.zip", 1000);
    await upload("files", "tmp/b.tmp", 200);
    time.advance(5 * DAY);
    await download("files", "builds/app-1.0.zip");
    time.advance(15 * DAY);
  });

  it.each([
    ["deletePackageIds (by name alone)", [{ deletePackageIds: ["*.tmp"] }], ["1:tmp/a.tmp", "1:tmp/b.tmp"]],
    [
      "deletePackageIds with an exclusion",
      [{ deletePackageIds: ["builds/*", "!*2.0*"] }],
      ["1:builds/app-1.0.zip", "1:builds/app-1.1.zip"],
    ],
    [
      "keepPackageIds (by path and by name) with deleteOlderThanDays",
      [{ keepPackageIds: ["builds/*", "readme.md"], deleteOlderThanDays: 25 }],
      ["1:cache/big.iso", "1:tmp/a.tmp"],
    ],
    [
      "keepUsedWithinDays (the download keeps app-1.0)",
      [{ keepUsedWithinDays: 35 }],
      ["1:docs/readme.md", "1:tmp/a.tmp"],
    ],
    [
      "deleteOlderThanDays",
      [{ deleteOlderThanDays: 25 }],
      ["1:builds/app-1.0.zip", "1:builds/app-1.1.zip", "1:cache/big.iso", "1:docs/readme.md", "1:tmp/a.tmp"],
    ],
    ["sizeTriggerKb when the directory fits", [{ sizeTriggerKb: 8 }], []],
    [
      "sizeTriggerKb when it does not: every candidate",
      [{ sizeTriggerKb: 6, deletePackageIds: ["*.tmp"] }],
      ["1:tmp/a.tmp", "1:tmp/b.tmp"],
    ],
    [
      "sizeTriggerKb with sizeExclusive: oldest first until it fits",
      [{ sizeTriggerKb: 6, sizeExclusive: true }],
      ["1:builds/app-1.0.zip", "1:builds/app-1.1.zip", "1:docs/readme.md", "1:tmp/a.tmp"],
    ],
    [
      "patterns, last use and age in one rule",
      [{ deletePackageIds: ["builds/*"], keepUsedWithinDays: 18, deleteOlderThanDays: 25 }],
      ["1:builds/app-1.1.zip"],
    ],
    [
      "two rules: the cap measures what the first left",
      [{ deletePackageIds: ["*.tmp"] }, { sizeTriggerKb: 6, sizeExclusive: true, keepPackageIds: ["docs/*"] }],
      ["1:tmp/a.tmp", "1:tmp/b.tmp", "2:builds/app-1.0.zip"],
    ],
  ])("%s", async (_name, rules, expected) => {
    const res = await setRules("files", { retentionRules: rules });
    expect(res.statusCode, res.body).toBe(200);
    const result = await preview("files");
    expect(labels(result)).toEqual(expected);
    expect(result.examined).toBe(7);
    expect(result.versions).toBe(expected.length);
    expect(result.bytes).toBe(result.items.reduce((sum, item) => sum + item.bytes, 0));
  });

  it("a file's item carries its path (also as name), size, age, last write and last download", async () => {
    await setRules("files", { retentionRules: [{ deletePackageIds: ["builds/*"], keepUsedWithinDays: 14 }] });
    const result = await preview("files");
    const [first, second] = result.items;
    expect(first).toEqual({
      id: expect.any(Number),
      group: "",
      name: "builds/app-1.0.zip",
      version: "",
      path: "builds/app-1.0.zip",
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      rule: 1,
      reason: "path matches builds/*; not downloaded or written for 14 days",
      bytes: 1000,
      ageDays: 40,
      publishedAt: dayOf(0),
      lastDownloadedAt: dayOf(25),
    });
    expect(second).toMatchObject({
      path: "builds/app-1.1.zip",
      reason: "path matches builds/*; never downloaded, written over 14 days ago",
      lastDownloadedAt: null,
      ageDays: 30,
    });
  });
});

describe("rule members that do not apply to files", () => {
  beforeAll(async () => createDirectory("refusals"));

  it.each([
    ["keepVersionsCount", { keepVersionsCount: 2 }],
    ["deletePrereleaseVersions", { deletePrereleaseVersions: true, deleteOlderThanDays: 3 }],
    ["keepVersions", { keepVersions: ["1.*"], deleteOlderThanDays: 3 }],
    ["deleteVersions", { deleteVersions: ["1.*"] }],
    ["deleteCached", { deleteCached: true, deleteOlderThanDays: 3 }],
    ["deleteLatestStable", { deleteLatestStable: true, deleteOlderThanDays: 3 }],
    ["keepDeployedWithinDays", { keepDeployedWithinDays: 0, deleteOlderThanDays: 3 }],
    ["triggerDownloadCount", { triggerDownloadCount: 5 }],
  ])("%s is refused with a 400 naming it", async (field, rule) => {
    const res = await setRules("refusals", { retentionRules: [{ deleteOlderThanDays: 1 }, rule] });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.headers["x-wharf-error"]).toBe("SETTING_NOT_APPLICABLE");
    expect(res.body).toContain(`retentionRules[1].${field}: does not apply to an asset directory`);
    // Nothing was stored.
    const feed = await t.app.inject({ url: "/api/management/feeds/get/refusals", headers: admin });
    expect(feed.json().retentionRules).toEqual([]);
  });

  it("stores the members that apply, with a schedule, and takes the whole feed back as pgutil sends it", async () => {
    const rules = [{ deletePackageIds: ["tmp/*", "!tmp/keep*"], keepPackageIds: ["*.sig"], keepUsedWithinDays: 30 }];
    const res = await setRules("refusals", {
      retentionRulesEnabled: true,
      retentionSchedule: "@daily",
      retentionRules: [...rules, { sizeTriggerKb: 1024, sizeExclusive: true, deleteOlderThanDays: 7 }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const feed = res.json();
    expect(feed.retentionSchedule).toBe("@daily");
    expect(feed.retentionRules[0]).toMatchObject({ ...rules[0], deleteCached: false, deletePrereleaseVersions: false });
    const again = await setRules("refusals", feed);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().retentionRules).toEqual(feed.retentionRules);
  });
});

describe("preview and run", () => {
  /** The directory's store: the data directory's, or a cluster node's object store. */
  const blobs = () => createUpackFixtures(t).blobs;
  const sha256 = (body: Buffer) => createHash("sha256").update(body).digest("hex");

  it("a run from a preview's token deletes exactly its files through the directory's delete", async () => {
    await createDirectory("ci");
    const old = [await upload("ci", "nightly/1.zip", 300), await upload("ci", "nightly/2.zip", 300)];
    const kept = await upload("ci", "nightly/keep.txt", 10);
    time.advance(8 * DAY);
    await upload("ci", "nightly/3.zip", 300);
    await setRules("ci", { retentionRules: [{ deleteOlderThanDays: 7, keepPackageIds: ["*.txt"] }] });
    const planned = await preview("ci", "POST");
    expect(planned.token).toMatch(/^[0-9a-f]{32}$/);
    expect(labels(planned)).toEqual(["1:nightly/1.zip", "1:nightly/2.zip"]);
    for (const body of old) expect(await blobs().stat(sha256(body))).toBeDefined();

    const done = await run("ci", planned.token);
    expect(done).toMatchObject({
      status: "succeeded",
      fromPreview: true,
      versionsDeleted: 2,
      bytesFreed: planned.bytes,
      versionsSkipped: 0,
    });
    expect(await filesLeft("ci")).toEqual(["nightly/3.zip", "nightly/keep.txt"]);
    // Gone as after a DELETE: 404, the folder stays, the blobs are given back.
    const gone = await t.app.inject({ url: "/endpoints/ci/content/nightly/1.zip", headers: admin });
    expect(gone.statusCode).toBe(404);
    // A cluster node deletes no blob eagerly (another node may be storing the same bytes): they
    // are left to garbage collection there (docs/cluster-mode.md, Blobs).
    if (!testsRunOnPostgres()) for (const body of old) expect(await blobs().stat(sha256(body))).toBeUndefined();
    expect(await blobs().stat(sha256(kept))).toBeDefined();
    const listing = await t.app.inject({ url: "/endpoints/ci/dir/nightly", headers: admin });
    expect(listing.statusCode).toBe(200);
    const log = (await finished("ci", done.id)).log?.join("\n") ?? "";
    expect(log).toContain("Retention of ci: 2 file(s) to delete");
    expect(log).toContain("Deleted nightly/1.zip (rule 1: written over 7 days ago; 300 bytes).");
    expect(log).toContain(`Deleted 2 file(s), ${planned.bytes} bytes freed.`);
  });

  it("files downloaded or replaced since the preview are skipped and reported; new ones are not added", async () => {
    await createDirectory("changing");
    for (const path of ["x.tmp", "y.tmp", "a.bin", "c.bin"]) await upload("changing", path, 100);
    time.advance(40 * DAY);
    await setRules("changing", { retentionRules: [{ deletePackageIds: ["*.tmp"] }, { keepUsedWithinDays: 30 }] });
    const planned = await preview("changing", "POST");
    expect(labels(planned)).toEqual(["1:x.tmp", "1:y.tmp", "2:a.bin", "2:c.bin"]);
    // Since the preview: y.tmp replaced (still selected, other bytes), a.bin used (no longer
    // selected), z.tmp added (selected now, but the preview never saw it).
    await upload("changing", "y.tmp", 100, "POST");
    await download("changing", "a.bin");
    await upload("changing", "z.tmp", 100);

    const done = await run("changing", planned.token);
    expect(done).toMatchObject({ status: "warned", versionsDeleted: 2, versionsSkipped: 2 });
    expect(await filesLeft("changing")).toEqual(["a.bin", "y.tmp", "z.tmp"]);
    const log = (await finished("changing", done.id)).log?.join("\n") ?? "";
    expect(log).toContain("Skipped y.tmp: it was overwritten since the preview");
    expect(log).toContain("Skipped a.bin: the rules no longer select it");
    expect(log).toContain("Deleted c.bin (rule 2: never downloaded, written over 30 days ago; 100 bytes).");
  });

  it("a run without a token deletes what a preview made just before it lists", async () => {
    await createDirectory("plain");
    for (let i = 0; i < 6; i++) {
      await upload("plain", `logs/${i}.log`, 50 + i);
      time.advance(DAY);
    }
    // Half a day more: no file is exactly on the boundary.
    time.advance(DAY / 2);
    await setRules("plain", { retentionRules: [{ deleteOlderThanDays: 4 }] });
    const before = await preview("plain");
    expect(before.versions).toBe(3);
    const done = await run("plain");
    expect(done).toMatchObject({
      status: "succeeded",
      fromPreview: false,
      versionsDeleted: 3,
      bytesFreed: before.bytes,
    });
    const left = new Set(await filesLeft("plain"));
    for (const item of before.items) expect(left.has(item.path ?? "")).toBe(false);
    expect(left.size).toBe(3);
  });
});

describe("download stamps", () => {
  const stampOf = async (path: string) =>
    (
      await readOne<{ last_downloaded_at: string | null }>(
        t.database,
        `SELECT a.last_downloaded_at FROM asset_items a JOIN feeds f ON f.id = a.feed_id
          WHERE f.name = 'stamps' AND a.path = ?`,
        path,
      )
    )?.last_downloaded_at;

  it("a GET stamps the file at most once a minute; a HEAD does not; a preview reads the stamp", async () => {
    await createDirectory("stamps");
    await upload("stamps", "f.bin", 10);
    await setRules("stamps", { retentionRules: [{ keepUsedWithinDays: 1 }] });
    await download("stamps", "f.bin", "HEAD");
    expect((await preview("stamps")).items).toEqual([]);
    expect(await stampOf("f.bin")).toBeNull();

    await download("stamps", "f.bin");
    const first = time.at();
    time.advance(30_000);
    await download("stamps", "f.bin");
    time.advance(2 * DAY);
    // The preview writes the stamps due before it reads.
    const result = await preview("stamps");
    expect(result.items[0]).toMatchObject({ path: "f.bin", lastDownloadedAt: first });
    expect(await stampOf("f.bin")).toBe(first);

    await download("stamps", "f.bin");
    expect((await preview("stamps")).items).toEqual([]);
    expect(await stampOf("f.bin")).toBe(time.at());
  });
});

describe("last use", () => {
  it("a file replaced after its last download counts as used when it was replaced", async () => {
    await createDirectory("replaced");
    await upload("replaced", "r.bin", 10);
    await download("replaced", "r.bin");
    time.advance(40 * DAY);
    await setRules("replaced", { retentionRules: [{ keepUsedWithinDays: 30 }] });
    expect(labels(await preview("replaced"))).toEqual(["1:r.bin"]);
    await upload("replaced", "r.bin", 10, "POST");
    expect((await preview("replaced")).items).toEqual([]);
  });
});

describe("schedules and privileges", () => {
  it("a schedule fires when the clock passes it and runs on the job runner", async () => {
    await createDirectory("nightly");
    await upload("nightly", "old.bin", 100);
    time.advance(10 * DAY);
    await upload("nightly", "new.bin", 100);
    const res = await setRules("nightly", {
      retentionRulesEnabled: true,
      retentionSchedule: "30 2 * * *",
      retentionRules: [{ deleteOlderThanDays: 5 }],
    });
    expect(res.statusCode, res.body).toBe(200);
    const runsOf = async () =>
      ((await t.app.inject({ url: "/api/retention/runs?feed=nightly", headers: admin })).json() as { runs: Run[] })
        .runs;
    await until(async () => {
      const row = await readOne(
        t.database,
        "SELECT 1 AS found FROM retention_schedule_state s JOIN feeds f ON f.id = s.feed_id WHERE f.name = 'nightly'",
      );
      return row !== undefined;
    });
    expect(await runsOf()).toEqual([]);
    time.advance(DAY);
    await until(async () => (await runsOf()).length > 0);
    const [scheduled] = await runsOf();
    expect(scheduled).toMatchObject({ trigger: "schedule" });
    expect(await finished("nightly", scheduled?.id ?? 0)).toMatchObject({ status: "succeeded", versionsDeleted: 1 });
    expect(await filesLeft("nightly")).toEqual(["new.bin"]);
  }, 20_000);

  it("needs Admin_ManageFeed on the directory: others get 403, no key 401", async () => {
    const writer = await createFeedKey(t.database, "nightly", ["view", "add", "delete"]);
    for (const [method, url] of [
      ["GET", "/api/retention/preview?feed=nightly"],
      ["POST", "/api/retention/run?feed=nightly"],
      ["GET", "/api/retention/runs?feed=nightly"],
    ] as const) {
      const res = await t.app.inject({ method, url, headers: { "x-apikey": writer } });
      expect(res.statusCode, `${method} ${url}`).toBe(403);
    }
    expect((await t.app.inject({ url: "/api/retention/preview?feed=nightly" })).statusCode).toBe(401);
    const feeds = await createSystemKey(t.database, ["feeds"]);
    const allowed = await t.app.inject({ url: "/api/retention/preview?feed=nightly", headers: { "x-apikey": feeds } });
    expect(allowed.statusCode).toBe(200);
  });
});

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
