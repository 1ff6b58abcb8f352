import { type Principal, principalName } from "../domain/principal.js";
import type { Db } from "../storage/database.js";
import { byDatabase, type MetadataDb } from "../storage/metadata-db.js";
import { EVENT_COLUMNS, type EventRow, toStoredEvent } from "./event-rows.js";
import { createPostgresEventOutbox } from "./events-postgres.js";

export { EVENT_COLUMNS, type EventRow, toStoredEvent } from "./event-rows.js";

/**
 * The event outbox (migrations/0017-lifecycle-events.sql): the package events ProGet notifies
 * (docs/compat.md 10) and the status changes of releases, builds and deployments. A change writes
 * its event in its own transaction (appendPackageEvent, or the migration's triggers), so that an
 * acknowledged change always has its event; webhooks are delivered from the rows afterwards.
 */
export const PACKAGE_EVENT_TYPES = [
  "package.added",
  "package.overwritten",
  "package.promoted",
  "package.deployed",
  "package.deleted",
  "package.purged",
] as const;
export const DELIVERY_EVENT_TYPES = ["release.status", "build.status", "deployment.status"] as const;
export const EVENT_TYPES = [...PACKAGE_EVENT_TYPES, ...DELIVERY_EVENT_TYPES] as const;

export type PackageEventType = (typeof PACKAGE_EVENT_TYPES)[number];
export type EventType = (typeof EVENT_TYPES)[number];

/** The actor of what the server does on its own (a status the runner sets, a scheduled run). */
export const SERVER_ACTOR = "Wharf";

/** The event actor of a principal: its name in records, or "Anonymous". */
export function actorOf(principal: Principal): string {
  return principalName(principal) ?? "Anonymous";
}

/**
 * Who made a package change and how it should be told. Without `as`, a save raises
 * package.added or package.overwritten and a delete package.deleted; a promotion's save says
 * package.promoted, a retention run's delete package.purged (docs/compat.md 10: instead of Deleted).
 */
export interface ChangeCause {
  /** A user or API key display name (never a secret), or SERVER_ACTOR. */
  readonly actor: string;
  readonly as?: "package.promoted" | "package.purged";
  /** What else the event carries, e.g. the feed a promotion came from. */
  readonly data?: Readonly<Record<string, unknown>>;
}

export interface PackageCoordinates {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

export interface PackageEvent {
  readonly type: PackageEventType;
  readonly feedId: number;
  readonly package: PackageCoordinates;
  readonly actor: string;
  readonly data?: Readonly<Record<string, unknown>> | undefined;
  readonly occurredAt: Date;
}

export interface StoredEvent {
  readonly id: number;
  readonly occurredAt: string;
  readonly type: EventType;
  readonly feedId: number | undefined;
  /** The feed's name when the event happened. */
  readonly feedName: string | undefined;
  readonly package: PackageCoordinates | undefined;
  readonly actor: string;
  readonly data: Record<string, unknown>;
}

export interface EventOutbox {
  /** Events not yet fanned out, oldest first. */
  pending(limit: number): Promise<StoredEvent[]>;
  /** Marks events as fanned out; call in the same transaction as the deliveries made from them. */
  markDispatched(ids: readonly number[], at: Date): void;
  /**
   * Calls the listener soon after a package event of this process is committed. Events of other
   * processes (the CLI) and of the triggers are not announced: a reader must also poll.
   */
  onAppended(listener: () => void): () => void;
  /** Deletes events fanned out before `before`; returns how many. */
  pruneDispatched(before: Date): Promise<number>;
}

const listeners = new WeakMap<Db, Set<() => void>>();
/** Listener sets with an announcement already scheduled. */
const announcing = new WeakSet<Set<() => void>>();

/**
 * Returns the writer of package events for this SQLite database. The writer is synchronous: call it
 * inside the transaction of the change, so that the event commits, or rolls back, with it. On
 * PostgreSQL a repository appends its events with events-postgres.ts `appendPackageEvent`, on the
 * client of its own transaction.
 */
export function packageEventWriter(db: Db): (event: PackageEvent) => void {
  const insert = db.prepare<Record<string, string | number>>(
    `INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name,
       package_version, actor, data)
     VALUES (@at, @type, @feedId, (SELECT name FROM feeds WHERE id = @feedId), @group, @name, @version, @actor, @data)`,
  );
  return (event) => {
    insert.run({
      at: event.occurredAt.toISOString(),
      type: event.type,
      feedId: event.feedId,
      group: event.package.group,
      name: event.package.name,
      version: event.package.version,
      actor: event.actor,
      data: JSON.stringify(event.data ?? {}),
    });
    // Announced in a later turn of the event loop: after the synchronous transaction has ended (a
    // rolled-back event only wakes a reader that then finds nothing), and after the change's own
    // response has been written, which reading the outbox must not delay. Events appended in one
    // turn are announced once.
    const waiting = listeners.get(db);
    if (waiting !== undefined && waiting.size > 0 && !announcing.has(waiting)) {
      announcing.add(waiting);
      setImmediate(() => {
        announcing.delete(waiting);
        announce(waiting);
      });
    }
  };
}

/** The event a save or delete raises, given its cause; undefined for a connector's pulled copy. */
export function packageEventType(
  change: "saved" | "replaced" | "deleted",
  cause: ChangeCause,
  pulled = false,
): PackageEventType | undefined {
  if (change === "deleted") return cause.as === "package.purged" ? "package.purged" : "package.deleted";
  if (cause.as === "package.promoted") return "package.promoted";
  // docs/compat.md 10: Added is not raised for connector-cached packages.
  if (pulled) return undefined;
  return change === "replaced" ? "package.overwritten" : "package.added";
}

/** The outbox of the node's metadata store: SQLite's, or PostgreSQL's (events-postgres.ts). */
export function createEventOutbox(db: MetadataDb): EventOutbox {
  return byDatabase(db, createSqliteEventOutbox, createPostgresEventOutbox);
}

function createSqliteEventOutbox(db: Db): EventOutbox {
  const pendingRows = db.prepare<[number], EventRow>(
    `SELECT ${EVENT_COLUMNS}
       FROM lifecycle_events WHERE dispatched_at IS NULL ORDER BY id LIMIT ?`,
  );
  const mark = db.prepare<[string, number]>("UPDATE lifecycle_events SET dispatched_at = ? WHERE id = ?");
  const prune = db.prepare<[string]>(
    "DELETE FROM lifecycle_events WHERE dispatched_at IS NOT NULL AND dispatched_at < ?",
  );
  return {
    pending: async (limit) => pendingRows.all(limit).map(toStoredEvent),
    markDispatched(ids, at) {
      const when = at.toISOString();
      for (const id of ids) mark.run(when, id);
    },
    onAppended(listener) {
      let waiting = listeners.get(db);
      if (waiting === undefined) listeners.set(db, (waiting = new Set()));
      waiting.add(listener);
      return () => waiting.delete(listener);
    },
    pruneDispatched: async (before) => prune.run(before.toISOString()).changes,
  };
}

function announce(waiting: Set<() => void>): void {
  for (const listener of waiting) listener();
}
