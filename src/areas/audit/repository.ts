import type { Db } from "../../storage/database.js";
import type { ActorKind, AuditEntry, AuditOutcome, AuditRecord } from "./record.js";

/** What a query keeps; every member optional. */
export interface AuditFilter {
  /** ISO instants: records at or after `from`, before `to`. */
  readonly from?: string;
  readonly to?: string;
  /** Exactly this user name or key display name. */
  readonly actor?: string;
  /** Actions starting with this text (`DELETE`, `PUT /upack/:feed/upload`, `cli users`). */
  readonly action?: string;
  /** Objects containing this text (`feed=main`, `app`). */
  readonly object?: string;
  /** Keyset paging: records older than this id (the previous page's `next`). */
  readonly after?: number;
}

interface AuditRow {
  id: number;
  at: string;
  actor_kind: string;
  actor_name: string;
  address: string;
  action: string;
  object: string;
  status: number;
  outcome: string;
  request_id: string;
}

/** The audit tables' SQL (migrations/0021-audit-log.sql): inserts, filtered pages, pruning. */
export interface AuditRepository {
  /** Inserts the entries in one transaction. */
  insert(entries: readonly AuditEntry[]): void;
  /** Newest first, at most `limit`. */
  page(filter: AuditFilter, limit: number): AuditRecord[];
  /** Moves the pruning cutoff to `before` and deletes every record older; answers how many went. */
  prune(before: string): number;
}

/** Highest code point: `action < prefix || MAX` keeps a prefix search on the index. */
const MAX_CHAR = "\u{10FFFF}";

export function createAuditRepository(db: Db): AuditRepository {
  const insertRow = db.prepare<[string, string, string, string, string, string, number, string, string]>(
    `INSERT INTO audit_records (at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insertAll = db.transaction((entries: readonly AuditEntry[]) => {
    for (const e of entries) {
      insertRow.run(e.at, e.actor.kind, e.actor.name, e.address, e.action, e.object, e.status, e.outcome, e.requestId);
    }
  });
  const moveCutoff = db.prepare<[string, string]>(
    "UPDATE audit_retention SET prune_before = ? WHERE id = 1 AND prune_before < ?",
  );
  const deleteBefore = db.prepare<[string]>("DELETE FROM audit_records WHERE at < ?");
  const pruneAll = db.transaction((before: string) => {
    moveCutoff.run(before, before);
    return deleteBefore.run(before).changes;
  });
  return {
    insert: (entries) => insertAll.immediate(entries),
    page(filter, limit) {
      const where: string[] = [];
      const args: (string | number)[] = [];
      const keep = (clause: string, ...values: (string | number)[]) => {
        where.push(clause);
        args.push(...values);
      };
      if (filter.from !== undefined) keep("at >= ?", filter.from);
      if (filter.to !== undefined) keep("at < ?", filter.to);
      if (filter.actor !== undefined) keep("actor_name = ?", filter.actor);
      if (filter.action !== undefined) keep("action >= ? AND action < ?", filter.action, filter.action + MAX_CHAR);
      if (filter.object !== undefined) keep("instr(object, ?) > 0", filter.object);
      if (filter.after !== undefined) keep("id < ?", filter.after);
      const sql =
        `SELECT * FROM audit_records${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}` +
        " ORDER BY id DESC LIMIT ?";
      return (db.prepare(sql).all(...args, limit) as AuditRow[]).map(recordOf);
    },
    prune: (before) => pruneAll.immediate(before),
  };
}

function recordOf(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    at: row.at,
    actor: { kind: row.actor_kind as ActorKind, name: row.actor_name },
    address: row.address,
    action: row.action,
    object: row.object,
    status: row.status,
    outcome: row.outcome as AuditOutcome,
    requestId: row.request_id,
  };
}
