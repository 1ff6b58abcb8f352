import { type PostgresDb, quietTransaction, readRows, writeRows } from "../../storage/postgres/database.js";
import {
  columnsOf,
  DELIVERY_CLAIM_MS,
  type DeliveryRow,
  toDelivery,
  toWebhook,
  wants,
  WEBHOOK_COLUMNS,
  type WebhookRepository,
  type WebhookRow,
} from "./repository.js";

/**
 * The events of a fan-out that this transaction marks dispatched: those still pending, less those
 * another node is fanning out right now (SKIP LOCKED: it is not waited for; if it rolls back, they
 * are still pending for the next poll). An event already dispatched gets no deliveries again.
 */
const CLAIM_EVENTS = `
  WITH mine AS (
    SELECT id FROM lifecycle_events WHERE id = ANY ($1::bigint[]) AND dispatched_at IS NULL
     ORDER BY id
     FOR UPDATE SKIP LOCKED
  )
  UPDATE lifecycle_events e SET dispatched_at = $2 FROM mine WHERE e.id = mine.id
  RETURNING e.id`;

/** Made in the order given (event, then webhook), as SQLite's one insert at a time numbers them. */
const INSERT_FANNED_OUT = `
  INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, state, next_attempt_at, created_at, request_body)
  SELECT webhook_id, event_id, event_type, 'pending', $4, $4, request_body
    FROM unnest($1::bigint[], $2::bigint[], $3::text[], $5::text[])
         WITH ORDINALITY AS made (webhook_id, event_id, event_type, request_body, n)
   ORDER BY n`;

/**
 * Due deliveries not in flight here (`skip`) nor claimed by another node (SKIP LOCKED, and the
 * claim's later next_attempt_at once it committed). Only the deliveries' rows are locked.
 */
const DUE = `
  SELECT d.* FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
   WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND w.active = 1 AND d.id <> ALL ($3::bigint[])
   ORDER BY d.next_attempt_at, d.id
   LIMIT $2
   FOR UPDATE OF d SKIP LOCKED`;

/** WebhookRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. */
export function createPostgresWebhookRepository(db: PostgresDb): WebhookRepository {
  return {
    list: async () =>
      (await readRows<WebhookRow>(db, `SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY id`)).map(toWebhook),
    async find(id) {
      const [row] = await readRows<WebhookRow>(db, `SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE id = $1`, [id]);
      return row === undefined ? undefined : toWebhook(row);
    },
    async insert(row) {
      const c = columnsOf(row);
      const result = await writeRows<WebhookRow>(
        db,
        `INSERT INTO webhooks (name, feed_id, events, url_template, method, headers, secret, active, created_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)
         RETURNING ${WEBHOOK_COLUMNS}`,
        [c.name, row.feedId ?? null, c.events, c.url, c.method, c.headers, c.secret, c.active, row.createdBy, c.at],
      );
      return toWebhook(result.rows[0] as WebhookRow);
    },
    async update(id, row) {
      const c = columnsOf(row);
      const result = await writeRows<WebhookRow>(
        db,
        `UPDATE webhooks SET name = $2, events = $3, url_template = $4, method = $5, headers = $6,
           secret = $7, active = $8, updated_at = $9 WHERE id = $1
         RETURNING ${WEBHOOK_COLUMNS}`,
        [id, c.name, c.events, c.url, c.method, c.headers, c.secret, c.active, c.at],
      );
      const [changed] = result.rows;
      return changed === undefined ? undefined : toWebhook(changed);
    },
    delete: async (id) => ((await writeRows(db, "DELETE FROM webhooks WHERE id = $1", [id])).rowCount ?? 0) > 0,
    // Quiet, as SQLite's writeUnsynced: no cache reads deliveries or the outbox's dispatch marks.
    async fanOut(events, bodyOf, markDispatched, now) {
      if (events.length === 0) return 0;
      const at = now.toISOString();
      return quietTransaction(db, async (client) => {
        // The outbox's mark is made here, in this transaction: the synchronous markDispatched
        // cannot write to PostgreSQL. It is the claim too: two nodes never fan one event out twice.
        const claimed = await client.query<{ id: number }>(CLAIM_EVENTS, [events.map((event) => event.id), at]);
        const mine = new Set(claimed.rows.map((row) => row.id));
        const fannedOut = events.filter((event) => mine.has(event.id));
        const webhooks = (
          await client.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE active = 1 ORDER BY id`)
        ).rows.map(toWebhook);
        const webhookIds: number[] = [];
        const eventIds: number[] = [];
        const types: string[] = [];
        const bodies: string[] = [];
        for (const event of fannedOut) {
          for (const webhook of webhooks) {
            if (!wants(webhook, event)) continue;
            webhookIds.push(webhook.id);
            eventIds.push(event.id);
            types.push(event.type);
            bodies.push(bodyOf(event, webhook));
          }
        }
        if (webhookIds.length > 0) await client.query(INSERT_FANNED_OUT, [webhookIds, eventIds, types, at, bodies]);
        markDispatched(fannedOut.map((event) => event.id));
        return webhookIds.length;
      });
    },
    async insertDelivery(webhookId, eventType, body, now, claimedUntil) {
      const result = await writeRows<DeliveryRow>(
        db,
        `INSERT INTO webhook_deliveries (webhook_id, event_id, event_type, state, next_attempt_at, created_at, request_body)
         VALUES ($1, NULL, $2, 'pending', $3, $4, $5)
         RETURNING *`,
        [webhookId, eventType, (claimedUntil ?? now).toISOString(), now.toISOString(), body],
      );
      return toDelivery(result.rows[0] as DeliveryRow);
    },
    async due(now, limit, skip) {
      // Answered as read (the claim's next_attempt_at is bookkeeping): as SQLite's plain read.
      const claimedUntil = new Date(now.getTime() + DELIVERY_CLAIM_MS).toISOString();
      return quietTransaction(db, async (client) => {
        const rows = (await client.query<DeliveryRow>(DUE, [now.toISOString(), limit, [...skip]])).rows;
        if (rows.length > 0) {
          await client.query("UPDATE webhook_deliveries SET next_attempt_at = $2 WHERE id = ANY ($1::bigint[])", [
            rows.map((row) => row.id),
            claimedUntil,
          ]);
        }
        return rows.map(toDelivery);
      });
    },
    async recordAttempt(id, attempt) {
      // Quiet, as SQLite's writeUnsynced. Conditional on the delivery being pending: an attempt
      // recorded by another node meanwhile (its claim lapsed) is not overwritten by a late one.
      await quietTransaction(db, (client) =>
        client.query(
          `UPDATE webhook_deliveries SET state = $2, attempts = attempts + 1, next_attempt_at = $3,
             request_url = $4, last_attempt_at = $5, last_status = $6, last_error = $7,
             last_duration_ms = $8, completed_at = CASE WHEN $2 = 'pending' THEN NULL ELSE $5 END
           WHERE id = $1 AND state = 'pending'`,
          [
            id,
            attempt.state,
            attempt.nextAttemptAt?.toISOString() ?? null,
            attempt.url ?? null,
            attempt.at.toISOString(),
            attempt.status ?? null,
            attempt.error ?? null,
            attempt.durationMs,
          ],
        ),
      );
    },
    deliveries: async (webhookId, { limit, before }) =>
      (
        await readRows<DeliveryRow>(
          db,
          "SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3",
          [webhookId, before ?? Number.MAX_SAFE_INTEGER, limit],
        )
      ).map(toDelivery),
    async findDelivery(id) {
      const [row] = await readRows<DeliveryRow>(db, "SELECT * FROM webhook_deliveries WHERE id = $1", [id]);
      return row === undefined ? undefined : toDelivery(row);
    },
    pruneCompleted: async (before) =>
      quietTransaction(
        db,
        async (client) =>
          (
            await client.query("DELETE FROM webhook_deliveries WHERE state <> 'pending' AND completed_at < $1", [
              before.toISOString(),
            ])
          ).rowCount ?? 0,
      ),
  };
}
