import type { Db } from "../../storage/database.js";

/**
 * The SQL of remediation jobs (migration 0011 `config_remediations`, `config_remediation_targets`,
 * joined with 0009's `jobs`): what a job was asked for, the servers it covers, and which jobs are
 * still to run or running for a server (the status's `pendingRemediation`, `remediationDate`,
 * `remediationId`, and "not again while one is pending" for automatic remediation). Asynchronous
 * (PostgreSQL in cluster mode: remediation-repository-postgres.ts); on SQLite each method is still
 * one synchronous statement or transaction.
 */
export type EntityType = "server" | "role" | "environment";

export interface RemediationTarget {
  readonly serverId: number;
  /** A role target: only that role's items; undefined: all the server's items. */
  readonly roleId: number | undefined;
}

export interface RemediationRecord {
  readonly jobId: number;
  readonly name: string | undefined;
  readonly entityType: EntityType;
  readonly entityName: string;
  readonly simulate: boolean;
  readonly createdAt: string;
}

/** A remediation job not ended yet, per server it covers. */
export interface OpenRemediation {
  readonly jobId: number;
  readonly serverId: number;
  readonly roleId: number | undefined;
  readonly status: "pending" | "executing";
  /** Its start (not_before) or, without one, when it was created (ISO). */
  readonly at: string;
}

export interface RemediationRepository {
  /** Records the job and its servers in one transaction (a target given twice is kept once). */
  record(remediation: RemediationRecord, targets: readonly RemediationTarget[]): Promise<void>;
  find(jobId: number): Promise<RemediationRecord | undefined>;
  /** Pending and executing remediation jobs of every server (or of one), earliest first. */
  open(serverId?: number): Promise<OpenRemediation[]>;
}

export interface OpenRow {
  job_id: number;
  server_id: number;
  role_id: number | null;
  status: "pending" | "executing";
  at: string;
}

export interface RecordRow {
  job_id: number;
  name: string | null;
  entity_type: EntityType;
  entity_name: string;
  simulate: number;
  created_at: string;
}

/** The open jobs' statement, the same on both databases (the status reads it too). */
export const OPEN_SQL = `SELECT t.job_id, t.server_id, t.role_id, j.status, coalesce(j.not_before, j.created_at) AS at
  FROM jobs j JOIN config_remediation_targets t ON t.job_id = j.id
  WHERE j.status IN ('pending', 'executing')`;

export function createRemediationRepository(db: Db): RemediationRepository {
  const q = {
    insert: db.prepare<[number, string | null, EntityType, string, number, string]>(
      `INSERT INTO config_remediations (job_id, name, entity_type, entity_name, simulate, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    target: db.prepare<[number, number, number | null]>(
      "INSERT OR IGNORE INTO config_remediation_targets (job_id, server_id, role_id) VALUES (?, ?, ?)",
    ),
    find: db.prepare<[number], RecordRow>("SELECT * FROM config_remediations WHERE job_id = ?"),
    openAll: db.prepare<[], OpenRow>(`${OPEN_SQL} ORDER BY at, t.job_id`),
    openOf: db.prepare<[number], OpenRow>(`${OPEN_SQL} AND t.server_id = ? ORDER BY at, t.job_id`),
  };
  const record = db.transaction((remediation: RemediationRecord, targets: readonly RemediationTarget[]) => {
    q.insert.run(
      remediation.jobId,
      remediation.name ?? null,
      remediation.entityType,
      remediation.entityName,
      remediation.simulate ? 1 : 0,
      remediation.createdAt,
    );
    for (const target of targets) q.target.run(remediation.jobId, target.serverId, target.roleId ?? null);
  });
  return {
    async record(remediation, targets) {
      record(remediation, targets);
    },
    async find(jobId) {
      const row = q.find.get(jobId);
      return row && toRecord(row);
    },
    async open(serverId) {
      return (serverId === undefined ? q.openAll.all() : q.openOf.all(serverId)).map(toOpen);
    },
  };
}

export const toOpen = (row: OpenRow): OpenRemediation => ({
  jobId: row.job_id,
  serverId: row.server_id,
  roleId: row.role_id ?? undefined,
  status: row.status,
  at: row.at,
});

export const toRecord = (row: RecordRow): RemediationRecord => ({
  jobId: row.job_id,
  name: row.name ?? undefined,
  entityType: row.entity_type,
  entityName: row.entity_name,
  simulate: row.simulate === 1,
  createdAt: row.created_at,
});
