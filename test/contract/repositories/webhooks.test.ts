import { beforeAll, expect, it } from "vitest";
import { createEventOutbox, type EventType, type StoredEvent } from "../../../src/lifecycle/events.js";
import { bodyOf } from "../../../src/areas/webhooks/dispatcher.js";
import type { Delivery, Webhook } from "../../../src/areas/webhooks/model.js";
import {
  type AttemptRecord,
  createWebhookRepository,
  DELIVERY_CLAIM_MS,
  type NewWebhook,
  type WebhookRepository,
} from "../../../src/areas/webhooks/repository.js";
import { createPostgresWebhookRepository } from "../../../src/areas/webhooks/repository-postgres.js";
import { isForeignKeyViolation } from "../../../src/storage/sqlite-errors.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = new Date("2026-11-29T10:00:00.000Z");
const at = (seconds: number) => new Date(T0.getTime() + seconds * 1000);
const iso = (seconds: number) => at(seconds).toISOString();

const repositoryOn = (database: TestDatabase): WebhookRepository =>
  database.kind === "sqlite"
    ? createWebhookRepository(database.sqlite)
    : createPostgresWebhookRepository(database.postgres);

const hook = (fields: Partial<NewWebhook> = {}): NewWebhook => ({
  name: "ci",
  feedId: undefined,
  events: ["package.added"],
  urlTemplate: "https://hooks.example/{feed}/{name}",
  method: "POST",
  headers: { "X-Team": "blue" },
  sealedSecret: "sealed:1",
  active: true,
  createdBy: "Ann",
  at: T0,
  ...fields,
});

/** A delivery as insertDelivery makes it, before any attempt. */
const fresh = (fields: Pick<Delivery, "id" | "webhookId" | "eventType" | "requestBody"> & Partial<Delivery>) => ({
  eventId: undefined,
  state: "pending",
  attempts: 0,
  nextAttemptAt: T0.toISOString(),
  createdAt: T0.toISOString(),
  requestUrl: undefined,
  lastAttemptAt: undefined,
  lastStatus: undefined,
  lastError: undefined,
  lastDurationMs: undefined,
  completedAt: undefined,
  ...fields,
});

const attempt = (fields: Partial<AttemptRecord> = {}): AttemptRecord => ({
  state: "succeeded",
  at: at(1),
  nextAttemptAt: undefined,
  url: "https://hooks.example/main/app",
  status: 200,
  error: undefined,
  durationMs: 12,
  ...fields,
});

