import { type PostgresDb, readRows, writeRows } from "../storage/postgres/database.js";
import { EVENT_COLUMNS, type EventOutbox, type EventRow, toStoredEvent } from "./events.js";

/**
 * EventOutbox on PostgreSQL (cluster mode): the same pending events and pruning as on SQLite. Its
 * two synchronous parts cannot write or hear PostgreSQL, and need not:
 *
 * - markDispatched writes nothing. On PostgreSQL the mark is made by WebhookRepository.fanOut
 *   (areas/webhooks/repository-postgres.ts) in its own transaction, with the deliveries, as this
 *   callback is meant to be on SQLite; it is also the claim that keeps two nodes from fanning one
 *   event out twice. It calls this callback afterwards, with the ids it marked.
 * - onAppended never calls its listener: no package event is written through packageEventWriter
 *   (SQLite's) on PostgreSQL, and the interface already leaves events it does not announce to the
 *   reader's poll. Every node's appends arrive as the change feed's `lifecycle_events`
 *   notification (PostgresChangeWatch.onChange), which is where a cluster's dispatcher should wake.
 */
export function createPostgresEventOutbox(db: PostgresDb): EventOutbox {
  return {
    // LIMIT NULL is no limit: SQLite's LIMIT of a negative number, which PostgreSQL refuses.
    pending: async (limit) =>
      (
        await readRows<EventRow>(
          db,
          `SELECT ${EVENT_COLUMNS}
             FROM lifecycle_events WHERE dispatched_at IS NULL ORDER BY id LIMIT $1`,
          [limit < 0 ? null : limit],
        )
      ).map(toStoredEvent),
    markDispatched() {},
    onAppended() {
      return () => undefined;
    },
    // One statement: two nodes pruning at once delete each row once (the second waits for the
    // first's row locks and skips the rows it deleted), as two SQLite writers one after the other.
    pruneDispatched: async (before) =>
      (
        await writeRows(db, "DELETE FROM lifecycle_events WHERE dispatched_at IS NOT NULL AND dispatched_at < $1", [
          before.toISOString(),
        ])
      ).rowCount ?? 0,
  };
}
