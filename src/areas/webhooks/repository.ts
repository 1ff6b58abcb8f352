import type { EventType, StoredEvent } from "../../lifecycle/events.js";
import type { Db } from "../../storage/database.js";
import { writeUnsynced } from "../../storage/unsynced-writes.js";
import type { Delivery, DeliveryState, Webhook, WebhookMethod } from "./model.js";

/**
 * How long a delivery handed out by `due` stays claimed by the node that asked: its next attempt is
 * moved this far ahead (as a ping's by `insertDelivery`), so no other node's `due` takes it meanwhile, and `recordAttempt` sets the
 * real next attempt. Longer than any attempt (WHARF_WEBHOOK_TIMEOUT_SECONDS is at most 300 s); a
 * node that dies or stops mid-attempt leaves the delivery to be taken again once it lapses (at
 * least once, as on SQLite: receivers deduplicate on the event id).
 */
export const DELIVERY_CLAIM_MS = 10 * 60_000;

/** The webhooks and their deliveries (migrations/0020-webhooks.sql). Each method is one transaction. */
export interface WebhookRepository {
  list(): Promise<Webhook[]>;
  find(id: number): Promise<Webhook | undefined>;
  insert(row: NewWebhook): Promise<Webhook>;
  /** undefined when the webhook is gone. */
  update(id: number, row: WebhookChange): Promise<Webhook | undefined>;
  delete(id: number): Promise<boolean>;
  /**
   * One delivery per active webhook that wants each event, made in the same transaction as
   * `markDispatched(ids)` (the outbox's): a crash leaves the events pending, never half fanned out.
   */
  fanOut(
    events: readonly StoredEvent[],
    bodyOf: (event: StoredEvent, webhook: Webhook) => string,
    markDispatched: (ids: readonly number[]) => void,
    now: Date,
  ): Promise<number>;
  /**
   * A delivery made by hand (a ping), due now; or, with `claimedUntil`, claimed by the caller, who
   * attempts it at once: no poll (of this node or another) takes it before then, as for `due`.
   */
  insertDelivery(webhookId: number, eventType: string, body: string, now: Date, claimedUntil?: Date): Promise<Delivery>;
  /** Pending deliveries due at `now`, oldest first, of active webhooks; `skip` are in flight. */
  due(now: Date, limit: number, skip: ReadonlySet<number>): Promise<Delivery[]>;
  recordAttempt(id: number, attempt: AttemptRecord): Promise<void>;
  deliveries(webhookId: number, options: { limit: number; before?: number | undefined }): Promise<Delivery[]>;
  findDelivery(id: number): Promise<Delivery | undefined>;
  /** Deletes deliveries completed before `before`; returns how many. */
  pruneCompleted(before: Date): Promise<number>;
}

/** A webhook to insert: what the database does not number or date itself, and when. */
export type NewWebhook = Omit<Webhook, "id" | "createdAt" | "updatedAt"> & { readonly at: Date };

export type WebhookChange = Omit<NewWebhook, "createdBy" | "feedId">;

export interface AttemptRecord {
  readonly state: DeliveryState;
  readonly at: Date;
  readonly nextAttemptAt: Date | undefined;
  readonly url: string | undefined;
  readonly status: number | undefined;
  readonly error: string | undefined;
  readonly durationMs: number;
}

