import type pg from "pg";

/**
 * How the nodes of a cluster share the `jobs` table (migration 0004-job-leases.sql): each job is
 * claimed by exactly one node, which holds a lease on it while it runs; a job whose lease lapses
 * is failed by the restart rule and never run again, as on SQLite (jobs/runner.ts), since a job
 * that may have half-happened (a deployment) must not silently happen twice.
 *
 * The leases run on the database's clock; the job's own times (started_at, ended_at) are the
 * caller's, as SQLite's runner writes them.
 */
export interface JobClaims {
  /**
   * Takes the oldest due pending job whose kind is not in `excludedKinds` (kinds at their limit),
   * or undefined. Concurrent nodes skip each other's rows (FOR UPDATE SKIP LOCKED): no job is taken
   * twice, and no node waits for another's claim.
   */
  claimNext(at: string, excludedKinds?: readonly string[]): Promise<ClaimedJob | undefined>;
  /** Extends the leases of the given jobs this node holds; returns the ids it still holds. */
  renew(jobIds: readonly number[]): Promise<number[]>;
  /**
   * Records the job's end, if this node still holds it: undefined when its lease lapsed and the
   * restart rule failed it meanwhile (a node back from a long pause must not overwrite that).
   */
  finish(jobId: number, outcome: "succeeded" | "warned" | "failed", at: string): Promise<ClaimedJob | undefined>;
  /** The restart rule: every executing job whose lease lapsed ends failed, with `message` in its log. */
  failLapsed(at: string, message: string): Promise<number[]>;
}

/** A row of `jobs`, as the SQLite runner reads it. */
export interface ClaimedJob {
  readonly id: number;
  readonly kind: string;
  readonly payload: string;
  readonly status: string;
  readonly created_at: string;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly canceled_at: string | null;
  readonly not_before: string | null;
  readonly attempts: number;
}

export interface JobClaimsOptions {
  readonly nodeId: string;
  /** How long a claim or renewal holds a job; renew well within it (a third is usual). */
  readonly leaseMs: number;
}

/** One statement each: the claim, the lease and their visibility to other nodes commit together. */
const CLAIM = `
  WITH next AS (
    SELECT id FROM jobs
     WHERE status = 'pending' AND (not_before IS NULL OR not_before <= $1) AND NOT (kind = ANY ($2::text[]))
     ORDER BY id
     LIMIT 1
     FOR UPDATE SKIP LOCKED
  ), claimed AS (
    UPDATE jobs SET status = 'executing', started_at = $1, attempts = attempts + 1
      FROM next WHERE jobs.id = next.id
    RETURNING jobs.*
  ), lease AS (
    INSERT INTO job_leases (job_id, node_id, lease_until)
    SELECT id, $3, now() + $4 * interval '1 millisecond' FROM claimed
  )
  SELECT * FROM claimed`;

const RENEW = `
  UPDATE job_leases SET lease_until = now() + $3 * interval '1 millisecond'
   WHERE node_id = $1 AND job_id = ANY ($2::bigint[])
  RETURNING job_id`;

const FINISH = `
  WITH mine AS (
    DELETE FROM job_leases WHERE job_id = $1 AND node_id = $2 RETURNING job_id
  )
  UPDATE jobs SET status = $3, ended_at = $4
    FROM mine WHERE jobs.id = mine.job_id AND jobs.status = 'executing'
  RETURNING jobs.*`;

/** SKIP LOCKED: a job another node is finishing right now is not waited for; it is not lapsed anyway. */
const FAIL_LAPSED = `
  WITH lapsed AS (
    SELECT job_id FROM job_leases WHERE lease_until < now() FOR UPDATE SKIP LOCKED
  ), gone AS (
    DELETE FROM job_leases USING lapsed WHERE job_leases.job_id = lapsed.job_id RETURNING job_leases.job_id
  ), failed AS (
    UPDATE jobs SET status = 'failed', ended_at = $1
      FROM gone WHERE jobs.id = gone.job_id AND jobs.status = 'executing'
    RETURNING jobs.id
  ), logged AS (
    INSERT INTO job_log (job_id, level, message, logged_at) SELECT id, 'error', $2, $1 FROM failed
  )
  SELECT id FROM failed ORDER BY id`;

export function createJobClaims(pool: pg.Pool, options: JobClaimsOptions): JobClaims {
  const { nodeId, leaseMs } = options;
  return {
    async claimNext(at, excludedKinds = []) {
      const result = await pool.query<ClaimedJob>(CLAIM, [at, excludedKinds, nodeId, leaseMs]);
      return result.rows[0];
    },
    async renew(jobIds) {
      if (jobIds.length === 0) return [];
      const result = await pool.query<{ job_id: number }>(RENEW, [nodeId, jobIds, leaseMs]);
      return result.rows.map((row) => row.job_id);
    },
    async finish(jobId, outcome, at) {
      const result = await pool.query<ClaimedJob>(FINISH, [jobId, nodeId, outcome, at]);
      return result.rows[0];
    },
    async failLapsed(at, message) {
      const result = await pool.query<{ id: number }>(FAIL_LAPSED, [at, message]);
      return result.rows.map((row) => row.id);
    },
  };
}
