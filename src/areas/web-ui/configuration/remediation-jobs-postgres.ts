import { type PostgresDb, readRows } from "../../../storage/postgres/database.js";
import { RECENT_JOBS, type RemediationJobs, type RemediationJobSqlRow, SELECT, toJob } from "./remediation-jobs.js";

/**
 * The configuration pages' job lists on PostgreSQL (cluster mode): the same read-only statements
 * as on SQLite. SQLite's `= ? COLLATE NOCASE` on the entity's name is `lower(..) = lower(..)` here,
 * both sides in the "C" collation, which folds ASCII letters only, as NOCASE does.
 */
export function createPostgresRemediationJobs(db: PostgresDb): RemediationJobs {
  const jobs = async (sql: string, params: readonly unknown[]) =>
    (await readRows<RemediationJobSqlRow>(db, sql, params)).map(toJob);
  return {
    recent: () => jobs(`${SELECT} ORDER BY r.job_id DESC LIMIT $1`, [RECENT_JOBS]),
    recentOfServer: (serverId) =>
      jobs(
        `${SELECT} WHERE r.job_id IN (SELECT job_id FROM config_remediation_targets WHERE server_id = $1)
          ORDER BY r.job_id DESC LIMIT $2`,
        [serverId, RECENT_JOBS],
      ),
    recentOfEntity: (type, name) =>
      jobs(
        `${SELECT} WHERE r.entity_type = $1 AND lower(r.entity_name) = lower($2::text COLLATE "C") ORDER BY r.job_id DESC LIMIT $3`,
        [type, name, RECENT_JOBS],
      ),
    async get(id) {
      const [job] = await jobs(`${SELECT} WHERE r.job_id = $1`, [id]);
      return job;
    },
  };
}
