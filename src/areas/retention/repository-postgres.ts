import type pg from "pg";
import { inSnapshot, type PostgresDb, readRows, writeRows } from "../../storage/postgres/database.js";
import { flushPostgresDownloadCounts } from "../upack/read/download-counts-postgres.js";
import {
  CANDIDATE_COLUMNS,
  type CandidateRow,
  DEPLOYED_COLUMNS,
  plannedOf,
  RUN_COLUMNS,
  type RetentionRepository,
  type RunRow,
  runValues,
  toCandidate,
  toRun,
} from "./repository.js";

/**
 * RetentionRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. Every
 * method is one statement, but `candidates`, whose two reads share one snapshot. Runs are jobs
 * claimed by one node (storage/postgres/job-claims.ts) and the scheduler runs on the leader only
 * (storage/postgres/leadership.ts), as on SQLite one process does both.
 */
export function createPostgresRetentionRepository(db: PostgresDb): RetentionRepository {
  const one = async <Row extends pg.QueryResultRow>(sql: string, params: readonly unknown[]) =>
    (await readRows<Row>(db, sql, params))[0];

  return {
    async candidates(feedId) {
      // This node's pending download counts; another node's are written within FLUSH_INTERVAL_MS.
      await flushPostgresDownloadCounts(db);
      // One snapshot for both reads, as SQLite's two reads in one tick see one state of the feed: a
      // deployment recorded in between cannot be missed by the versions read after it.
      const { deployments, versions } = await inSnapshot(db, async (client) => ({
        deployments: (
          await client.query<{ key: string; at: string }>(
            `SELECT ${DEPLOYED_COLUMNS}
               FROM package_deployments WHERE feed_id = $1 GROUP BY group_key, name_key, version_key`,
            [feedId],
          )
        ).rows,
        // upack_versions_retention covers it (SQLite's INDEXED BY: the planner chooses here).
        versions: (
          await client.query<CandidateRow>(
            `SELECT ${CANDIDATE_COLUMNS}
               FROM upack_packages p JOIN upack_versions v ON v.package_id = p.id
              WHERE p.feed_id = $1`,
            [feedId],
          )
        ).rows,
      }));
      const deployed = new Map(deployments.map((row) => [row.key, row.at]));
      return versions.map((row) => toCandidate(row, deployed));
    },
    async savePlan(token, feedId, createdAt, items) {
      await writeRows(db, "INSERT INTO retention_plans (token, feed_id, created_at, items) VALUES ($1, $2, $3, $4)", [
        token,
        feedId,
        createdAt,
        JSON.stringify(items),
      ]);
    },
    async findPlan(token, feedId, notBefore) {
      const row = await one<{ items: string }>(
        "SELECT items FROM retention_plans WHERE token = $1 AND feed_id = $2 AND created_at >= $3",
        [token, feedId, notBefore],
      );
      return plannedOf(row?.items);
    },
    async prunePlans(before) {
      await writeRows(db, "DELETE FROM retention_plans WHERE created_at < $1", [before]);
    },
    async addRun(run) {
      const inserted = await writeRows<{ id: number }>(
        db,
        `INSERT INTO retention_runs (feed_id, trigger, requested_by, created_at, planned) VALUES ($1, $2, $3, $4, $5)
         RETURNING id`,
        runValues(run),
      );
      return (inserted.rows[0] as { id: number }).id;
    },
    async setRunJob(runId, jobId) {
      await writeRows(db, "UPDATE retention_runs SET job_id = $1 WHERE id = $2", [jobId, runId]);
    },
    async findRun(runId) {
      const row = await one<RunRow>(
        `SELECT ${RUN_COLUMNS} FROM retention_runs r LEFT JOIN jobs j ON j.id = r.job_id WHERE r.id = $1`,
        [runId],
      );
      return row && toRun(row);
    },
    async finishRun(runId, at, { deleted, bytes, skipped }) {
      await writeRows(
        db,
        `UPDATE retention_runs SET finished_at = $1, versions_deleted = $2, bytes_freed = $3, versions_skipped = $4
          WHERE id = $5`,
        [at, deleted, bytes, skipped, runId],
      );
    },
    async listRuns(feedId, limit) {
      const rows = await readRows<RunRow>(
        db,
        `SELECT ${RUN_COLUMNS} FROM retention_runs r LEFT JOIN jobs j ON j.id = r.job_id
          WHERE r.feed_id = $1 ORDER BY r.id DESC LIMIT $2`,
        // SQLite reads a negative LIMIT as none; PostgreSQL refuses one, and reads NULL as none.
        [feedId, limit < 0 ? null : limit],
      );
      return rows.map(toRun);
    },
    async hasActiveRun(feedId) {
      const row = await one<{ active: number }>(
        `SELECT 1 AS active FROM retention_runs r JOIN jobs j ON j.id = r.job_id
          WHERE r.feed_id = $1 AND r.finished_at IS NULL AND j.status IN ('pending', 'executing') LIMIT 1`,
        [feedId],
      );
      return row !== undefined;
    },
    async scheduleState(feedId) {
      return one<{ schedule: string; since: string }>(
        "SELECT schedule, since FROM retention_schedule_state WHERE feed_id = $1",
        [feedId],
      );
    },
    async setScheduleState(feedId, schedule, since) {
      await writeRows(
        db,
        `INSERT INTO retention_schedule_state (feed_id, schedule, since) VALUES ($1, $2, $3)
         ON CONFLICT (feed_id) DO UPDATE SET schedule = excluded.schedule, since = excluded.since`,
        [feedId, schedule, since],
      );
    },
  };
}
