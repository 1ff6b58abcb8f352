import { beforeAll, expect, it } from "vitest";
import {
  createRetentionRepository,
  type PlannedDeletion,
  type RetentionRepository,
  type RetentionRun,
} from "../../../src/areas/retention/repository.js";
import { createPostgresRetentionRepository } from "../../../src/areas/retention/repository-postgres.js";
import type { RetentionCandidate } from "../../../src/areas/retention/evaluate.js";
import { postgresDownloadCounterOf } from "../../../src/areas/upack/read/download-counts-postgres.js";
import { downloadCounterOf } from "../../../src/areas/upack/download/counts.js";
import { versionSortKey } from "../../../src/domain/upack-version-sort.js";
import { parseVersion } from "../../../src/domain/upack-version.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../../src/storage/sqlite-errors.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const HOUR_BEFORE = "2026-11-29T09:00:00.000Z";
const LATER = "2026-11-30T08:00:00.000Z";
const DOWNLOADED = "2026-11-20T12:00:00.000Z";
const COUNTED = "2026-11-29T09:30:00.000Z";

const repositoryOn = (database: TestDatabase): RetentionRepository =>
  database.kind === "sqlite"
    ? createRetentionRepository(database.sqlite)
    : createPostgresRetentionRepository(database.postgres);

const planned = (id: number, fields: Partial<PlannedDeletion> = {}): PlannedDeletion => ({
  id,
  group: "",
  name: "app",
  version: "1.0.0",
  sha256: `sha ${id}`,
  rule: 1,
  reason: "published over 30 days ago",
  bytes: 5_000_000_000,
  ageDays: 40,
  publishedAt: T0,
  lastDownloadedAt: undefined,
  ...fields,
});

/** An error a promise rejected with (the test fails when it fulfilled). */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error("expected a rejection");
    },
    (error: unknown) => error,
  );
}

