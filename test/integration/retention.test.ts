import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { type RetentionRunJson, retentionApi } from "../helpers/retention-api.js";
import { manualClock } from "../helpers/clock.js";
import { createFeedKey, createSystemKey, readAll, readOne } from "../helpers/fixtures.js";
import { insertLegacyFeed } from "../helpers/legacy-feed.js";
import { buildUpack, createUpackFixtures, type UpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Retention through the API (issue 17 section 1): rules stored and echoed by feed management,
 * refused when wrong; a preview that says what goes and why; a run (from the preview's token)
 * that deletes exactly that, raising package.purged; versions changed since a preview skipped;
 * a schedule that fires when the (hand-moved) clock passes it; privileges.
 */

const DAY = 86_400_000;
const time = manualClock(Date.parse("2030-01-01T00:00:00.000Z"));
let t: TestApp;
let api: ReturnType<typeof retentionApi>;
let admin: Record<string, string>;
let upack: UpackFixtures;

beforeAll(async () => {
  t = await buildTestApp({ clock: time.clock, env: { WHARF_RETENTION_CHECK_SECONDS: "1" } });
  admin = { "x-apikey": t.adminKey };
  api = retentionApi(t);
  upack = createUpackFixtures(t);
});
afterAll(async () => t.close());

const setRules = (feed: string, body: Record<string, unknown>, headers?: Record<string, string>) =>
  api.setRules(feed, body, headers);
const preview = (feed: string, method?: "GET" | "POST") => api.preview(feed, method);
const finished = (feed: string, id: number) => api.finished(feed, id);
const run = (feed: string, token?: string) => api.run(feed, token);

type Run = RetentionRunJson;

const ago = (days: number) => new Date(time.clock.now().getTime() - days * DAY);
const label = (item: { group: string; name: string; version: string }) =>
  `${item.group ? `${item.group}/` : ""}${item.name}@${item.version}`;

async function versionsLeft(feed: string): Promise<string[]> {
  const rows = await readAll<{ group: string; name: string; version: string }>(
    t.database,
    `SELECT p.group_name AS "group", p.name, v.version FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
       JOIN feeds f ON f.id = p.feed_id WHERE f.name = ? ORDER BY p.name, v.sort_key`,
    feed,
  );
  return rows.map(label);
}

describe("rules are stored, echoed and checked by feed management", () => {
  beforeAll(async () => {
    await upack.createFeed("rules");
    await upack.createFeed("assets", "asset");
  });

  it("stores rules with Wharf's extensions and a schedule, and echoes them with their defaults", async () => {
    const res = await setRules("rules", {
      retentionRulesEnabled: true,
      retentionSchedule: " 0 3 * * * ",
      retentionRules: [
        { keepVersionsCount: 3, deletePackageIds: ["temp.*", "!temp.keep"] },
        { deleteOlderThanDays: 90 },
      ],
    });
    expect(res.statusCode, res.body).toBe(200);
    const feed = res.json();
    expect(feed.retentionRulesEnabled).toBe(true);
    expect(feed.retentionSchedule).toBe("0 3 * * *");
    expect(feed.retentionRules).toEqual([
      {
        deletePrereleaseVersions: false,
        keepVersionsCount: 3,
        deletePackageIds: ["temp.*", "!temp.keep"],
        keepPackageIds: [],
        keepVersions: [],
        deleteVersions: [],
        deleteCached: false,
        sizeExclusive: false,
        keepIfActivelyConsumed: false,
        deleteLatestStable: false,
      },
      expect.objectContaining({ deleteOlderThanDays: 90, deleteLatestStable: false }),
    ]);
    // pgutil sends the whole feed back: accepted as it is.
    const again = await setRules("rules", feed);
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().retentionRules).toEqual(feed.retentionRules);
    // null removes the schedule
    const removed = await setRules("rules", { retentionSchedule: null });
    expect(removed.json().retentionSchedule).toBeUndefined();
  });

  it.each([
    ["a cron expression that is not one", { retentionSchedule: "every day" }, "INVALID_RETENTION_SCHEDULE"],
    ["a cron field out of range", { retentionSchedule: "61 * * * *" }, "INVALID_RETENTION_SCHEDULE"],
    ["seconds in the cron expression", { retentionSchedule: "0 0 3 * * *" }, "INVALID_RETENTION_SCHEDULE"],
    ["a rule that would delete everything", { retentionRules: [{ deletePrereleaseVersions: true }] }, "INVALID_FEED"],
    [
      "a negation in keepPackageIds",
      { retentionRules: [{ keepVersionsCount: 1, keepPackageIds: ["!a"] }] },
      "INVALID_PATTERN",
    ],
    [
      "sizeExclusive without a size",
      { retentionRules: [{ keepVersionsCount: 1, sizeExclusive: true }] },
      "INVALID_FEED",
    ],
    ["package usage criteria", { retentionRules: [{ keepConsumedWithinDays: 3 }] }, "SETTING_NOT_IMPLEMENTED"],
    ["a negative number of days", { retentionRules: [{ keepUsedWithinDays: -1 }] }, undefined],
  ])("refuses %s with a 400 that says what is wrong", async (_name, body, code) => {
    const res = await setRules("rules", body);
    expect(res.statusCode, res.body).toBe(400);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    if (code !== undefined) expect(res.headers["x-wharf-error"]).toBe(code);
    expect(res.body.length).toBeGreaterThan(20);
  });

  it("refuses, on an asset directory, rule members about versions (retention-assets.test.ts has the rest)", async () => {
    const rules = await setRules("assets", { retentionRules: [{ keepVersionsCount: 3 }] });
    expect(rules.statusCode).toBe(400);
    expect(rules.body).toContain("retentionRules[0].keepVersionsCount: does not apply to an asset directory");
  });
});

describe("preview and run", () => {
  beforeAll(async () => {
    await upack.createFeed("ci");
    // Uploaded through the API, a day apart: published_at comes from the app's clock.
    for (const version of ["1.0.0", "1.1.0", "1.2.0", "2.0.0-rc.1", "2.0.0"]) {
      const res = await t.app.inject({
        method: "PUT",
        url: "/upack/ci/upload",
        headers: admin,
        payload: await buildUpack({ group: "acme", name: "app", version }),
      });
      expect(res.statusCode, res.body).toBe(201);
      time.advance(DAY);
    }
  });

  it("lists what a run would delete and why, with totals", async () => {
    await setRules("ci", { retentionRules: [{ keepVersionsCount: 2 }] });
    const result = await preview("ci");
    expect(result).toMatchObject({ feed: "ci", examined: 5, versions: 3 });
    expect(result.token).toBeUndefined();
    expect(result.items.map(label)).toEqual(["acme/app@1.2.0", "acme/app@1.1.0", "acme/app@1.0.0"]);
    expect(result.items[2]).toMatchObject({
      rule: 1,
      reason: "not among the latest 2",
      ageDays: 5,
      lastDownloadedAt: null,
    });
    expect(result.bytes).toBe(result.items.reduce((sum, item) => sum + item.bytes, 0));
    expect(result.bytes).toBeGreaterThan(0);
  });

  it("a run from the preview's token deletes exactly the preview's list, raising package.purged", async () => {
    const planned = await preview("ci", "POST");
    expect(planned.token).toMatch(/^[0-9a-f]{32}$/);
    const done = await run("ci", planned.token);
    expect(done).toMatchObject({
      status: "succeeded",
      trigger: "manual",
      fromPreview: true,
      versionsDeleted: planned.versions,
      bytesFreed: planned.bytes,
      versionsSkipped: 0,
    });
    expect(await versionsLeft("ci")).toEqual(["acme/app@2.0.0-rc.1", "acme/app@2.0.0"]);
    const purged = await readAll<{ version: string; actor: string; data: string }>(
      t.database,
      `SELECT package_version AS version, actor, data FROM lifecycle_events
          WHERE type = 'package.purged' AND feed_name = 'ci' ORDER BY id`,
    );
    expect(purged.map((row) => row.version)).toEqual(["1.2.0", "1.1.0", "1.0.0"]);
    expect(purged[0]?.actor).toBe("retention");
    expect(JSON.parse(purged[0]?.data ?? "{}")).toMatchObject({ rule: 1, reason: "not among the latest 2" });
    const deleted = await readOne(
      t.database,
      "SELECT count(*) AS n FROM lifecycle_events WHERE type = 'package.deleted'",
    );
    expect(deleted).toEqual({ n: 0 });
    const log = (await finished("ci", 1)).log ?? [];
    expect(log.join("\n")).toContain("Deleted acme/app 1.0.0 (rule 1: not among the latest 2;");
    expect(log.at(-2)).toContain(`Deleted 3 version(s), ${planned.bytes} bytes freed.`);
  });

  it("a run deletes no more than its preview: versions changed since are skipped and reported", async () => {
    await upack.createFeed("changing");
    for (const version of ["1.0.0", "2.0.0", "3.0.0"]) {
      await upack.addVersion("changing", { name: "lib", version }, { publishedAt: ago(100) });
    }
    await setRules("changing", { retentionRules: [{ keepUsedWithinDays: 30 }] });
    const planned = await preview("changing", "POST");
    expect(planned.items.map(label)).toEqual(["lib@2.0.0", "lib@1.0.0"]);
    // Downloaded after the preview: the rule no longer selects 2.0.0.
    const download = await t.app.inject({ url: "/upack/changing/download/lib/2.0.0", headers: admin });
    expect(download.statusCode).toBe(200);
    // And a version the preview never saw, which the rule would select now.
    await upack.addVersion("changing", { name: "lib", version: "0.5.0" }, { publishedAt: ago(100) });

    const done = await run("changing", planned.token);
    expect(done).toMatchObject({ status: "warned", versionsDeleted: 1, versionsSkipped: 1 });
    expect(await versionsLeft("changing")).toEqual(["lib@0.5.0", "lib@2.0.0", "lib@3.0.0"]);
    expect((await finished("changing", done.id)).log?.join("\n")).toContain(
      "Skipped lib 2.0.0: the rules no longer select it",
    );
    // The download is what the rule reads: the stamp is the app clock's.
    const stamp = await readOne(
      t.database,
      "SELECT last_downloaded_at AS at FROM upack_versions WHERE version = '2.0.0' AND downloads = 1",
    );
    expect(stamp).toEqual({ at: time.at() });
  });

  it("a run without a token equals a preview made just before it", async () => {
    await upack.createFeed("plain");
    for (let minor = 0; minor < 6; minor++) {
      await upack.addVersion("plain", { name: "tool", version: `1.${minor}.0` }, { publishedAt: ago(10 - minor) });
    }
    await setRules("plain", { retentionRules: [{ deleteOlderThanDays: 7 }] });
    const before = await preview("plain");
    const done = await run("plain");
    expect(done).toMatchObject({ status: "succeeded", fromPreview: false, versionsDeleted: before.versions });
    expect(done.bytesFreed).toBe(before.bytes);
    const left = new Set(await versionsLeft("plain"));
    for (const item of before.items) expect(left.has(label(item))).toBe(false);
    expect(left.size).toBe(6 - before.versions);
  });

  it("an unknown or other feed's token is a 400; runs of an unknown feed a 404", async () => {
    const other = await preview("plain", "POST");
    const res = await t.app.inject({
      method: "POST",
      url: "/api/retention/run?feed=ci",
      headers: admin,
      payload: { token: other.token },
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers["x-wharf-error"]).toBe("RETENTION_PREVIEW_UNKNOWN");
    const bad = await t.app.inject({
      method: "POST",
      url: "/api/retention/run?feed=ci",
      headers: admin,
      payload: { token: "x" },
    });
    expect(bad.statusCode).toBe(400);
    const missing = await t.app.inject({ url: "/api/retention/preview?feed=nope", headers: admin });
    expect(missing.statusCode).toBe(404);
    const noFeed = await t.app.inject({ url: "/api/retention/preview", headers: admin });
    expect(noFeed.statusCode).toBe(400);
    // A feed type Wharf no longer creates, as an older Wharf left it.
    await insertLegacyFeed(t, "nuget-feed", "nuget");
    const legacy = await t.app.inject({ url: "/api/retention/preview?feed=nuget-feed", headers: admin });
    expect(legacy.statusCode).toBe(400);
    expect(legacy.headers["x-wharf-error"]).toBe("RETENTION_NOT_APPLICABLE");
  });

  it("lists the feed's runs, newest first, with their summaries", async () => {
    const res = await t.app.inject({ url: "/api/retention/runs?feed=ci", headers: admin });
    expect(res.statusCode).toBe(200);
    const body = res.json() as { feed: string; runs: Run[] };
    expect(body.feed).toBe("ci");
    expect(body.runs).toHaveLength(1);
    expect(body.runs[0]).toMatchObject({ status: "succeeded", versionsDeleted: 3, trigger: "manual" });
    const elsewhere = await t.app.inject({ url: `/api/retention/runs/${body.runs[0]?.id}?feed=plain`, headers: admin });
    expect(elsewhere.statusCode).toBe(404);
  });
});

describe("each rule through the API", () => {
  beforeAll(async () => {
    await upack.createFeed("rulebook");
    const old = { publishedAt: ago(200) };
    for (const version of ["1.0.0", "1.1.0", "2.0.0-beta", "2.0.0"]) {
      await upack.addVersion("rulebook", { group: "team", name: "svc", version }, old);
    }
    await upack.addVersion("rulebook", { name: "temp.build", version: "0.1.0" }, old);
    await upack.addVersion("rulebook", { name: "temp.build", version: "0.2.0" }, old);
    await upack.addVersion("rulebook", { name: "mirror", version: "1.0.0" }, { ...old, isCached: true });
    await upack.addVersion("rulebook", { name: "mirror", version: "2.0.0" }, { ...old, isCached: true });
    await upack.addVersion("rulebook", { name: "popular", version: "1.0.0" }, { ...old, downloads: 50 });
    await upack.addVersion("rulebook", { name: "popular", version: "1.1.0" }, old);
    // A deployment record, through its API, protects team/svc 1.0.0.
    const deployed = await t.app.inject({
      method: "POST",
      url: "/api/package-deployment/",
      headers: admin,
      payload: {
        Application: "shop",
        Description: "prod",
        Target: "web01",
        FeedName: "rulebook",
        GroupName: "team",
        PackageName: "svc",
        Version: "1.0.0",
      },
    });
    expect(deployed.statusCode, deployed.body).toBe(200);
  });

  it.each([
    [
      "keepVersionsCount (the deployed 1.0.0 stays)",
      [{ keepVersionsCount: 1 }],
      ["team/svc@2.0.0-beta", "team/svc@1.1.0", "temp.build@0.1.0", "popular@1.0.0"],
    ],
    [
      "keepVersionsCount with deleteLatestStable and keepDeployedWithinDays 0",
      [{ keepVersionsCount: 0, deleteLatestStable: true, keepDeployedWithinDays: 0, deletePackageIds: ["team/*"] }],
      ["team/svc@2.0.0", "team/svc@2.0.0-beta", "team/svc@1.1.0", "team/svc@1.0.0"],
    ],
    ["deletePrereleaseVersions", [{ deletePrereleaseVersions: true, keepVersionsCount: 0 }], ["team/svc@2.0.0-beta"]],
    ["deletePackageIds", [{ deletePackageIds: ["temp.*"], deleteOlderThanDays: 1 }], ["temp.build@0.1.0"]],
    ["keepPackageIds", [{ keepPackageIds: ["team/*", "temp.*"], keepVersionsCount: 1 }], ["popular@1.0.0"]],
    ["deleteVersions", [{ deleteVersions: ["1.*"] }], ["team/svc@1.1.0", "popular@1.0.0"]],
    [
      "keepVersions",
      [{ keepVersions: ["1.1.*", "0.*"], deleteOlderThanDays: 1 }],
      ["team/svc@2.0.0-beta", "popular@1.0.0"],
    ],
    ["keepUsedWithinDays", [{ keepUsedWithinDays: 300 }], []],
    ["triggerDownloadCount", [{ triggerDownloadCount: 10, deletePackageIds: ["popular"] }], []],
    ["deleteCached", [{ deleteCached: true, keepVersionsCount: 1 }], ["mirror@1.0.0"]],
    [
      "sizeTriggerKb with sizeExclusive (a cap)",
      [{ keepVersionsCount: 0, sizeTriggerKb: 1, sizeExclusive: true }],
      "all-but-protected",
    ],
  ])("%s", async (_name, rules, expected) => {
    const res = await setRules("rulebook", { retentionRules: rules });
    expect(res.statusCode, res.body).toBe(200);
    const result = await preview("rulebook");
    if (expected === "all-but-protected") {
      // A 1 KB cap cannot be met: every candidate goes, the deployed and latest stable versions stay.
      expect(result.items.map(label).sort()).toEqual(
        ["team/svc@1.1.0", "team/svc@2.0.0-beta", "temp.build@0.1.0", "popular@1.0.0"].sort(),
      );
      expect(result.items[0]?.reason).toContain("oldest first until the feed is at most 1 KB");
    } else {
      expect(result.items.map(label)).toEqual(expected);
    }
  });

  it("deployment protection says nothing once the deployment is older than the window", async () => {
    time.advance(31 * DAY);
    await setRules("rulebook", { retentionRules: [{ keepVersionsCount: 1, deletePackageIds: ["team/*"] }] });
    const result = await preview("rulebook");
    expect(result.items.map(label)).toEqual(["team/svc@2.0.0-beta", "team/svc@1.1.0", "team/svc@1.0.0"]);
  });
});

describe("schedules and privileges", () => {
  it("a schedule fires when the clock passes it, and runs on the job runner", async () => {
    await upack.createFeed("nightly");
    for (const version of ["1.0.0", "2.0.0", "3.0.0"]) {
      await upack.addVersion("nightly", { name: "n", version }, { publishedAt: ago(5) });
    }
    const res = await setRules("nightly", {
      retentionRulesEnabled: true,
      retentionSchedule: "30 2 * * *",
      retentionRules: [{ keepVersionsCount: 1 }],
    });
    expect(res.statusCode).toBe(200);
    const runsOf = async () =>
      ((await t.app.inject({ url: "/api/retention/runs?feed=nightly", headers: admin })).json() as { runs: Run[] })
        .runs;
    // The scheduler notes the schedule at its next look, and fires at the next 02:30 after that.
    await until(
      async () => (await readOne(t.database, "SELECT 1 AS found FROM retention_schedule_state")) !== undefined,
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await runsOf()).toEqual([]);
    time.advance(DAY);
    await until(async () => (await runsOf()).length > 0);
    const [scheduled] = await runsOf();
    expect(scheduled).toMatchObject({ trigger: "schedule" });
    const done = await finished("nightly", scheduled?.id ?? 0);
    expect(done).toMatchObject({ status: "succeeded", versionsDeleted: 2 });
    expect(await versionsLeft("nightly")).toEqual(["n@3.0.0"]);
    // One firing, one run: the next look does not fire again.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await runsOf()).toHaveLength(1);
  }, 20_000);

  it("needs Admin_ManageFeed on the feed: others get 403, no key 401", async () => {
    const view = await createFeedKey(t.database, "ci", ["view", "add", "delete"]);
    const builds = await createSystemKey(t.database, ["releases"]);
    for (const key of [view, builds]) {
      for (const [method, url] of [
        ["GET", "/api/retention/preview?feed=ci"],
        ["POST", "/api/retention/preview?feed=ci"],
        ["POST", "/api/retention/run?feed=ci"],
        ["GET", "/api/retention/runs?feed=ci"],
        ["GET", "/api/retention/runs/1?feed=ci"],
      ] as const) {
        const res = await t.app.inject({ method, url, headers: { "x-apikey": key } });
        expect(res.statusCode, `${method} ${url}`).toBe(403);
      }
    }
    const anonymous = await t.app.inject({ url: "/api/retention/preview?feed=ci" });
    expect(anonymous.statusCode).toBe(401);
    const feedsScope = await createSystemKey(t.database, ["feeds"]);
    const allowed = await t.app.inject({ url: "/api/retention/preview?feed=ci", headers: { "x-apikey": feedsScope } });
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
