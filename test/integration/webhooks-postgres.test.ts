import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Fastify, { type FastifyInstance } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { findConnectorReference } from "../../src/areas/connectors/index.js";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import { type WebhookService, webhooksArea } from "../../src/areas/webhooks/index.js";
import type { WebhookCaller } from "../../src/areas/webhooks/service.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { newSecretBox } from "../helpers/secret-box.js";
import { testPostgres } from "../helpers/shared-postgres.js";
import { type Receiver, startReceiver, verifySignature } from "../helpers/webhook-receiver.js";

/**
 * Webhooks wired on PostgreSQL (cluster mode), as app.ts builds the area: the service's webhooks,
 * an event appended on any node fanned out as soon as the change feed tells of it, a ping sent at
 * once, and two nodes running the dispatcher and the worker together, each delivery sent once.
 */

const admin: WebhookCaller = { actor: "admin", can: async () => true, authorize: async () => undefined };

describe.skipIf(!postgresInstalled())("webhooks on PostgreSQL", () => {
  let dir: string;
  let config: Config;
  let node: NodeDatabase;
  let other: NodeDatabase;
  let receiver: Receiver;
  let feeds: FeedService;
  const secrets = newSecretBox();
  const apps: FastifyInstance[] = [];

  async function areaOn(database: NodeDatabase, settings: Partial<Config["webhooks"]> = {}): Promise<WebhookService> {
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    apps.push(app);
    const service = await webhooksArea(app, {
      db: database.db,
      clock: systemClock,
      config: { ...config, webhooks: { ...config.webhooks, ...settings } },
      feeds,
      secrets,
      onChange: (listener) => database.watch.onChange(listener),
    });
    await app.ready();
    return service;
  }

  /** An event as an upload on `database`'s node writes it (lifecycle/events.ts), in a transaction of its own. */
  async function appendEvent(database: NodeDatabase, version: string): Promise<number> {
    const { rows } = await database.db.pool.query<{ id: number }>(
      `INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name,
         package_version, actor, data)
       SELECT $1, 'package.added', id, name, 'tools', 'cli', $2, 'alice', '{}' FROM feeds WHERE name = 'main'
       RETURNING id`,
      [new Date().toISOString(), version],
    );
    return (rows[0] as { id: number }).id;
  }

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-webhooks-pg-"));
    // Polls far apart: what is sent soon was woken by the change feed, not found by a poll.
    config = loadConfig({ WHARF_DATA_DIR: dir, WHARF_FETCH_ALLOW_PRIVATE: "true", WHARF_WEBHOOK_POLL_SECONDS: "600" });
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    feeds = createFeedService({
      db: node.db,
      clock: systemClock,
      config,
      findConnector: findConnectorReference(node.db),
      secrets,
    });
    await feeds.createFeed({ name: "main", feedType: "universal" });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    for (const app of apps.splice(0)) await app.close();
    await receiver?.close();
    await other?.close();
    await node?.close();
    if (dir !== undefined) await fs.rm(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.answer = (_request, response) => response.writeHead(204).end();
  });

  it("creates, lists and changes webhooks through the service; a ping is sent and logged at once", async () => {
    const webhooks = await areaOn(node);
    const { webhook, secret } = await webhooks.create(
      { name: "ci", feed: "main", url: `${receiver.base}/hook/{event}`, events: ["package.added"] },
      admin,
    );
    expect(webhook).toMatchObject({ name: "ci", feed: "main", events: ["package.added"], active: true });
    expect((await webhooks.list(admin)).map((listed) => listed.name)).toEqual(["ci"]);
    await expect(webhooks.create({ name: "lost", feed: "nowhere", url: receiver.base }, admin)).rejects.toMatchObject({
      code: "FEED_NOT_FOUND",
    });

    const ping = await webhooks.test(webhook.id, admin);
    expect(ping).toMatchObject({ state: "succeeded", attempts: 1, lastStatus: 204 });
    const [received] = receiver.received;
    expect(received?.url).toBe("/hook/ping");
    const signature = received?.headers["x-wharf-signature"];
    expect(
      verifySignature(
        typeof signature === "string" ? signature : undefined,
        received?.body ?? "",
        secret,
        Date.now() / 1000,
      ),
    ).toBe(true);
    expect((await webhooks.deliveries(webhook.id, admin, { limit: 10 })).map((delivery) => delivery.id)).toEqual([
      ping.id,
    ]);

    const changed = await webhooks.update(webhook.id, { url: `${receiver.base}/moved` }, admin);
    expect(changed.url).toBe(`${receiver.base}/moved`);
  });

  it("fans out an event appended on another node as soon as the change feed tells of it", async () => {
    const eventId = await appendEvent(other, "1.0.0");
    await receiver.waitFor(1);
    const body = JSON.parse(receiver.received[0]?.body ?? "{}") as Record<string, unknown>;
    expect(body).toMatchObject({ event: "package.added", eventId, feed: { name: "main" }, actor: "alice" });
    const { rows } = await node.db.pool.query("SELECT dispatched_at FROM lifecycle_events WHERE id = $1", [eventId]);
    expect(rows[0]?.dispatched_at).toEqual(expect.any(String));
  });

  it("two nodes dispatching and sending at once send each event's delivery once", async () => {
    await areaOn(other);
    const events: number[] = [];
    for (let i = 0; i < 12; i++) events.push(await appendEvent(i % 2 === 0 ? node : other, `2.0.${i}`));
    await receiver.waitFor(events.length);
    await sleep(300);
    const sent = receiver.received.map((request) => (JSON.parse(request.body) as { eventId: number }).eventId);
    expect(sent.sort((a, b) => a - b)).toEqual(events);
    await vi.waitFor(
      async () => {
        const { rows } = await node.db.pool.query<{ state: string; attempts: number; n: number }>(
          `SELECT state, attempts, count(*)::int AS n FROM webhook_deliveries
          WHERE event_id = ANY ($1::bigint[]) GROUP BY state, attempts`,
          [events],
        );
        expect(rows).toEqual([{ state: "succeeded", attempts: 1, n: events.length }]);
      },
      { timeout: 5_000, interval: 20 },
    );
  });

  it("retries a failed delivery, and deleting the webhook stops it", async () => {
    const webhooks = await areaOn(node, { retryFirstMs: 50, retryMaxMs: 50, pollMs: 50 });
    const [hook] = await webhooks.list(admin);
    receiver.answer = (_request, response) => response.writeHead(500).end();
    await appendEvent(node, "3.0.0");
    // Every area running on the database takes part; each attempt is made by one of them.
    await receiver.waitFor(3);
    const [latest] = await webhooks.deliveries(hook?.id as number, admin, { limit: 1 });
    expect(latest).toMatchObject({ state: "pending", lastStatus: 500 });
    expect(latest?.attempts).toBeGreaterThanOrEqual(2);
    await webhooks.delete(hook?.id as number, admin);
    await sleep(200);
    const count = receiver.received.length;
    await sleep(300);
    expect(receiver.received.length).toBe(count);
  });
});
