import type { Db } from "../../storage/database.js";
import { flushDownloadCounts } from "../upack/download/counts.js";
import { isPrerelease, parseVersion } from "../../domain/upack-version.js";
import type { RetentionCandidate } from "./evaluate.js";

/**
 * SQL of retention (migrations/0018-retention.sql): the rows a preview evaluates, kept previews
 * ("plans"), runs and the scheduler's memory. Deletions themselves go through the universal
 * feed's write service, never through here, which checks that a version still has the blob
 * evaluated as it deletes it; an asset directory's rows are asset-candidates.ts.
 */

/**
 * One planned deletion, as a preview answers it and a run replays it: a universal feed's package
 * version, or an asset directory's file (then `path` is set, `name` repeats it and `group` and
 * `version` are empty; `id` is the file's, `publishedAt` when it was last written).
 */
export interface PlannedDeletion {
  readonly id: number;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  /** Asset directories only: the file's path. */
  readonly path?: string;
  readonly sha256: string;
  /** The rule's position in the feed's retentionRules, from 1. */
  readonly rule: number;
  readonly reason: string;
  readonly bytes: number;
  readonly ageDays: number;
  readonly publishedAt: string;
  readonly lastDownloadedAt: string | undefined;
}

export type RunTrigger = "manual" | "schedule";

export interface RetentionRun {
  readonly id: number;
  readonly feedId: number;
  readonly jobId: number | undefined;
  readonly trigger: RunTrigger;
  readonly requestedBy: string;
  readonly createdAt: string;
  readonly planned: PlannedDeletion[] | undefined;
  readonly finishedAt: string | undefined;
  readonly versionsDeleted: number;
  readonly bytesFreed: number;
  readonly versionsSkipped: number;
  /** The job's status (jobs.status); undefined once the job row is gone. */
  readonly status: string | undefined;
}

export interface NewRun {
  readonly feedId: number;
  readonly trigger: RunTrigger;
  readonly requestedBy: string;
  readonly createdAt: string;
  readonly planned: readonly PlannedDeletion[] | undefined;
}

export interface RetentionRepository {
  /** Every version of the feed with what the rules look at (download counts written first). */
  candidates(feedId: number): Promise<RetentionCandidate[]>;
  savePlan(token: string, feedId: number, createdAt: string, items: readonly PlannedDeletion[]): Promise<void>;
  findPlan(token: string, feedId: number, notBefore: string): Promise<PlannedDeletion[] | undefined>;
  prunePlans(before: string): Promise<void>;
  /** Stores a run (its job is enqueued next, and named with setRunJob); returns its id. */
  addRun(run: NewRun): Promise<number>;
  setRunJob(runId: number, jobId: number): Promise<void>;
  findRun(runId: number): Promise<RetentionRun | undefined>;
  finishRun(runId: number, at: string, totals: { deleted: number; bytes: number; skipped: number }): Promise<void>;
  listRuns(feedId: number, limit: number): Promise<RetentionRun[]>;
  /** Whether a run of the feed waits or executes (the scheduler adds no second one). */
  hasActiveRun(feedId: number): Promise<boolean>;
  scheduleState(feedId: number): Promise<{ schedule: string; since: string } | undefined>;
  setScheduleState(feedId: number, schedule: string, since: string): Promise<void>;
}

/** A version as `candidates` reads it (both databases). */
export interface CandidateRow {
  id: number;
  package_id: number;
  group_name: string;
  name: string;
  group_key: string;
  name_key: string;
  version: string;
  sort_key: string;
  size: number;
  published_at: string;
  last_downloaded_at: string | null;
  downloads: number;
  is_cached: number;
  blob_sha256: string;
}

/** A run as findRun and listRuns read it (both databases). */
export interface RunRow {
  id: number;
  feed_id: number;
  job_id: number | null;
  trigger: RunTrigger;
  requested_by: string;
  created_at: string;
  planned: string | null;
  finished_at: string | null;
  versions_deleted: number;
  bytes_freed: number;
  versions_skipped: number;
  status: string | null;
}

/** The columns of RunRow, from `retention_runs r LEFT JOIN jobs j` (both databases). */
export const RUN_COLUMNS = `r.id, r.feed_id, r.job_id, r.trigger, r.requested_by, r.created_at, r.planned, r.finished_at,
  r.versions_deleted, r.bytes_freed, r.versions_skipped, j.status`;

/** The columns of CandidateRow, from `upack_packages p JOIN upack_versions v` (both databases). */
export const CANDIDATE_COLUMNS = `v.id, v.package_id, p.group_name, p.name, p.group_key, p.name_key, v.version, v.sort_key, v.size,
            v.published_at, v.last_downloaded_at, v.downloads, v.is_cached, v.blob_sha256`;

/** Each deployed version of a feed by `group_key/name_key/version_key`, with its latest deployment (both databases). */
export const DEPLOYED_COLUMNS = "group_key || '/' || name_key || '/' || version_key AS key, max(deployed_at) AS at";

type RunValues = [number, string, string, string, string | null];

/** The columns of a run's INSERT (feed_id, trigger, requested_by, created_at, planned), in order (both databases). */
export function runValues(run: NewRun): RunValues {
  return [
    run.feedId,
    run.trigger,
    run.requestedBy,
    run.createdAt,
    run.planned === undefined ? null : JSON.stringify(run.planned),
  ];
}

/** A kept preview's items (retention_plans.items), or undefined when there is none (both databases). */
export function plannedOf(items: string | undefined): PlannedDeletion[] | undefined {
  return items === undefined ? undefined : (JSON.parse(items) as PlannedDeletion[]);
}