describeOnBothDatabases("webhook repository", (database) => {
  let webhooks: WebhookRepository;
  let feedId: number;
  let otherFeedId: number;
  /** Outbox rows, as the dispatcher reads them. */
  const appendEvent = async (type: EventType, feed: number | undefined, feedName: string | undefined) => {
    const [{ id }] = (await database().exec(
      `INSERT INTO lifecycle_events (occurred_at, type, feed_id, feed_name, package_group, package_name, package_version, actor, data)
       VALUES (?, ?, ?, ?, '', 'app', '1.0.0', 'Ann', '{"n":1}') RETURNING id`,
      [T0.toISOString(), type, feed ?? null, feedName ?? null],
    )) as [{ id: number }];
    const event: StoredEvent = {
      id,
      occurredAt: T0.toISOString(),
      type,
      feedId: feed,
      feedName,
      package: { group: "", name: "app", version: "1.0.0" },
      actor: "Ann",
      data: { n: 1 },
    };
    return event;
  };
  /** SQLite: the outbox's own markDispatched; PostgreSQL marks in fanOut itself (the callback is told). */
  const marker = (now: Date) => {
    const told: number[][] = [];
    const db = database();
    const outbox = db.kind === "sqlite" ? createEventOutbox(db.sqlite) : undefined;
    const mark = (ids: readonly number[]) => {
      told.push([...ids]);
      outbox?.markDispatched(ids, now);
    };
    return { told, mark };
  };
  const dispatchedAt = async (ids: readonly number[]) =>
    (
      await database().exec(
        `SELECT dispatched_at FROM lifecycle_events WHERE id IN (${ids.map(() => "?").join(", ")}) ORDER BY id`,
        ids,
      )
    ).map((row) => row.dispatched_at);
  const deliveryCount = async () =>
    Number((await database().exec("SELECT count(*) AS n FROM webhook_deliveries"))[0]?.n);

  beforeAll(async () => {
    webhooks = repositoryOn(database());
    const { exec } = database();
    feedId = await insertFeed(exec, "main", T0.toISOString());
    otherFeedId = await insertFeed(exec, "other", T0.toISOString());
  });

  it("stores webhooks, global and of a feed, and reads them back whole, in id order", async () => {
    const global = await webhooks.insert(hook());
    const ofFeed = await webhooks.insert(
      hook({ name: "feed", feedId, events: ["package.added", "package.deleted"], method: "PUT", headers: {} }),
    );
    expect(global).toEqual({
      id: global.id,
      name: "ci",
      feedId: undefined,
      events: ["package.added"],
      urlTemplate: "https://hooks.example/{feed}/{name}",
      method: "POST",
      headers: { "X-Team": "blue" },
      sealedSecret: "sealed:1",
      active: true,
      createdBy: "Ann",
      createdAt: T0.toISOString(),
      updatedAt: T0.toISOString(),
    } satisfies Webhook);
    expect(ofFeed).toEqual({
      ...global,
      id: ofFeed.id,
      name: "feed",
      feedId,
      events: ["package.added", "package.deleted"],
      method: "PUT",
      headers: {},
    });
    expect(ofFeed.id).toBeGreaterThan(global.id);
    expect(await webhooks.list()).toEqual([global, ofFeed]);
    expect(await webhooks.find(ofFeed.id)).toEqual(ofFeed);
    expect(await webhooks.find(999_999)).toBeUndefined();
  });

  it("refuses a webhook of a feed that is gone with the driver's foreign key error, storing nothing", async () => {
    const before = await webhooks.list();
    const refused = await webhooks.insert(hook({ feedId: 999_999 })).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(isForeignKeyViolation(refused)).toBe(true);
    expect(await webhooks.list()).toEqual(before);
  });

  it("updates every changeable field, keeps the feed, creator and creation time; undefined when gone", async () => {
    const [, ofFeed] = (await webhooks.list()) as [Webhook, Webhook];
    const changed = await webhooks.update(ofFeed.id, {
      name: "renamed",
      events: ["package.deployed"],
      urlTemplate: "https://other.example/x",
      method: "PATCH",
      headers: { A: "1", B: "2" },
      sealedSecret: "sealed:2",
      active: false,
      at: at(60),
    });
    expect(changed).toEqual({
      ...ofFeed,
      name: "renamed",
      events: ["package.deployed"],
      urlTemplate: "https://other.example/x",
      method: "PATCH",
      headers: { A: "1", B: "2" },
      sealedSecret: "sealed:2",
      active: false,
      updatedAt: iso(60),
    });
    expect(await webhooks.find(ofFeed.id)).toEqual(changed);
    expect(await webhooks.update(999_999, { ...hook(), at: at(60) })).toBeUndefined();
    // Back as it was, for the tests below.
    await webhooks.update(ofFeed.id, { ...ofFeed, at: T0 });
  });

  it("makes a ping due now and finds it whole; a missing delivery is undefined", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    const ping = await webhooks.insertDelivery(global.id, "ping", '{"event":"ping"}', T0);
    expect(ping).toEqual(
      fresh({ id: ping.id, webhookId: global.id, eventType: "ping", requestBody: '{"event":"ping"}' }),
    );
    expect(await webhooks.findDelivery(ping.id)).toEqual(ping);
    expect(await webhooks.findDelivery(999_999)).toBeUndefined();
    await webhooks.recordAttempt(ping.id, attempt());
  });

  it("makes a ping claimed by its sender when asked: no poll hands it out before the claim lapses", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    const claimedUntil = new Date(T0.getTime() + DELIVERY_CLAIM_MS);
    const ping = await webhooks.insertDelivery(global.id, "ping", "{}", T0, claimedUntil);
    expect(ping.nextAttemptAt).toBe(claimedUntil.toISOString());
    expect(ping.createdAt).toBe(T0.toISOString());
    const dueIds = async (at: Date) => (await webhooks.due(at, 100, new Set())).map((d) => d.id);
    expect(await dueIds(new Date(claimedUntil.getTime() - 1000))).not.toContain(ping.id);
    expect(await dueIds(claimedUntil)).toContain(ping.id);
    await webhooks.recordAttempt(ping.id, attempt());
  });

  it("fans events out to the active webhooks that want them, in one transaction with the outbox's mark", async () => {
    const [global, ofFeed] = (await webhooks.list()) as [Webhook, Webhook];
    const silent = await webhooks.insert(hook({ name: "silent", active: false }));
    const added = await appendEvent("package.added", feedId, "main");
    const deleted = await appendEvent("package.deleted", feedId, "main");
    const elsewhere = await appendEvent("package.added", otherFeedId, "other");
    const released = await appendEvent("release.status", undefined, undefined);
    const events = [added, deleted, elsewhere, released];
    const { told, mark } = marker(at(5));

    const made = await webhooks.fanOut(events, bodyOf, mark, at(5));

    // global: added, elsewhere; feed: added, deleted (its feed only); silent: none; release.status: none.
    expect(made).toBe(4);
    expect(told).toEqual([events.map((event) => event.id)]);
    expect(await dispatchedAt(events.map((event) => event.id))).toEqual([iso(5), iso(5), iso(5), iso(5)]);
    const made5 = (webhook: Webhook, event: StoredEvent, id: number) =>
      fresh({
        id,
        webhookId: webhook.id,
        eventId: event.id,
        eventType: event.type,
        requestBody: bodyOf(event, webhook),
        nextAttemptAt: iso(5),
        createdAt: iso(5),
      });
    const ofGlobal = await webhooks.deliveries(global.id, { limit: 10 });
    const ofFeedHook = await webhooks.deliveries(ofFeed.id, { limit: 10 });
    // Numbered event by event, webhook by webhook: added (global, feed), deleted (feed), elsewhere (global).
    const [first, second, third, fourth] = [...ofGlobal.slice(0, 2), ...ofFeedHook]
      .map((d) => d.id)
      .sort((a, b) => a - b) as [number, number, number, number];
    expect(ofGlobal.slice(0, 2)).toEqual([made5(global, elsewhere, fourth), made5(global, added, first)]);
    expect(ofFeedHook).toEqual([made5(ofFeed, deleted, third), made5(ofFeed, added, second)]);
    expect(await webhooks.deliveries(silent.id, { limit: 10 })).toEqual([]);
    await webhooks.delete(silent.id);
    // Settled, so that the deliveries below start from a clean queue.
    for (const id of [first, second, third, fourth]) await webhooks.recordAttempt(id, attempt({ at: at(6) }));
  });

  it("fans out nothing for no events, and rolls everything back when the outbox's mark fails", async () => {
    let called = false;
    expect(await webhooks.fanOut([], bodyOf, () => void (called = true), at(7))).toBe(0);
    expect(called).toBe(false);
    const event = await appendEvent("package.added", feedId, "main");
    const before = await deliveryCount();
    await expect(
      webhooks.fanOut(
        [event],
        bodyOf,
        () => {
          throw new Error("outbox gone");
        },
        at(7),
      ),
    ).rejects.toThrow("outbox gone");
    expect(await deliveryCount()).toBe(before);
    expect(await dispatchedAt([event.id])).toEqual([null]);
    // Dispatched for good, so that later fan-outs do not see it.
    const { mark } = marker(at(7));
    expect(await webhooks.fanOut([event], bodyOf, mark, at(7))).toBe(2);
  });

  it("hands out due deliveries oldest first, of active webhooks only, less those in flight, up to the limit", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    // The deliveries of the previous test: settle them.
    for (const delivery of await webhooks.deliveries(global.id, { limit: 50 })) {
      if (delivery.state === "pending") await webhooks.recordAttempt(delivery.id, attempt({ at: at(8) }));
    }
    for (const delivery of await webhooks.deliveries((await webhooks.list())[1]?.id ?? 0, { limit: 50 })) {
      if (delivery.state === "pending") await webhooks.recordAttempt(delivery.id, attempt({ at: at(8) }));
    }
    const idle = await webhooks.insert(hook({ name: "idle" }));
    const make = (webhookId: number, seconds: number) =>
      webhooks.insertDelivery(webhookId, "ping", `{"at":${seconds}}`, at(seconds));
    const d1 = await make(global.id, 103);
    const d2 = await make(global.id, 101);
    const ofIdle = await make(idle.id, 100);
    const d4 = await make(global.id, 101);
    const future = await make(global.id, 200);
    const done = await make(global.id, 100);
    await webhooks.recordAttempt(done.id, attempt({ at: at(100) }));
    await webhooks.update(idle.id, { ...idle, active: false, at: at(100) });

    expect(await webhooks.due(at(150), 2, new Set([d2.id]))).toEqual([d4, d1]);
    expect(await webhooks.due(at(150), 10, new Set([d2.id, d4.id, d1.id]))).toEqual([]);
    // SQLite hands out the same rows again (one process: the worker's in-flight set is the claim);
    // PostgreSQL claimed d4 and d1 for the asking node (see the PostgreSQL test below).
    expect(await webhooks.due(at(150), 10, new Set())).toEqual(database().kind === "sqlite" ? [d2, d4, d1] : [d2]);
    expect(future.nextAttemptAt).toBe(iso(200));
    expect(ofIdle.webhookId).toBe(idle.id);
    for (const delivery of [d1, d2, d4, future, ofIdle])
      await webhooks.recordAttempt(delivery.id, attempt({ at: at(150) }));
    expect(await webhooks.due(at(300), 10, new Set())).toEqual([]);
    await webhooks.delete(idle.id);
  });

  it("records attempts: a retry stays pending, an ending completes, an ended delivery is left alone", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    const delivery = await webhooks.insertDelivery(global.id, "package.added", "{}", at(400));
    const retry = attempt({
      state: "pending",
      at: at(401),
      nextAttemptAt: at(431),
      status: 503,
      error: "HTTP 503",
      durationMs: 40,
    });
    await webhooks.recordAttempt(delivery.id, retry);
    const pending = {
      ...delivery,
      attempts: 1,
      nextAttemptAt: iso(431),
      requestUrl: "https://hooks.example/main/app",
      lastAttemptAt: iso(401),
      lastStatus: 503,
      lastError: "HTTP 503",
      lastDurationMs: 40,
    };
    expect(await webhooks.findDelivery(delivery.id)).toEqual(pending);
    await webhooks.recordAttempt(
      delivery.id,
      attempt({ state: "failed", at: at(431), url: undefined, status: undefined, error: "refused", durationMs: 3 }),
    );
    const failed = {
      ...pending,
      state: "failed",
      attempts: 2,
      nextAttemptAt: undefined,
      requestUrl: undefined,
      lastAttemptAt: iso(431),
      lastStatus: undefined,
      lastError: "refused",
      lastDurationMs: 3,
      completedAt: iso(431),
    };
    expect(await webhooks.findDelivery(delivery.id)).toEqual(failed);
    await webhooks.recordAttempt(delivery.id, attempt({ at: at(500) }));
    expect(await webhooks.findDelivery(delivery.id)).toEqual(failed);
    // A delivery that is gone: nothing happens.
    await webhooks.recordAttempt(999_999, attempt());
  });

  it("pages a webhook's deliveries newest first, before an id", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    const all = await webhooks.deliveries(global.id, { limit: 1000 });
    const ids = all.map((delivery) => delivery.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    expect(all.every((delivery) => delivery.webhookId === global.id)).toBe(true);
    expect(await webhooks.deliveries(global.id, { limit: 2 })).toEqual(all.slice(0, 2));
    expect(await webhooks.deliveries(global.id, { limit: 3, before: ids[1] })).toEqual(all.slice(2, 5));
    expect(await webhooks.deliveries(global.id, { limit: 3, before: ids.at(-1) })).toEqual([]);
    expect(await webhooks.deliveries(999_999, { limit: 3 })).toEqual([]);
  });

  it("prunes deliveries completed before a time, never pending ones", async () => {
    const [global] = (await webhooks.list()) as [Webhook];
    const old = await webhooks.insertDelivery(global.id, "ping", "{}", at(600));
    await webhooks.recordAttempt(old.id, attempt({ at: at(601) }));
    const recent = await webhooks.insertDelivery(global.id, "ping", "{}", at(600));
    await webhooks.recordAttempt(recent.id, attempt({ at: at(700) }));
    const waiting = await webhooks.insertDelivery(global.id, "ping", "{}", at(600));
    const completedBefore = Number(
      (
        await database().exec(
          "SELECT count(*) AS n FROM webhook_deliveries WHERE state <> 'pending' AND completed_at < ?",
          [iso(650)],
        )
      )[0]?.n,
    );
    expect(completedBefore).toBeGreaterThan(1);
    expect(await webhooks.pruneCompleted(at(650))).toBe(completedBefore);
    expect(await webhooks.findDelivery(old.id)).toBeUndefined();
    expect(await webhooks.findDelivery(recent.id)).toMatchObject({ state: "succeeded" });
    expect(await webhooks.findDelivery(waiting.id)).toEqual(waiting);
    expect(await webhooks.pruneCompleted(at(650))).toBe(0);
    await webhooks.recordAttempt(waiting.id, attempt({ at: at(700) }));
  });

  it("deletes a webhook once, and its deliveries with it", async () => {
    const doomed = await webhooks.insert(hook({ name: "doomed" }));
    const delivery = await webhooks.insertDelivery(doomed.id, "ping", "{}", at(800));
    expect(await webhooks.delete(doomed.id)).toBe(true);
    expect(await webhooks.delete(doomed.id)).toBe(false);
    expect(await webhooks.find(doomed.id)).toBeUndefined();
    expect(await webhooks.findDelivery(delivery.id)).toBeUndefined();
    expect(await webhooks.deliveries(doomed.id, { limit: 10 })).toEqual([]);
  });

  it("tells the node's caches of ordinary writes at once, never of the queue's bookkeeping (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    let before = db.commits();
    const made = await webhooks.insert(hook({ name: "counted" }));
    await webhooks.update(made.id, { ...made, name: "counted2", at: at(900) });
    const delivery = await webhooks.insertDelivery(made.id, "ping", "{}", at(900));
    await webhooks.delete(999_999);
    expect(db.commits()).toBe(before + 4);
    before = db.commits();
    const event = await appendEvent("package.added", feedId, "main");
    await webhooks.fanOut([event], bodyOf, () => {}, at(900));
    await webhooks.due(at(900), 10, new Set());
    await webhooks.recordAttempt(delivery.id, attempt({ at: at(901) }));
    await webhooks.pruneCompleted(at(0));
    expect(db.commits()).toBe(before);
    await webhooks.delete(made.id);
  });

  // Several nodes on one database (PostgreSQL only): each on its own pool, as separate processes.
  const otherNode = otherNodesForBlock(database);
  const node = () => createPostgresWebhookRepository(otherNode());

  it("fans each event out once when two nodes fan out the same batch at once (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    const [a, b] = [node(), node()];
    const [global, ofFeed] = (await webhooks.list()) as [Webhook, Webhook];
    for (let round = 0; round < 5; round++) {
      const events: StoredEvent[] = [];
      for (let i = 0; i < 20; i++) events.push(await appendEvent("package.added", feedId, "main"));
      const told: number[][] = [[], []];
      const [madeByA, madeByB] = await Promise.all(
        [a, b].map((node, n) => node.fanOut(events, bodyOf, (ids) => told[n]?.push(...ids), at(1000))),
      );
      // Two webhooks want each event: 40 deliveries between the two nodes, none twice.
      expect((madeByA ?? 0) + (madeByB ?? 0)).toBe(40);
      expect([...(told[0] ?? []), ...(told[1] ?? [])].sort((x, y) => x - y)).toEqual(events.map((e) => e.id));
      const pairs = await database().exec(
        `SELECT webhook_id, event_id, count(*) AS n FROM webhook_deliveries WHERE event_id = ANY (?::bigint[])
         GROUP BY webhook_id, event_id`,
        [events.map((event) => event.id)],
      );
      expect(pairs).toHaveLength(40);
      expect(pairs.every((pair) => Number(pair.n) === 1)).toBe(true);
      expect(new Set(pairs.map((pair) => pair.webhook_id))).toEqual(new Set([global.id, ofFeed.id]));
    }
    // A batch fanned out already (another node was first) makes nothing.
    const event = await appendEvent("package.added", feedId, "main");
    expect(await a.fanOut([event], bodyOf, () => {}, at(1000))).toBe(2);
    expect(await b.fanOut([event], bodyOf, () => {}, at(1000))).toBe(0);
  });

  it("never hands one due delivery to two nodes; a claim that lapsed is handed out again (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    const nodes = [node(), node(), node()];
    // Whatever earlier tests left pending is out of the way.
    await database().exec("UPDATE webhook_deliveries SET state = 'failed' WHERE state = 'pending'");
    const [global] = (await webhooks.list()) as [Webhook];
    const made: Delivery[] = [];
    for (let i = 0; i < 60; i++) made.push(await webhooks.insertDelivery(global.id, "ping", `{"i":${i}}`, at(2000)));
    const now = at(2001);
    const handedOut: Delivery[][] = [[], [], []];
    await Promise.all(
      nodes.map(async (node, n) => {
        for (;;) {
          const due = await node.due(now, 4, new Set());
          if (due.length === 0) return;
          handedOut[n]?.push(...due);
        }
      }),
    );
    const all = handedOut.flat();
    // Each exactly once, as it was before the claim.
    expect(all.map((d) => d.id).sort((x, y) => x - y)).toEqual(made.map((d) => d.id));
    expect(new Map(all.map((d) => [d.id, d]))).toEqual(new Map(made.map((d) => [d.id, d])));
    // Claimed: another node's due does not see them until the claim lapses...
    const first = made[0] as Delivery;
    expect((await webhooks.findDelivery(first.id))?.nextAttemptAt).toBe(
      new Date(now.getTime() + DELIVERY_CLAIM_MS).toISOString(),
    );
    expect(await webhooks.due(at(2001 + DELIVERY_CLAIM_MS / 1000 - 1), 100, new Set())).toEqual([]);
    // ... and the node that recorded an attempt set the real next one.
    await nodes[0]?.recordAttempt(first.id, attempt({ state: "pending", at: at(2002), nextAttemptAt: at(2010) }));
    expect((await webhooks.due(at(2010), 100, new Set())).map((d) => d.id)).toEqual([first.id]);
    const lapsed = await webhooks.due(at(2001 + DELIVERY_CLAIM_MS / 1000), 100, new Set());
    expect(lapsed).toHaveLength(59);
    await database().exec("UPDATE webhook_deliveries SET state = 'failed' WHERE state = 'pending'");
  });

  it("records one ending when two nodes record an attempt of one delivery at once (PostgreSQL)", async () => {
    if (database().kind !== "postgres") return;
    const [a, b] = [node(), node()];
    const [global] = (await webhooks.list()) as [Webhook];
    const delivery = await webhooks.insertDelivery(global.id, "ping", "{}", at(3000));
    await Promise.all([
      a.recordAttempt(delivery.id, attempt({ at: at(3001), status: 200 })),
      b.recordAttempt(delivery.id, attempt({ state: "failed", at: at(3002), status: 500, error: "HTTP 500" })),
    ]);
    const recorded = await webhooks.findDelivery(delivery.id);
    expect(recorded?.attempts).toBe(1);
    expect([
      { state: "succeeded", lastStatus: 200, completedAt: iso(3001) },
      { state: "failed", lastStatus: 500, completedAt: iso(3002) },
    ]).toContainEqual({ state: recorded?.state, lastStatus: recorded?.lastStatus, completedAt: recorded?.completedAt });
  });
});
