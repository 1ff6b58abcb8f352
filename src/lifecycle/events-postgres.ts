import type pg from "pg";
import { type PostgresDb, readRows, writeRows } from "../storage/postgres/database.js";
import { EVENT_COLUMNS, type EventRow, toStoredEvent } from "./event-rows.js";
import type { EventOutbox, PackageEvent } from "./events.js";

/**
 * The outbox row of events.ts's packageEventWriter, on PostgreSQL: the same columns and values
 * (the feed's name as it is now, the data as JSON text).
 */
const INSERT_EVENT = `
  INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name,
    package_version, actor, data)
  VALUES ($1, $2, $3, (SELECT name FROM feeds WHERE id = $3), $4, $5, $6, $7, $8)`;

/**
 * Appends a package event to the outbox on `client`, inside the caller's transaction, so that the
 * event commits, or rolls back, with the change (what packageEventWriter is on SQLite). That writer
 * also wakes this process's dispatcher at once; on PostgreSQL the dispatcher finds the event at its
 * next poll, or on the change feed's `lifecycle_events` notification.
 */
export async function appendPackageEvent(client: pg.ClientBase, event: PackageEvent): Promise<void> {
  await client.query(INSERT_EVENT, [
    event.occurredAt.toISOString(),
    event.type,
    event.feedId,
    event.package.group,
    event.package.name,
    event.package.version,
    event.actor,
    JSON.stringify(event.data ?? {}),
  ]);
}

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
