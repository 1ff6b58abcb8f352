import type { Db } from "../../storage/database.js";
import { writeUnsynced } from "../../storage/unsynced-writes.js";
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

/** A row of audit_records (both databases). */
export interface AuditRow {
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
  insert(entries: readonly AuditEntry[]): Promise<void>;
  /** Newest first, at most `limit`. */
  page(filter: AuditFilter, limit: number): Promise<AuditRecord[]>;
  /** Moves the pruning cutoff to `before` and deletes every record older; answers how many went. */
  prune(before: string): Promise<number>;
}

export interface AuditRepositoryOptions {
  /**
   * Inserts and pruning are bookkeeping that no cache reads and that may be lost to a power cut
   * (storage/unsynced-writes.ts): the server's audit log (audit-log.ts), whose records are
   * written after the response. Without it (the CLI's one record) they are ordinary writes.
   */
  readonly unsynced?: boolean;
}

/** Highest code point: `action < prefix || MAX` keeps a prefix search on the index. */
export const MAX_CHAR = "\u{10FFFF}";

/**
 * The SQLite repository. Its methods are asynchronous for the interface's sake (PostgreSQL cannot
 * answer synchronously); each runs its statements and transaction synchronously, at once, so an
 * insert or a prune is stored before the method returns its promise.
 */
export function createAuditRepository(db: Db, options: AuditRepositoryOptions = {}): AuditRepository {
  const write = <T>(work: () => T): T => (options.unsynced === true ? writeUnsynced(db, work) : work());
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
    async insert(entries) {
      write(() => insertAll.immediate(entries));
    },
    async page(filter, limit) {
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
    async prune(before) {
      return write(() => pruneAll.immediate(before));
    },
  };
}

/** A row as the API shows it (both databases). */
export function recordOf(row: AuditRow): AuditRecord {
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
