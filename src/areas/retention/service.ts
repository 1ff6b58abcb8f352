import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Clock } from "../../domain/clock.js";
import { invalid, notFound } from "../../domain/errors.js";
import type { Job, JobContext, JobOutcome, JobRunner } from "../../jobs/runner.js";
import type { AssetService } from "../endpoints/index.js";
import type { Feed, FeedService } from "../management/index.js";
import type { UpackWriteService } from "../upack/write/upload-service.js";
import type { AssetRetentionRows } from "./asset-candidates.js";
import { isRetainedFeedType, type RetentionKind, retentionKindOf } from "./kinds.js";
import type { PlannedDeletion, RetentionRepository, RetentionRun, RunTrigger } from "./repository.js";

/**
 * Retention use cases (issue 17 section 1), for universal feeds (their package versions) and asset
 * directories (their files; kinds.ts says what differs): a preview lists what the feed's rules
 * delete now and why; a run, on the persistent job runner, deletes that list. A run asked with a
 * preview's token deletes exactly the items of that preview, no more: each one is deleted only if
 * the rules still select it and its bytes are unchanged, otherwise it is skipped and reported. Each
 * item is deleted by its feed's own delete (one short transaction, its blob given back to GC; for
 * a version, a package.purged event), with a rest between two as long as the delete took, so that
 * uploads never wait behind a run.
 */

export const RETENTION_JOB_KIND = "retention.run";
/** How long a preview's token can be run. */
export const PLAN_LIFETIME_MS = 3_600_000;
/**
 * After each delete the run rests as long as the delete took: a delete's commit waits for its fsync
 * on the event loop, and back to back they left uploads a turn only between two (bench/retention.ts).
 */
const REST_RATIO = 1;

export interface RetentionPreview {
  readonly feed: Feed;
  readonly items: PlannedDeletion[];
  /** Items a run would delete: versions, or files of an asset directory. */
  readonly versions: number;
  readonly bytes: number;
  /** Versions (asset directory: files) in the feed when the preview was made. */
  readonly examined: number;
  readonly evaluatedAt: string;
  /** Present when the preview was kept: a run with it deletes exactly `items`. */
  readonly token?: string;
}

export interface RunRequest {
  readonly requestedBy: string;
  readonly trigger: RunTrigger;
  /** A kept preview's token: the run deletes exactly its items. */
  readonly token?: string;
}

export interface RetentionService {
  preview(feedName: string, options?: { keep?: boolean }): Promise<RetentionPreview>;
  /** Enqueues a run; answers the run and its job. */
  requestRun(feedName: string, request: RunRequest): Promise<{ run: RetentionRun; jobId: number }>;
  /** Like requestRun for a feed already resolved (the scheduler). */
  requestRunOf(feed: Feed, request: RunRequest): Promise<{ run: RetentionRun; jobId: number }>;
  listRuns(feedName: string, limit: number): Promise<{ feed: Feed; runs: RetentionRun[] }>;
  /** The run of this feed (not_found otherwise), with its job's log. */
  getRun(feedName: string, runId: number): Promise<{ feed: Feed; run: RetentionRun; log: string[] }>;
}

export interface RetentionServiceDeps {
  readonly repository: RetentionRepository;
  readonly feeds: FeedService;
  readonly write: UpackWriteService;
  /** The asset directories' service: retention deletes their files through its delete. */
  readonly assets: AssetService;
  readonly assetRows: AssetRetentionRows;
  readonly jobs: JobRunner;
  readonly clock: Clock;
}

export function createRetentionService(deps: RetentionServiceDeps): RetentionService {
  const { repository, feeds, jobs, clock } = deps;

  async function retainedFeed(name: string): Promise<Feed> {
    const feed = await feeds.getFeed(name);
    if (!isRetainedFeedType(feed.feedType)) {
      throw invalid(
        "RETENTION_NOT_APPLICABLE",
        `Retention applies to universal feeds and asset directories; ${feed.name} is a ${feed.feedType} feed.`,
      );
    }
    return feed;
  }

  const evaluate = (feed: Feed, now: Date) => retentionKindOf(feed, deps).evaluate(feed, now);

  async function requestRunOf(feed: Feed, request: RunRequest) {
    const now = clock.now();
    let planned: PlannedDeletion[] | undefined;
    if (request.token !== undefined) {
      planned = await repository.findPlan(
        request.token,
        feed.id,
        new Date(now.getTime() - PLAN_LIFETIME_MS).toISOString(),
      );
      if (planned === undefined) {
        throw invalid(
          "RETENTION_PREVIEW_UNKNOWN",
          "The preview token is unknown, expired (previews are kept for an hour) or of another feed; make a new preview.",
        );
      }
    }
    const runId = await repository.addRun({
      feedId: feed.id,
      trigger: request.trigger,
      requestedBy: request.requestedBy,
      createdAt: now.toISOString(),
      planned,
    });
    const jobId = await jobs.enqueue(RETENTION_JOB_KIND, { runId });
    await repository.setRunJob(runId, jobId);
    const run = await repository.findRun(runId);
    if (run === undefined) throw new Error(`retention run ${runId} vanished`);
    return { run, jobId };
  }

  return {
    async preview(feedName, options = {}) {
      const feed = await retainedFeed(feedName);
      const now = clock.now();
      const { items, examined } = await evaluate(feed, now);
      const preview = {
        feed,
        items,
        versions: items.length,
        bytes: items.reduce((sum, item) => sum + item.bytes, 0),
        examined,
        evaluatedAt: now.toISOString(),
      };
      if (!options.keep) return preview;
      const token = randomBytes(16).toString("hex");
      await repository.prunePlans(new Date(now.getTime() - PLAN_LIFETIME_MS).toISOString());
      await repository.savePlan(token, feed.id, now.toISOString(), items);
      return { ...preview, token };
    },

    async requestRun(feedName, request) {
      return requestRunOf(await retainedFeed(feedName), request);
    },
    requestRunOf,

    async listRuns(feedName, limit) {
      const feed = await retainedFeed(feedName);
      return { feed, runs: await repository.listRuns(feed.id, limit) };
    },

    async getRun(feedName, runId) {
      const feed = await retainedFeed(feedName);
      const run = await repository.findRun(runId);
      if (run === undefined || run.feedId !== feed.id) {
        throw notFound("RETENTION_RUN_NOT_FOUND", `There is no retention run ${runId} of feed ${feed.name}.`);
      }
      const lines = run.jobId === undefined ? [] : await jobs.readLog(run.jobId);
      return { feed, run, log: lines.map((line) => `${line.loggedAt.toISOString()} ${line.level}: ${line.message}`) };
    },
  };
}

