import type { Database } from "better-sqlite3";
import type { CollectionStatus } from "../../configuration/collections-repository.js";

/**
 * A server's recent checks for its page (migration 0011 `config_collections`, read only): when,
 * how each ended, the counts it found, the error that stopped it, and the remediation job it was
 * part of. The checker keeps a server's last KEEP_COLLECTIONS; all of them are shown.
 */
export interface CheckRow {
  readonly id: number;
  readonly jobId: number | undefined;
  readonly status: CollectionStatus;
  readonly startedAt: string;
  readonly endedAt: string | undefined;
  readonly errorText: string | undefined;
  readonly items: number;
  readonly drifted: number;
  readonly unknown: number;
}

interface Row {
  id: number;
  job_id: number | null;
  status: CollectionStatus;
  started_at: string;
  ended_at: string | null;
  error_text: string | null;
  items: number;
  drifted: number;
  unknown: number;
}

export function createRecentChecks(db: Database): (serverId: number) => CheckRow[] {
  const query = db.prepare<[number], Row>(
    `SELECT id, job_id, status, started_at, ended_at, error_text, items, drifted, unknown
       FROM config_collections WHERE server_id = ? ORDER BY id DESC`,
  );
  return (serverId) =>
    query.all(serverId).map((row) => ({
      id: row.id,
      jobId: row.job_id ?? undefined,
      status: row.status,
      startedAt: row.started_at,
      endedAt: row.ended_at ?? undefined,
      errorText: row.error_text ?? undefined,
      items: row.items,
      drifted: row.drifted,
      unknown: row.unknown,
    }));
}
