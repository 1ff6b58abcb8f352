import type { Db } from "../../../storage/database.js";
import type { EntityType } from "../../configuration/remediation-repository.js";
import { type RemediationState, stateOfJob } from "../../configuration/remediation.js";
import type { JobStatus } from "../../../jobs/runner.js";

/**
 * Read-only SQL for the configuration pages' job lists: remediation jobs (migration 0011's
 * `config_remediations` joined with the job runner's `jobs`), newest first. Their state is the
 * word `remediate/status` answers (stateOfJob), so a page and the API never disagree.
 * Asynchronous (PostgreSQL in cluster mode: remediation-jobs-postgres.ts); on SQLite each method is
 * still one synchronous statement.
 */
export interface RemediationJobRow {
  readonly id: number;
  readonly name: string | undefined;
  readonly entityType: EntityType;
  readonly entityName: string;
  readonly simulate: boolean;
  readonly state: RemediationState;
  readonly createdAt: string;
  readonly notBefore: string | undefined;
  readonly startedAt: string | undefined;
  readonly endedAt: string | undefined;
}

export interface RemediationJobSqlRow {
  job_id: number;
  name: string | null;
  entity_type: EntityType;
  entity_name: string;
  simulate: number;
  created_at: string;
  status: JobStatus;
  not_before: string | null;
  started_at: string | null;
  ended_at: string | null;
  canceled_at: string | null;
}

export const SELECT = `SELECT r.job_id, r.name, r.entity_type, r.entity_name, r.simulate, r.created_at,
    j.status, j.not_before, j.started_at, j.ended_at, j.canceled_at
  FROM config_remediations r JOIN jobs j ON j.id = r.job_id`;

/** How many jobs a list shows: the recent ones (older logs stay reachable by their page). */
export const RECENT_JOBS = 20;

export interface RemediationJobs {
  recent(): Promise<RemediationJobRow[]>;
  /** Jobs that cover the server (any entity that included it). */
  recentOfServer(serverId: number): Promise<RemediationJobRow[]>;
  /** Jobs asked for this role or environment by name (case-insensitively). */
  recentOfEntity(type: EntityType, name: string): Promise<RemediationJobRow[]>;
  get(id: number): Promise<RemediationJobRow | undefined>;
}

type Row = RemediationJobSqlRow;

export const toJob = (row: Row): RemediationJobRow => ({
  id: row.job_id,
  name: row.name ?? undefined,
  entityType: row.entity_type,
  entityName: row.entity_name,
  simulate: row.simulate === 1,
  state: stateOfJob({
    status: row.status,
    canceledAt: row.canceled_at === null ? undefined : new Date(row.canceled_at),
    startedAt: row.started_at === null ? undefined : new Date(row.started_at),
  }),
  createdAt: row.created_at,
  notBefore: row.not_before ?? undefined,
  startedAt: row.started_at ?? undefined,
  endedAt: row.ended_at ?? undefined,
});

export function createRemediationJobs(db: Db): RemediationJobs {
  const q = {
    recent: db.prepare<[number], Row>(`${SELECT} ORDER BY r.job_id DESC LIMIT ?`),
    ofServer: db.prepare<[number, number], Row>(
      `${SELECT} WHERE r.job_id IN (SELECT job_id FROM config_remediation_targets WHERE server_id = ?)
        ORDER BY r.job_id DESC LIMIT ?`,
    ),
    ofEntity: db.prepare<[string, string, number], Row>(
      `${SELECT} WHERE r.entity_type = ? AND r.entity_name = ? COLLATE NOCASE ORDER BY r.job_id DESC LIMIT ?`,
    ),
    one: db.prepare<[number], Row>(`${SELECT} WHERE r.job_id = ?`),
  };
  return {
    recent: async () => q.recent.all(RECENT_JOBS).map(toJob),
    recentOfServer: async (serverId) => q.ofServer.all(serverId, RECENT_JOBS).map(toJob),
    recentOfEntity: async (type, name) => q.ofEntity.all(type, name, RECENT_JOBS).map(toJob),
    get: async (id) => {
      const row = q.one.get(id);
      return row && toJob(row);
    },
  };
}