/**
 * The job handler of runs: re-evaluates the rules, deletes (a planned run: the planned versions
 * the rules still select, unchanged), logs each deletion and skip, and records the summary.
 */
export function retentionJobHandler(deps: RetentionServiceDeps) {
  const { repository, feeds, clock } = deps;
  return async (job: Job, context: JobContext): Promise<JobOutcome> => {
    const { runId } = job.payload as { runId: number };
    const run = await repository.findRun(runId);
    if (run === undefined) {
      context.log("error", `Retention run ${runId} does not exist.`);
      return "failed";
    }
    const feed = (await feeds.listFeeds()).find((f) => f.id === run.feedId);
    if (feed === undefined) {
      context.log("error", "The feed was deleted before its retention run started.");
      return "failed";
    }
    const kind: RetentionKind = retentionKindOf(feed, deps);
    const label = (item: PlannedDeletion) => kind.label(item);
    const current = (await kind.evaluate(feed, clock.now())).items;
    const { work, skipped } = run.planned === undefined ? { work: current, skipped: [] } : replay(run.planned, current);
    context.log("info", `Retention of ${feed.name}: ${work.length} ${kind.noun}(s) to delete${describeTrigger(run)}.`);
    for (const { item, why } of skipped) context.log("warn", `Skipped ${label(item)}: ${why}.`);

    let deleted = 0;
    let bytes = 0;
    let lateSkips = 0;
    let lastDeleteMs = 0;
    for (const [index, item] of work.entries()) {
      if (context.signal.aborted) {
        context.log("error", `Stopped after ${deleted} deletion(s): the run was canceled.`);
        break;
      }
      if (index > 0) await sleep(Math.max(1, Math.ceil(lastDeleteMs * REST_RATIO)));
      const deleteStarted = performance.now();
      // The delete checks, in its own transaction, that the item still has the blob evaluated: a
      // check before it would be a round trip ahead on PostgreSQL, where another node can replace
      // the item in between.
      const removal = await settled(kind.remove(feed, item, run));
      if (removal.ok && !removal.deleted) {
        lateSkips++;
        context.log("warn", `Skipped ${label(item)}: it was deleted or overwritten meanwhile.`);
        continue;
      }
      if (!removal.ok) {
        const { error } = removal;
        lateSkips++;
        context.log("warn", `Skipped ${label(item)}: ${error instanceof Error ? error.message : String(error)}`);
        continue;
      }
      lastDeleteMs = performance.now() - deleteStarted;
      deleted++;
      bytes += item.bytes;
      context.log("info", `Deleted ${label(item)} (rule ${item.rule}: ${item.reason}; ${item.bytes} bytes).`);
    }
    const skippedTotal = skipped.length + lateSkips;
    await repository.finishRun(run.id, clock.now().toISOString(), { deleted, bytes, skipped: skippedTotal });
    context.log(
      "info",
      `Deleted ${deleted} ${kind.noun}(s), ${bytes} bytes freed` +
        (skippedTotal > 0 ? `; ${skippedTotal} skipped.` : "."),
    );
    if (context.signal.aborted) return "failed";
    return skippedTotal > 0 ? "warned" : "succeeded";
  };
}

/** A delete's outcome as a value: its failure skips the item rather than failing the run. */
function settled(removal: Promise<boolean>): Promise<{ ok: true; deleted: boolean } | { ok: false; error: unknown }> {
  return removal.then(
    (deleted) => ({ ok: true, deleted }) as const,
    (error: unknown) => ({ ok: false, error }) as const,
  );
}

/** A planned run: the planned versions the rules still select with the same bytes; the others are skipped. */
function replay(planned: readonly PlannedDeletion[], current: readonly PlannedDeletion[]) {
  const now = new Map(current.map((item) => [item.id, item]));
  const work: PlannedDeletion[] = [];
  const skipped: { item: PlannedDeletion; why: string }[] = [];
  for (const item of planned) {
    const still = now.get(item.id);
    if (still === undefined)
      skipped.push({
        item,
        why: "the rules no longer select it (gone, downloaded or deployed since the preview, or the rules changed)",
      });
    else if (still.sha256 !== item.sha256) skipped.push({ item, why: "it was overwritten since the preview" });
    else work.push(item);
  }
  return { work, skipped };
}

function describeTrigger(run: RetentionRun): string {
  const who = run.trigger === "schedule" ? "on schedule" : `asked by ${run.requestedBy}`;
  return run.planned === undefined ? ` (${who})` : ` (${who}, from a preview of ${run.planned.length})`;
}
