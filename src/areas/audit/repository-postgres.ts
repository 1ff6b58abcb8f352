import type pg from "pg";
import {
  inTransaction,
  type PostgresDb,
  quietTransaction,
  readRows,
  writeRows,
} from "../../storage/postgres/database.js";
import type { AuditEntry } from "./record.js";
import { type AuditRepository, type AuditRepositoryOptions, type AuditRow, MAX_CHAR, recordOf } from "./repository.js";

/**
 * A batch in one statement, numbered in the order given (as SQLite's one insert at a time numbers
 * them): the identity's values are drawn as the sorted rows are inserted.
 */
const INSERT_ENTRIES = `
  INSERT INTO audit_records (at, actor_kind, actor_name, address, action, object, status, outcome, request_id)
  SELECT at, actor_kind, actor_name, address, action, object, status, outcome, request_id
    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[], $8::text[],
                $9::text[])
         WITH ORDINALITY AS entry (at, actor_kind, actor_name, address, action, object, status, outcome, request_id, n)
   ORDER BY n`;

/**
 * PostgreSQL's text cannot hold U+0000, which SQLite stores as given: a request can bring one in
 * (a route parameter's %00, the user name of a Basic sign-in). Refused, it would fail its whole
 * batch, and every retry of it, for good; it is stored as U+FFFD instead, as both drivers store an
 * unpaired surrogate. Filters are read the same way, so that they find what was stored.
 */
const storable = (text: string): string => text.replaceAll("\u0000", "\uFFFD");

function columnsOf(entries: readonly AuditEntry[]): unknown[] {
  const column = <T>(value: (entry: AuditEntry) => T) => entries.map(value);
  return [
    column((e) => storable(e.at)),
    column((e) => storable(e.actor.kind)),
    column((e) => storable(e.actor.name)),
    column((e) => storable(e.address)),
    column((e) => storable(e.action)),
    column((e) => storable(e.object)),
    column((e) => e.status),
    column((e) => storable(e.outcome)),
    column((e) => storable(e.requestId)),
  ];
}

/**
 * AuditRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. `unsynced`
 * writes are quiet (quietTransaction: no node's caches are told, as ChangeWatch.quietly in SQLite's
 * writeUnsynced); their commit waits for the WAL's flush as any other (synchronous_commit as the
 * server has it).
 */
export function createPostgresAuditRepository(db: PostgresDb, options: AuditRepositoryOptions = {}): AuditRepository {
  const transaction = <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> =>
    options.unsynced === true ? quietTransaction(db, work) : inTransaction(db, work);
  return {
    async insert(entries) {
      // SQLite's transaction of no insert changes nothing either.
      if (entries.length === 0) return;
      const values = columnsOf(entries);
      // One statement: atomic in a transaction of its own, a quiet one when unsynced.
      if (options.unsynced === true) await quietTransaction(db, (client) => client.query(INSERT_ENTRIES, values));
      else await writeRows(db, INSERT_ENTRIES, values);
    },
    async page(filter, limit) {
      const where: string[] = [];
      const args: (string | number)[] = [];
      const param = (value: string | number) => {
        args.push(value);
        return `$${args.length}`;
      };
      if (filter.from !== undefined) where.push(`at >= ${param(storable(filter.from))}`);
      if (filter.to !== undefined) where.push(`at < ${param(storable(filter.to))}`);
      if (filter.actor !== undefined) where.push(`actor_name = ${param(storable(filter.actor))}`);
      if (filter.action !== undefined) {
        // COLLATE "C" (the column's): code point order, as SQLite's BINARY, up to U+10FFFF.
        const prefix = storable(filter.action);
        where.push(`action >= ${param(prefix)} AND action < ${param(prefix + MAX_CHAR)}`);
      }
      // strpos, as SQLite's instr: exact, case-sensitive, '' found everywhere.
      if (filter.object !== undefined) where.push(`strpos(object, ${param(storable(filter.object))}) > 0`);
      if (filter.after !== undefined) where.push(`id < ${param(filter.after)}`);
      const sql =
        `SELECT * FROM audit_records${where.length > 0 ? ` WHERE ${where.join(" AND ")}` : ""}` +
        ` ORDER BY id DESC LIMIT ${param(limit)}`;
      return (await readRows<AuditRow>(db, sql, args)).map(recordOf);
    },
    async prune(before) {
      // Two prunes at once (two nodes, or the CLI's): the UPDATE of one waits on the cutoff's row
      // for the other's commit, then moves it only if it is still earlier (READ COMMITTED re-reads
      // the row). No DELETE can meet a row the triggers keep, a row goes once, and the counts add
      // up to what SQLite's one writer at a time gives.
      return transaction(async (client) => {
        await client.query("UPDATE audit_retention SET prune_before = $1 WHERE id = 1 AND prune_before < $1", [before]);
        return (await client.query("DELETE FROM audit_records WHERE at < $1", [before])).rowCount ?? 0;
      });
    },
  };
}
