import type { EventType, StoredEvent } from "./events.js";

/**
 * An outbox row as both databases read it (events.ts on SQLite, events-postgres.ts on PostgreSQL):
 * the rows' module is their own, so that neither implementation imports the other's.
 */
export interface EventRow {
  id: number;
  occurred_at: string;
  type: string;
  feed_id: number | null;
  feed_name: string | null;
  package_group: string | null;
  package_name: string | null;
  package_version: string | null;
  actor: string;
  data: string;
}

/** The columns of EventRow (both databases). */
export const EVENT_COLUMNS =
  "id, occurred_at, type, feed_id, feed_name, package_group, package_name, package_version, actor, data";

/** A row as the dispatcher reads it (both databases). */
export function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    occurredAt: row.occurred_at,
    type: row.type as EventType,
    feedId: row.feed_id ?? undefined,
    feedName: row.feed_name ?? undefined,
    package:
      row.package_name === null
        ? undefined
        : { group: row.package_group ?? "", name: row.package_name, version: row.package_version ?? "" },
    actor: row.actor,
    data: JSON.parse(row.data) as Record<string, unknown>,
  };
}
