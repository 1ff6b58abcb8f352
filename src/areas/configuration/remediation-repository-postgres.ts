import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import {
  OPEN_SQL,
  type OpenRow,
  type RecordRow,
  type RemediationRepository,
  toOpen,
  toRecord,
} from "./remediation-repository.js";

/** OPEN_SQL's placeholders in PostgreSQL's form. */
const OPEN_ALL = `${OPEN_SQL} ORDER BY at, t.job_id`;
const OPEN_OF = `${OPEN_SQL} AND t.server_id = $1 ORDER BY at, t.job_id`;

/**
 * RemediationRepository on PostgreSQL (cluster mode): the same statements as on SQLite. record()
 * is one transaction (the job and its servers, a server given twice kept once by the primary key,
 * as INSERT OR IGNORE does); nothing here reads before it writes, so nodes need no lock.
 */
export function createPostgresRemediationRepository(db: PostgresDb): RemediationRepository {
  return {
    async record(remediation, targets) {
      await inTransaction(db, async (client) => {
        await client.query(
          `INSERT INTO config_remediations (job_id, name, entity_type, entity_name, simulate, created_at)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [
            remediation.jobId,
            remediation.name ?? null,
            remediation.entityType,
            remediation.entityName,
            remediation.simulate ? 1 : 0,
            remediation.createdAt,
          ],
        );
        if (targets.length === 0) return;
        // In the order given, so that the first of a server's targets is the one kept (as on SQLite).
        await client.query(
          `INSERT INTO config_remediation_targets (job_id, server_id, role_id)
           SELECT $1::bigint, t.server_id, t.role_id
             FROM unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS t(server_id, role_id, position)
            ORDER BY t.position
           ON CONFLICT (job_id, server_id) DO NOTHING`,
          [remediation.jobId, targets.map((t) => t.serverId), targets.map((t) => t.roleId ?? null)],
        );
      });
    },
    async find(jobId) {
      const [row] = await readRows<RecordRow>(db, "SELECT * FROM config_remediations WHERE job_id = $1", [jobId]);
      return row && toRecord(row);
    },
    async open(serverId) {
      const rows =
        serverId === undefined
          ? await readRows<OpenRow>(db, OPEN_ALL)
          : await readRows<OpenRow>(db, OPEN_OF, [serverId]);
      return rows.map(toOpen);
    },
  };
}
