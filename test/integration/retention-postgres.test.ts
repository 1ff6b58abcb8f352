import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { AssetService } from "../../src/areas/endpoints/index.js";
import {
  createAssetRepository,
  type DeleteOptions as AssetDeleteOptions,
} from "../../src/areas/endpoints/repository.js";
import { createPostgresAssetRepository } from "../../src/areas/endpoints/repository-postgres.js";
import type { AssetPath } from "../../src/domain/asset-path.js";
import type { Feed, FeedService } from "../../src/areas/management/index.js";
import { defaultSettings, type RetentionRule } from "../../src/areas/management/feed-settings.js";
import { createRetention, type RetentionService } from "../../src/areas/retention/index.js";
import type { RetentionScheduler } from "../../src/areas/retention/scheduler.js";
import { createUpackWriteRepository, type DeleteOptions } from "../../src/areas/upack/repository.js";
import { createPostgresUpackWriteRepository } from "../../src/areas/upack/repository-postgres.js";
import type { UpackWriteService } from "../../src/areas/upack/write/upload-service.js";
import { notFound } from "../../src/domain/errors.js";
import type { ChangeCause } from "../../src/lifecycle/events.js";
import { versionSortKey } from "../../src/domain/upack-version-sort.js";
import { parseVersion } from "../../src/domain/upack-version.js";
import { createJobRunner, type JobRunner } from "../../src/jobs/runner.js";
import { createPostgresJobRunner } from "../../src/jobs/runner-postgres.js";
import { describeOnBothDatabases, present } from "../helpers/both-databases.js";
import { insertFeed } from "../helpers/seed-rows.js";

/**
 * Retention wired on either database (src/areas/retention/index.ts, metadata-db.ts): previews,
 * kept previews run as jobs, the runs' records and the scheduler give the same answers on SQLite
 * and on PostgreSQL (there with the cluster's job runner, runner-postgres.ts). The feeds, the
 * universal feeds' delete and the asset directories' delete are other areas': stand-ins here that
 * delete the rows (a version through the universal feed's repository, as its service does), and
 * record what they were asked.
 */

const DAY = 86_400_000;
const PUBLISHED = "2026-01-01T00:00:00.000Z";
const log = { warn: () => undefined, error: () => undefined };

const rule = (fields: Partial<RetentionRule>): RetentionRule => ({
  deletePrereleaseVersions: false,
  deletePackageIds: [],
  keepPackageIds: [],
  keepVersions: [],
  deleteVersions: [],
  deleteCached: false,
  sizeExclusive: false,
  keepIfActivelyConsumed: false,
  deleteLatestStable: false,
  ...fields,
});

const feedOf = (id: number, name: string, feedType: "universal" | "asset", rules: RetentionRule[]): Feed => ({
  id,
  name,
  alternateNames: [],
  feedType,
  storageKey: `key-${name}`,
  createdAt: PUBLISHED,
  modifiedAt: PUBLISHED,
  settings: { ...defaultSettings(), retentionRulesEnabled: true, retentionRules: rules },
});