describeOnBothDatabases("Retention repository", (database) => {
  let retention: RetentionRepository;
  let feedNumber = 0;

  const one = async (sql: string, params: readonly unknown[] = []) =>
    (await database().exec(sql, params))[0] as Record<string, number>;
  const newFeed = () => insertFeed(database().exec, `feed${++feedNumber}`, T0);
  const newPackage = async (feedId: number, group: string, name: string) =>
    (
      await one(
        "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, ?, ?, ?, ?) RETURNING id",
        [feedId, group, name, group.toLowerCase(), name.toLowerCase()],
      )
    ).id as number;
  const sortKeyOf = (version: string) => {
    const parsed = parseVersion(version);
    if (parsed === undefined) throw new Error(`bad version ${version}`);
    return versionSortKey(parsed);
  };
  const newVersion = async (
    packageId: number,
    version: string,
    fields: { size?: number; cached?: number; downloads?: number; lastDownloadedAt?: string | null } = {},
  ) => {
    return (
      await one(
        `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
                                     file_list, is_virtual, is_cached, downloads, published_at, last_downloaded_at)
         VALUES (?, ?, ?, ?, '{}', ?, 'sha1', ?, '[]', 0, ?, ?, ?, ?) RETURNING id`,
        [
          packageId,
          version,
          version.toLowerCase(),
          sortKeyOf(version),
          `blob ${packageId} ${version}`,
          fields.size ?? 100,
          fields.cached ?? 0,
          fields.downloads ?? 0,
          T0,
          fields.lastDownloadedAt ?? null,
        ],
      )
    ).id as number;
  };
  const deploy = (feedId: number, group: string, name: string, version: string, at: string) =>
    database().exec(
      `INSERT INTO package_deployments (feed_id, group_name, name, version, group_key, name_key, version_key,
                                        application, description, target, deployed_at, recorded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, 'shop', 'release', 'prod', ?, ?)`,
      [feedId, group, name, version, group.toLowerCase(), name.toLowerCase(), version.toLowerCase(), at, at],
    );
  const newJob = async (status: string) =>
    (
      await one(
        "INSERT INTO jobs (kind, payload, status, created_at) VALUES ('retention.run', '{}', ?, ?) RETURNING id",
        [status, T0],
      )
    ).id as number;
  const byId = <T extends { id: number }>(rows: T[]) => [...rows].sort((a, b) => a.id - b.id);

  beforeAll(() => {
    retention = repositoryOn(database());
  });

  it("reads every version of the feed with what the rules look at, pending download counts written first", async () => {
    const db = database();
    const feedId = await newFeed();
    const otherFeedId = await newFeed();
    const app = await newPackage(feedId, "", "App");
    const lib = await newPackage(feedId, "Tools", "Lib");
    const stable = await newVersion(app, "1.0.0", {
      size: 5_000_000_000,
      downloads: 3,
      lastDownloadedAt: DOWNLOADED,
    });
    const candidate = await newVersion(app, "2.0.0-RC.1", { cached: 1 });
    const libVersion = await newVersion(lib, "0.1.0");
    const elsewhere = await newPackage(otherFeedId, "", "App");
    await newVersion(elsewhere, "1.0.0");
    // The latest deployment counts, matched by the version's key; another feed's counts not.
    await deploy(feedId, "", "app", "2.0.0-rc.1", "2026-11-01T00:00:00.000Z");
    await deploy(feedId, "", "App", "2.0.0-RC.1", "2026-11-15T00:00:00.000Z");
    await deploy(otherFeedId, "Tools", "Lib", "0.1.0", "2026-11-16T00:00:00.000Z");
    // A download counted but not written yet: written before the read.
    if (db.kind === "sqlite") downloadCounterOf(db.sqlite).add(feedId, stable, app, COUNTED);
    else postgresDownloadCounterOf(db.postgres).add(feedId, stable, app, COUNTED);

    const expected: RetentionCandidate[] = [
      {
        id: stable,
        packageId: app,
        group: "",
        name: "App",
        version: "1.0.0",
        sortKey: sortKeyOf("1.0.0"),
        prerelease: false,
        bytes: 5_000_000_000,
        publishedAt: T0,
        lastDownloadedAt: COUNTED,
        downloads: 4,
        cached: false,
        lastDeployedAt: undefined,
        sha256: `blob ${app} 1.0.0`,
      },
      {
        id: candidate,
        packageId: app,
        group: "",
        name: "App",
        version: "2.0.0-RC.1",
        sortKey: sortKeyOf("2.0.0-RC.1"),
        prerelease: true,
        bytes: 100,
        publishedAt: T0,
        lastDownloadedAt: undefined,
        downloads: 0,
        cached: true,
        lastDeployedAt: "2026-11-15T00:00:00.000Z",
        sha256: `blob ${app} 2.0.0-RC.1`,
      },
      {
        id: libVersion,
        packageId: lib,
        group: "Tools",
        name: "Lib",
        version: "0.1.0",
        sortKey: sortKeyOf("0.1.0"),
        prerelease: false,
        bytes: 100,
        publishedAt: T0,
        lastDownloadedAt: undefined,
        downloads: 0,
        cached: false,
        lastDeployedAt: undefined,
        sha256: `blob ${lib} 0.1.0`,
      },
    ];
    // In no promised order: the rules order versions themselves (evaluate.ts).
    expect(byId(await retention.candidates(feedId))).toEqual(expected);
    expect(await retention.candidates(await newFeed())).toEqual([]);
  });

  it("keeps a preview's items under its token for its feed while young enough, and prunes old ones", async () => {
    const feedId = await newFeed();
    const otherFeedId = await newFeed();
    const items = [planned(1), planned(2, { group: "tools", name: "lib", lastDownloadedAt: DOWNLOADED })];
    const files = [planned(3, { name: "a/b.zip", version: "", path: "a/b.zip" })];
    await retention.savePlan("a".repeat(32), feedId, T0, items);
    await retention.savePlan("b".repeat(32), feedId, HOUR_BEFORE, files);
    await retention.savePlan("c".repeat(32), feedId, T0, []);

    // lastDownloadedAt undefined is left out, as JSON does on both databases.
    expect(await retention.findPlan("a".repeat(32), feedId, HOUR_BEFORE)).toEqual(
      JSON.parse(JSON.stringify(items)) as PlannedDeletion[],
    );
    expect(await retention.findPlan("b".repeat(32), feedId, HOUR_BEFORE)).toEqual(files);
    expect(await retention.findPlan("c".repeat(32), feedId, T0)).toEqual([]);
    expect(await retention.findPlan("a".repeat(32), otherFeedId, HOUR_BEFORE)).toBeUndefined();
    expect(await retention.findPlan("a".repeat(32), feedId, LATER)).toBeUndefined();
    expect(await retention.findPlan("d".repeat(32), feedId, HOUR_BEFORE)).toBeUndefined();

    await retention.prunePlans(T0);
    expect(await retention.findPlan("b".repeat(32), feedId, HOUR_BEFORE)).toBeUndefined();
    expect(await retention.findPlan("a".repeat(32), feedId, HOUR_BEFORE)).toHaveLength(2);
  });

  it("refuses a token kept already, and rows of a feed that is gone, with the driver's constraint errors as SQLite does", async () => {
    const feedId = await newFeed();
    await retention.savePlan("e".repeat(32), feedId, T0, [planned(1)]);
    expect(isUniqueViolation(await rejectionOf(retention.savePlan("e".repeat(32), feedId, T0, [])))).toBe(true);
    expect(await retention.findPlan("e".repeat(32), feedId, T0)).toHaveLength(1);
    expect(isForeignKeyViolation(await rejectionOf(retention.savePlan("f".repeat(32), 999_999, T0, [])))).toBe(true);
    const run = { feedId: 999_999, trigger: "manual", requestedBy: "ann", createdAt: T0, planned: undefined } as const;
    expect(isForeignKeyViolation(await rejectionOf(retention.addRun(run)))).toBe(true);
    expect(isForeignKeyViolation(await rejectionOf(retention.setScheduleState(999_999, "@daily", T0)))).toBe(true);
    const runId = await retention.addRun({ ...run, feedId });
    expect(isForeignKeyViolation(await rejectionOf(retention.setRunJob(runId, 999_999)))).toBe(true);
  });

  it("stores runs, names their jobs, finishes them, and lists a feed's newest first", async () => {
    const feedId = await newFeed();
    const otherFeedId = await newFeed();
    const items = [planned(7)];
    const manual = await retention.addRun({
      feedId,
      trigger: "manual",
      requestedBy: "ann",
      createdAt: T0,
      planned: items,
    });
    const scheduled = await retention.addRun({
      feedId,
      trigger: "schedule",
      requestedBy: "Wharf",
      createdAt: LATER,
      planned: undefined,
    });
    expect(scheduled).toBeGreaterThan(manual);
    const fresh: RetentionRun = {
      id: manual,
      feedId,
      jobId: undefined,
      trigger: "manual",
      requestedBy: "ann",
      createdAt: T0,
      planned: JSON.parse(JSON.stringify(items)) as PlannedDeletion[],
      finishedAt: undefined,
      versionsDeleted: 0,
      bytesFreed: 0,
      versionsSkipped: 0,
      status: undefined,
    };
    expect(await retention.findRun(manual)).toEqual(fresh);

    const jobId = await newJob("executing");
    await retention.setRunJob(manual, jobId);
    await retention.finishRun(manual, LATER, { deleted: 2, bytes: 6_000_000_000, skipped: 1 });
    const finished: RetentionRun = {
      ...fresh,
      jobId,
      status: "executing",
      finishedAt: LATER,
      versionsDeleted: 2,
      bytesFreed: 6_000_000_000,
      versionsSkipped: 1,
    };
    expect(await retention.findRun(manual)).toEqual(finished);
    const second: RetentionRun = {
      id: scheduled,
      feedId,
      jobId: undefined,
      trigger: "schedule",
      requestedBy: "Wharf",
      createdAt: LATER,
      planned: undefined,
      finishedAt: undefined,
      versionsDeleted: 0,
      bytesFreed: 0,
      versionsSkipped: 0,
      status: undefined,
    };
    expect(await retention.listRuns(feedId, 50)).toEqual([second, finished]);
    expect(await retention.listRuns(feedId, 1)).toEqual([second]);
    expect(await retention.listRuns(feedId, -1)).toEqual([second, finished]);
    expect(await retention.listRuns(otherFeedId, 50)).toEqual([]);

    // A run that is not there: nothing found, nothing changed.
    expect(await retention.findRun(999_999)).toBeUndefined();
    await retention.setRunJob(999_999, jobId);
    await retention.finishRun(999_999, LATER, { deleted: 1, bytes: 1, skipped: 1 });
    expect(await retention.listRuns(feedId, 50)).toEqual([second, finished]);
  });

  it("says whether a run of the feed waits or executes", async () => {
    const feedId = await newFeed();
    expect(await retention.hasActiveRun(feedId)).toBe(false);
    const run = { feedId, trigger: "manual", requestedBy: "ann", createdAt: T0, planned: undefined } as const;
    const withoutJob = await retention.addRun(run);
    expect(await retention.hasActiveRun(feedId)).toBe(false);
    const done = await retention.addRun(run);
    await retention.setRunJob(done, await newJob("succeeded"));
    expect(await retention.hasActiveRun(feedId)).toBe(false);
    const finished = await retention.addRun(run);
    await retention.setRunJob(finished, await newJob("executing"));
    await retention.finishRun(finished, LATER, { deleted: 0, bytes: 0, skipped: 0 });
    expect(await retention.hasActiveRun(feedId)).toBe(false);

    const waiting = await newJob("pending");
    await retention.setRunJob(withoutJob, waiting);
    expect(await retention.hasActiveRun(feedId)).toBe(true);
    expect(await retention.hasActiveRun(await newFeed())).toBe(false);
    await database().exec("UPDATE jobs SET status = 'executing' WHERE id = ?", [waiting]);
    expect(await retention.hasActiveRun(feedId)).toBe(true);
    await database().exec("UPDATE jobs SET status = 'failed' WHERE id = ?", [waiting]);
    expect(await retention.hasActiveRun(feedId)).toBe(false);
  });

  it("remembers the scheduler's state per feed, the last one set", async () => {
    const feedId = await newFeed();
    const otherFeedId = await newFeed();
    expect(await retention.scheduleState(feedId)).toBeUndefined();
    await retention.setScheduleState(feedId, "0 3 * * *", T0);
    await retention.setScheduleState(otherFeedId, "@daily", T0);
    expect(await retention.scheduleState(feedId)).toEqual({ schedule: "0 3 * * *", since: T0 });
    await retention.setScheduleState(feedId, "0 4 * * *", LATER);
    expect(await retention.scheduleState(feedId)).toEqual({ schedule: "0 4 * * *", since: LATER });
    expect(await retention.scheduleState(otherFeedId)).toEqual({ schedule: "@daily", since: T0 });
  });

  it("forgets a run's job once the job is gone, and everything of a feed with the feed", async () => {
    const feedId = await newFeed();
    const runId = await retention.addRun({
      feedId,
      trigger: "manual",
      requestedBy: "ann",
      createdAt: T0,
      planned: undefined,
    });
    const jobId = await newJob("succeeded");
    await retention.setRunJob(runId, jobId);
    await retention.savePlan("9".repeat(32), feedId, T0, [planned(1)]);
    await retention.setScheduleState(feedId, "@daily", T0);

    await database().exec("DELETE FROM jobs WHERE id = ?", [jobId]);
    expect(await retention.findRun(runId)).toMatchObject({ id: runId, jobId: undefined, status: undefined });

    await database().exec("DELETE FROM feeds WHERE id = ?", [feedId]);
    expect(await retention.findRun(runId)).toBeUndefined();
    expect(await retention.listRuns(feedId, 50)).toEqual([]);
    expect(await retention.findPlan("9".repeat(32), feedId, T0)).toBeUndefined();
    expect(await retention.scheduleState(feedId)).toBeUndefined();
  });

  it("tells the node's caches of each write at once, and of no read (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const feedId = await newFeed();
    const before = db.commits();
    await retention.candidates(feedId);
    await retention.findPlan("a".repeat(32), feedId, T0);
    await retention.findRun(1);
    await retention.listRuns(feedId, 5);
    await retention.hasActiveRun(feedId);
    await retention.scheduleState(feedId);
    expect(db.commits()).toBe(before);

    await retention.savePlan("8".repeat(32), feedId, T0, []);
    await retention.prunePlans(HOUR_BEFORE);
    const runId = await retention.addRun({
      feedId,
      trigger: "manual",
      requestedBy: "ann",
      createdAt: T0,
      planned: undefined,
    });
    await retention.setRunJob(runId, await newJob("pending"));
    await retention.finishRun(runId, LATER, { deleted: 0, bytes: 0, skipped: 0 });
    await retention.setScheduleState(feedId, "@daily", T0);
    expect(db.commits()).toBe(before + 6);
  });

  // Two nodes: each its own pool on the same database.
  const openOtherNode = otherNodesForBlock(database);
  const otherNode = (): RetentionRepository | undefined =>
    database().kind === "postgres" ? createPostgresRetentionRepository(openOtherNode()) : undefined;

  it("two nodes setting a feed's schedule state at once: both succeed, one whole state stays (PostgreSQL)", async () => {
    const other = otherNode();
    if (other === undefined) return;
    for (let round = 0; round < 10; round++) {
      const feedId = await newFeed();
      await Promise.all([
        retention.setScheduleState(feedId, "0 3 * * *", T0),
        other.setScheduleState(feedId, "0 4 * * *", LATER),
      ]);
      expect([
        { schedule: "0 3 * * *", since: T0 },
        { schedule: "0 4 * * *", since: LATER },
      ]).toContainEqual(await retention.scheduleState(feedId));
    }
  });

  it("two nodes adding runs and keeping one token at once: every run stored, the token once (PostgreSQL)", async () => {
    const other = otherNode();
    if (other === undefined) return;
    const feedId = await newFeed();
    const run = { feedId, trigger: "manual", requestedBy: "ann", createdAt: T0, planned: undefined } as const;
    const ids = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? retention : other).addRun(run)));
    expect(new Set(ids).size).toBe(10);
    expect((await retention.listRuns(feedId, 50)).map((r) => r.id)).toEqual([...ids].sort((a, b) => b - a));

    const outcomes = await Promise.allSettled([
      retention.savePlan("7".repeat(32), feedId, T0, [planned(1)]),
      other.savePlan("7".repeat(32), feedId, T0, [planned(2)]),
    ]);
    expect(outcomes.filter((outcome) => outcome.status === "fulfilled")).toHaveLength(1);
    const [refused] = outcomes.filter((outcome) => outcome.status === "rejected");
    // As on SQLite, where the second insert of a token fails the same way.
    expect(isUniqueViolation(refused?.reason)).toBe(true);
    expect(await retention.findPlan("7".repeat(32), feedId, T0)).toHaveLength(1);
  });
});