export function createRetentionRepository(db: Db): RetentionRepository {
  // The covering index upack_versions_retention answers this without reading the wide rows.
  const versions = db.prepare<[number], CandidateRow>(
    `SELECT ${CANDIDATE_COLUMNS}
       FROM upack_packages p JOIN upack_versions v INDEXED BY upack_versions_retention ON v.package_id = p.id
      WHERE p.feed_id = ?`,
  );
  const deployments = db.prepare<[number], { key: string; at: string }>(
    `SELECT ${DEPLOYED_COLUMNS}
       FROM package_deployments WHERE feed_id = ? GROUP BY group_key, name_key, version_key`,
  );
  const insertPlan = db.prepare<[string, number, string, string]>(
    "INSERT INTO retention_plans (token, feed_id, created_at, items) VALUES (?, ?, ?, ?)",
  );
  const planOf = db
    .prepare<[string, number, string], string>(
      "SELECT items FROM retention_plans WHERE token = ? AND feed_id = ? AND created_at >= ?",
    )
    .pluck();
  const prune = db.prepare<[string]>("DELETE FROM retention_plans WHERE created_at < ?");
  const insertRun = db.prepare<RunValues, { id: number }>(
    `INSERT INTO retention_runs (feed_id, trigger, requested_by, created_at, planned) VALUES (?, ?, ?, ?, ?)
     RETURNING id`,
  );
  const updateJob = db.prepare<[number, number]>("UPDATE retention_runs SET job_id = ? WHERE id = ?");
  const runById = db.prepare<[number], RunRow>(
    `SELECT ${RUN_COLUMNS} FROM retention_runs r LEFT JOIN jobs j ON j.id = r.job_id WHERE r.id = ?`,
  );
  const finish = db.prepare<[string, number, number, number, number]>(
    `UPDATE retention_runs SET finished_at = ?, versions_deleted = ?, bytes_freed = ?, versions_skipped = ?
      WHERE id = ?`,
  );
  const runsOf = db.prepare<[number, number], RunRow>(
    `SELECT ${RUN_COLUMNS} FROM retention_runs r LEFT JOIN jobs j ON j.id = r.job_id
      WHERE r.feed_id = ? ORDER BY r.id DESC LIMIT ?`,
  );
  const active = db
    .prepare<[number], number>(
      `SELECT 1 FROM retention_runs r JOIN jobs j ON j.id = r.job_id
        WHERE r.feed_id = ? AND r.finished_at IS NULL AND j.status IN ('pending', 'executing') LIMIT 1`,
    )
    .pluck();
  const stateOf = db.prepare<[number], { schedule: string; since: string }>(
    "SELECT schedule, since FROM retention_schedule_state WHERE feed_id = ?",
  );
  const upsertState = db.prepare<[number, string, string]>(
    `INSERT INTO retention_schedule_state (feed_id, schedule, since) VALUES (?, ?, ?)
     ON CONFLICT (feed_id) DO UPDATE SET schedule = excluded.schedule, since = excluded.since`,
  );

  return {
    async candidates(feedId) {
      flushDownloadCounts(db);
      const deployed = new Map(deployments.all(feedId).map((row) => [row.key, row.at]));
      return versions.all(feedId).map((row) => toCandidate(row, deployed));
    },
    async savePlan(token, feedId, createdAt, items) {
      insertPlan.run(token, feedId, createdAt, JSON.stringify(items));
    },
    async findPlan(token, feedId, notBefore) {
      return plannedOf(planOf.get(token, feedId, notBefore));
    },
    async prunePlans(before) {
      prune.run(before);
    },
    async addRun(run) {
      return (insertRun.get(...runValues(run)) as { id: number }).id;
    },
    async setRunJob(runId, jobId) {
      updateJob.run(jobId, runId);
    },
    async findRun(runId) {
      const row = runById.get(runId);
      return row && toRun(row);
    },
    async finishRun(runId, at, { deleted, bytes, skipped }) {
      finish.run(at, deleted, bytes, skipped, runId);
    },
    listRuns: async (feedId, limit) => runsOf.all(feedId, limit).map(toRun),
    hasActiveRun: async (feedId) => active.get(feedId) !== undefined,
    scheduleState: async (feedId) => stateOf.get(feedId),
    async setScheduleState(feedId, schedule, since) {
      upsertState.run(feedId, schedule, since);
    },
  };
}

/** A version as the rules see it; `deployed`: the feed's deployments by DEPLOYED_COLUMNS' key (both databases). */
export function toCandidate(row: CandidateRow, deployed: ReadonlyMap<string, string>): RetentionCandidate {
  const parsed = parseVersion(row.version);
  return {
    id: row.id,
    packageId: row.package_id,
    group: row.group_name,
    name: row.name,
    version: row.version,
    sortKey: row.sort_key,
    prerelease: parsed !== undefined && isPrerelease(parsed),
    bytes: row.size,
    publishedAt: row.published_at,
    lastDownloadedAt: row.last_downloaded_at ?? undefined,
    downloads: row.downloads,
    cached: row.is_cached === 1,
    lastDeployedAt: deployed.get(`${row.group_key}/${row.name_key}/${row.version.toLowerCase()}`),
    sha256: row.blob_sha256,
  };
}

/** A run as the service shows it (both databases). */
export function toRun(row: RunRow): RetentionRun {
  return {
    id: row.id,
    feedId: row.feed_id,
    jobId: row.job_id ?? undefined,
    trigger: row.trigger,
    requestedBy: row.requested_by,
    createdAt: row.created_at,
    planned: row.planned === null ? undefined : (JSON.parse(row.planned) as PlannedDeletion[]),
    finishedAt: row.finished_at ?? undefined,
    versionsDeleted: row.versions_deleted,
    bytesFreed: row.bytes_freed,
    versionsSkipped: row.versions_skipped,
    status: row.status ?? undefined,
  };
}