describeOnBothDatabases("Retention services", (database) => {
  let now = new Date("2026-03-01T10:00:00.000Z");
  const clock = { now: () => now };
  const feeds: Feed[] = [];
  const deletedVersions: string[] = [];
  /** Versions that another node uploads again, with other bytes, right before the run deletes them. */
  const replacedBeforeDelete = new Set<string>();
  const deletedFiles: string[] = [];
  /** Files that another node writes again, with other bytes, right before the run deletes them. */
  const rewrittenBeforeDelete = new Set<string>();
  let jobs: JobRunner;
  let service: RetentionService;
  let scheduler: RetentionScheduler;

  const exec = (sql: string, params: readonly unknown[] = []) => database().exec(sql, params);
  const idOf = async (sql: string, params: readonly unknown[]) => Number((await exec(sql, params))[0]?.id);

  async function universalFeed(name: string, versions: readonly string[], rules: RetentionRule[]): Promise<Feed> {
    const feed = feedOf(await insertFeed(exec, name, PUBLISHED), name, "universal", rules);
    feeds.push(feed);
    const packageId = await idOf(
      "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', 'app', '', 'app') RETURNING id",
      [feed.id],
    );
    for (const version of versions) {
      await exec(
        `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
                                     file_list, is_virtual, is_cached, downloads, published_at, last_downloaded_at)
         VALUES (?, ?, ?, ?, '{}', ?, 'sha1', 100, '[]', 0, 0, 0, ?, NULL)`,
        [packageId, version, version, versionSortKey(present(parseVersion(version))), `blob ${version}`, PUBLISHED],
      );
    }
    return feed;
  }

  async function untilFinished(feed: Feed, runId: number) {
    for (let attempt = 0; attempt < 400; attempt++) {
      const { run, log: lines } = await service.getRun(feed.name, runId);
      if (run.finishedAt !== undefined && run.status !== "executing" && run.status !== "pending") {
        return { run, lines };
      }
      await sleep(25);
    }
    throw new Error(`retention run ${runId} did not finish`);
  }

  beforeAll(async () => {
    const db = database();
    const feedService = {
      async getFeed(name: string) {
        const feed = feeds.find((f) => f.name.toLowerCase() === name.toLowerCase());
        if (feed === undefined) throw notFound("FEED_NOT_FOUND", `no feed ${name}`);
        return feed;
      },
      listFeeds: async () => [...feeds],
    } as unknown as FeedService;
    const versions =
      db.kind === "sqlite"
        ? createUpackWriteRepository(db.sqlite, clock)
        : createPostgresUpackWriteRepository(db.postgres, clock);
    const write = {
      async deleteVersion(feedId: number, tail: string, cause: ChangeCause, options?: DeleteOptions) {
        deletedVersions.push(tail);
        const version = tail.split("/").at(-1) as string;
        if (replacedBeforeDelete.delete(version)) {
          await exec(
            `UPDATE upack_versions SET blob_sha256 = 'other bytes' WHERE version_key = ?
               AND package_id IN (SELECT id FROM upack_packages WHERE feed_id = ?)`,
            [version.toLowerCase(), feedId],
          );
        }
        const removed = await versions.deleteVersion(feedId, { group: "", name: "app", version }, cause, options);
        return removed !== undefined;
      },
    } as unknown as UpackWriteService;
    const files = db.kind === "sqlite" ? createAssetRepository(db.sqlite) : createPostgresAssetRepository(db.postgres);
    const assets = {
      async delete(directory: Feed, path: AssetPath, options: AssetDeleteOptions) {
        deletedFiles.push(path.key);
        if (rewrittenBeforeDelete.delete(path.key)) {
          await exec("UPDATE asset_items SET blob_sha256 = 'other bytes' WHERE feed_id = ? AND path_key = ?", [
            directory.id,
            path.key,
          ]);
        }
        return (await files.delete(directory.id, path, options)).deleted > 0;
      },
    } as unknown as AssetService;
    jobs =
      db.kind === "sqlite"
        ? createJobRunner({ db: db.sqlite, clock, concurrency: 2, log })
        : createPostgresJobRunner({ db: db.postgres, nodeId: "test", clock, concurrency: 2, log, pollMs: 50 });
    ({ service, scheduler } = createRetention({
      db: db.kind === "sqlite" ? db.sqlite : db.postgres,
      clock,
      feeds: feedService,
      write,
      assets,
      jobs,
      checkIntervalMs: 0,
      log,
    }));
    await jobs.start();
  });

  afterAll(async () => {
    scheduler?.stop();
    await jobs?.stop();
  });

  it("previews a universal feed, runs the kept preview as a job and records the run", async () => {
    const feed = await universalFeed("apps", ["1.0.0", "1.1.0", "2.0.0"], [rule({ keepVersionsCount: 1 })]);
    const preview = await service.preview("APPS", { keep: true });
    expect(preview).toMatchObject({ versions: 2, bytes: 200, examined: 3, evaluatedAt: now.toISOString() });
    expect(preview.items.map((item) => [item.version, item.rule, item.sha256])).toEqual([
      ["1.1.0", 1, "blob 1.1.0"],
      ["1.0.0", 1, "blob 1.0.0"],
    ]);
    const token = present(preview.token);

    const { run, jobId } = await service.requestRun("apps", { requestedBy: "alice", trigger: "manual", token });
    expect(run).toMatchObject({ feedId: feed.id, jobId, trigger: "manual", requestedBy: "alice" });
    expect(run.planned).toEqual(preview.items);
    const { run: finished, lines } = await untilFinished(feed, run.id);
    expect(finished).toMatchObject({ status: "succeeded", versionsDeleted: 2, bytesFreed: 200, versionsSkipped: 0 });
    expect(deletedVersions).toEqual(["app/1.1.0", "app/1.0.0"]);
    expect(lines.some((line) => line.endsWith("info: Deleted 2 version(s), 200 bytes freed."))).toBe(true);
    expect((await service.listRuns("apps", 10)).runs.map((r) => r.id)).toEqual([run.id]);
    expect((await service.preview("apps")).items).toEqual([]);

    // The same token again: its items are gone, so the run skips them and warns.
    const again = await service.requestRun("apps", { requestedBy: "alice", trigger: "manual", token });
    expect((await untilFinished(feed, again.run.id)).run).toMatchObject({
      status: "warned",
      versionsDeleted: 0,
      versionsSkipped: 2,
    });
    const unknown = service.requestRun("apps", { requestedBy: "alice", trigger: "manual", token: "nope" });
    await expect(unknown).rejects.toMatchObject({ code: "RETENTION_PREVIEW_UNKNOWN" });
    await expect(service.getRun("apps", 999_999)).rejects.toMatchObject({ code: "RETENTION_RUN_NOT_FOUND" });
  });

  it("skips a version uploaded again with other bytes between evaluation and delete: counted skipped, not deleted", async () => {
    const feed = await universalFeed("replaced", ["1.0.0", "2.0.0", "3.0.0"], [rule({ keepVersionsCount: 1 })]);
    replacedBeforeDelete.add("2.0.0");
    const { run } = await service.requestRun("replaced", { requestedBy: "alice", trigger: "manual" });
    const { run: finished, lines } = await untilFinished(feed, run.id);
    expect(finished).toMatchObject({ status: "warned", versionsDeleted: 1, bytesFreed: 100, versionsSkipped: 1 });
    expect(
      lines.some((line) => line.endsWith("warn: Skipped app 2.0.0: it was deleted or overwritten meanwhile.")),
    ).toBe(true);
    expect(lines.some((line) => line.endsWith("info: Deleted 1 version(s), 100 bytes freed; 1 skipped."))).toBe(true);
    expect(
      await exec(
        `SELECT v.version, v.blob_sha256 FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
          WHERE p.feed_id = ? ORDER BY v.sort_key`,
        [feed.id],
      ),
    ).toEqual([
      { version: "2.0.0", blob_sha256: "other bytes" },
      { version: "3.0.0", blob_sha256: "blob 3.0.0" },
    ]);
  });

  it("previews and runs an asset directory's retention", async () => {
    const feed = feedOf(await insertFeed(exec, "files", PUBLISHED, "asset"), "files", "asset", [
      rule({ deleteOlderThanDays: 30 }),
    ]);
    feeds.push(feed);
    const file = (path: string, at: string) =>
      exec(
        `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
                                  created_at, modified_at)
         VALUES (?, ?, ?, '', 0, ?, 10, 'md5', 'sha1', 'sha512', ?, ?)`,
        [feed.id, path, path.toLowerCase(), `blob ${path}`, at, at],
      );
    await file("Old.txt", PUBLISHED);
    await file("Rewritten.txt", PUBLISHED);
    await file("new.txt", new Date(now.getTime() - DAY).toISOString());
    const preview = await service.preview("files");
    expect(preview.items.map((item) => [item.path, item.bytes])).toEqual([
      ["Old.txt", 10],
      ["Rewritten.txt", 10],
    ]);
    // Another node writes one of them again between the evaluation and the delete: it stays.
    rewrittenBeforeDelete.add("rewritten.txt");
    const { run } = await service.requestRun("files", { requestedBy: "bob", trigger: "manual" });
    const { run: finished, lines } = await untilFinished(feed, run.id);
    expect(finished).toMatchObject({ status: "warned", versionsDeleted: 1, versionsSkipped: 1 });
    expect(
      lines.some((line) => line.endsWith("warn: Skipped Rewritten.txt: it was deleted or overwritten meanwhile.")),
    ).toBe(true);
    expect(deletedFiles).toEqual(["old.txt", "rewritten.txt"]);
    expect(
      await exec("SELECT path, blob_sha256 FROM asset_items WHERE feed_id = ? ORDER BY path_key", [feed.id]),
    ).toEqual([
      { path: "new.txt", blob_sha256: "blob new.txt" },
      { path: "Rewritten.txt", blob_sha256: "other bytes" },
    ]);
  });

  it("schedules runs: a schedule seen first fires from then on, once per firing, not over an active run", async () => {
    const feed = await universalFeed("nightly", ["1.0.0", "2.0.0"], [rule({ keepVersionsCount: 1 })]);
    feed.settings.retentionSchedule = "0 3 * * *";
    const runsOf = async () => (await service.listRuns("nightly", 10)).runs;
    await scheduler.check();
    expect(await runsOf()).toEqual([]);
    now = new Date(now.getTime() + DAY);
    await scheduler.check();
    const [run] = await runsOf();
    expect(run).toMatchObject({ trigger: "schedule", planned: undefined });
    await untilFinished(feed, present(run).id);
    await scheduler.check();
    expect(await runsOf()).toHaveLength(1);
    expect(deletedVersions.at(-1)).toBe("app/1.0.0");
  });
});