/** A row of `webhooks` (both databases). */
export interface WebhookRow {
  id: number;
  name: string;
  feed_id: number | null;
  events: string;
  url_template: string;
  method: string;
  headers: string;
  secret: string;
  active: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

/** A row of `webhook_deliveries` (both databases). */
export interface DeliveryRow {
  id: number;
  webhook_id: number;
  event_id: number | null;
  event_type: string;
  state: string;
  attempts: number;
  next_attempt_at: string | null;
  created_at: string;
  request_body: string;
  request_url: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  last_duration_ms: number | null;
  completed_at: string | null;
}

export const WEBHOOK_COLUMNS =
  "id, name, feed_id, events, url_template, method, headers, secret, active, created_by, created_at, updated_at";

export function createWebhookRepository(db: Db): WebhookRepository {
  const all = db.prepare<[], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY id`);
  const active = db.prepare<[], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE active = 1 ORDER BY id`);
  const one = db.prepare<[number], WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = ?`);
  const insert = db.prepare<Record<string, string | number | null>>(
    `INSERT INTO webhooks (name, feed_id, events, url_template, method, headers, secret, active, created_by, created_at, updated_at)
     VALUES (@name, @feedId, @events, @url, @method, @headers, @secret, @active, @createdBy, @at, @at)`,
  );
  const update = db.prepare<Record<string, string | number>>(
    `UPDATE webhooks SET name = @name, events = @events, url_template = @url, method = @method, headers = @headers,
       secret = @secret, active = @active, updated_at = @at WHERE id = @id`,
  );
  const remove = db.prepare<[number]>("DELETE FROM webhooks WHERE id = ?");
  const insertDelivery = db.prepare<[number, number | null, string, string, string, string]>(
    `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, state, next_attempt_at, created_at, request_body)
     VALUES (?, ?, ?, 'pending', ?, ?, ?)`,
  );
  const delivery = db.prepare<[number], DeliveryRow>("SELECT * FROM webhook_deliveries WHERE id = ?");
  const due = db.prepare<[string, number], DeliveryRow>(
    `SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND w.active = 1
      ORDER BY d.next_attempt_at, d.id LIMIT ?`,
  );
  const record = db.prepare<Record<string, string | number | null>>(
    `UPDATE webhook_deliveries SET state = @state, attempts = attempts + 1, next_attempt_at = @next,
       request_url = @url, last_attempt_at = @at, last_status = @status, last_error = @error,
       last_duration_ms = @duration, completed_at = CASE WHEN @state = 'pending' THEN NULL ELSE @at END
     WHERE id = @id AND state = 'pending'`,
  );
  const page = db.prepare<[number, number, number], DeliveryRow>(
    "SELECT * FROM webhook_deliveries WHERE webhook_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
  );
  const prune = db.prepare<[string]>("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND completed_at < ?");

  const fanOut = db.transaction(
    (
      events: readonly StoredEvent[],
      bodyOf: (event: StoredEvent, webhook: Webhook) => string,
      markDispatched: (ids: readonly number[]) => void,
      now: string,
    ) => {
      const webhooks = active.all().map(toWebhook);
      let made = 0;
      for (const event of events) {
        for (const webhook of webhooks) {
          if (!wants(webhook, event)) continue;
          insertDelivery.run(webhook.id, event.id, event.type, now, now, bodyOf(event, webhook));
          made += 1;
        }
      }
      markDispatched(events.map((event) => event.id));
      return made;
    },
  );

  return {
    list: async () => all.all().map(toWebhook),
    find: async (id) => {
      const row = one.get(id);
      return row === undefined ? undefined : toWebhook(row);
    },
    async insert(row) {
      const { lastInsertRowid } = insert.run({
        ...columnsOf(row),
        feedId: row.feedId ?? null,
        createdBy: row.createdBy,
      });
      return toWebhook(one.get(Number(lastInsertRowid)) as WebhookRow);
    },
    async update(id, row) {
      update.run({ ...columnsOf(row), id });
      const changed = one.get(id);
      return changed === undefined ? undefined : toWebhook(changed);
    },
    delete: async (id) => remove.run(id).changes > 0,
    // Unsynced: the events stay pending until the fan-out commits, so one lost to a power cut is
    // made again from them (storage/unsynced-writes.ts).
    fanOut: async (events, bodyOf, markDispatched, now) =>
      events.length === 0 ? 0 : writeUnsynced(db, () => fanOut(events, bodyOf, markDispatched, now.toISOString())),
    async insertDelivery(webhookId, eventType, body, now, claimedUntil) {
      const at = now.toISOString();
      const next = (claimedUntil ?? now).toISOString();
      const { lastInsertRowid } = insertDelivery.run(webhookId, null, eventType, next, at, body);
      return toDelivery(delivery.get(Number(lastInsertRowid)) as DeliveryRow);
    },
    async due(now, limit, skip) {
      // In-flight deliveries are still pending: read a few more and leave those out.
      const rows = due.all(now.toISOString(), limit + skip.size);
      return rows
        .filter((row) => !skip.has(row.id))
        .slice(0, limit)
        .map(toDelivery);
    },
    async recordAttempt(id, attempt) {
      // Unsynced: an attempt lost to a power cut is made again (at least once; receivers deduplicate).
      writeUnsynced(db, () =>
        record.run({
          id,
          state: attempt.state,
          next: attempt.nextAttemptAt?.toISOString() ?? null,
          url: attempt.url ?? null,
          at: attempt.at.toISOString(),
          status: attempt.status ?? null,
          error: attempt.error ?? null,
          duration: attempt.durationMs,
        }),
      );
    },
    deliveries: async (webhookId, { limit, before }) =>
      page.all(webhookId, before ?? Number.MAX_SAFE_INTEGER, limit).map(toDelivery),
    findDelivery: async (id) => {
      const row = delivery.get(id);
      return row === undefined ? undefined : toDelivery(row);
    },
    pruneCompleted: async (before) => writeUnsynced(db, () => prune.run(before.toISOString()).changes),
  };
}

/** A feed's webhook hears its feed's events alone; a global one every event it names. */
export function wants(webhook: Webhook, event: StoredEvent): boolean {
  if (!webhook.events.includes(event.type)) return false;
  return webhook.feedId === undefined || webhook.feedId === event.feedId;
}

/** The stored form of a webhook's changeable fields (both databases). */
export function columnsOf(row: WebhookChange) {
  return {
    name: row.name,
    events: JSON.stringify(row.events),
    url: row.urlTemplate,
    method: row.method,
    headers: JSON.stringify(row.headers),
    secret: row.sealedSecret,
    active: row.active ? 1 : 0,
    at: row.at.toISOString(),
  };
}

export function toWebhook(row: WebhookRow): Webhook {
  return {
    id: row.id,
    name: row.name,
    feedId: row.feed_id ?? undefined,
    events: JSON.parse(row.events) as EventType[],
    urlTemplate: row.url_template,
    method: row.method as WebhookMethod,
    headers: JSON.parse(row.headers) as Record<string, string>,
    sealedSecret: row.secret,
    active: row.active === 1,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    webhookId: row.webhook_id,
    eventId: row.event_id ?? undefined,
    eventType: row.event_type,
    state: row.state as DeliveryState,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at ?? undefined,
    createdAt: row.created_at,
    requestBody: row.request_body,
    requestUrl: row.request_url ?? undefined,
    lastAttemptAt: row.last_attempt_at ?? undefined,
    lastStatus: row.last_status ?? undefined,
    lastError: row.last_error ?? undefined,
    lastDurationMs: row.last_duration_ms ?? undefined,
    completedAt: row.completed_at ?? undefined,
  };
}
