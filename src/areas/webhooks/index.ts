import type { FastifyInstance } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { createEventOutbox } from "../../lifecycle/events.js";
import { createGuardedFetch, type ResolveHost } from "../../net/fetch-guard.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { SecretBox } from "../../storage/secrets.js";
import type { FeedService } from "../management/index.js";
import { createDispatcher } from "./dispatcher.js";
import { createWebhookRepository } from "./repository.js";
import { createPostgresWebhookRepository } from "./repository-postgres.js";
import { webhookRoutes } from "./routes.js";
import { createSender } from "./sender.js";
import { createWebhookService, type WebhookService } from "./service.js";
import { createDeliveryWorker } from "./worker.js";

export type { WebhookService, WebhookView, WebhookInput } from "./service.js";
export { callerOf } from "./routes.js";
export { presentDelivery } from "./present.js";

/** The receiver's answer is not wanted; a large one is cut off rather than read. */
const MAX_RESPONSE_BYTES = 64 * 1024;
/** Completed deliveries are kept this long in the log; dispatched events in the outbox this long. */
const KEEP_DELIVERIES_MS = 30 * 24 * 3_600_000;
const KEEP_DISPATCHED_EVENTS_MS = 7 * 24 * 3_600_000;
const PRUNE_EVERY_MS = 3_600_000;
/** How long the events of this process wait to be fanned out together (a burst in one transaction). */
const FANOUT_DELAY_MS = 50;

export interface WebhooksDeps {
  /** The data directory's SQLite or a cluster's PostgreSQL: the repository and the outbox are picked for it. */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
  readonly secrets: SecretBox;
  /** Replaces system DNS (tests). */
  readonly resolve?: ResolveHost;
  /**
   * The tables every node writes, as they change (cluster mode: the node's PostgresChangeWatch
   * `onChange`). PostgreSQL's outbox announces no event (lifecycle/events-postgres.ts): with this,
   * an event appended on any node is fanned out as soon as it is heard, as this process's own are
   * on SQLite; without it, at the next poll.
   */
  readonly onChange?: (listener: (table: string) => void) => () => void;
}

/**
 * Webhooks end to end (issue 17 section 3): the API, the dispatcher that fans the event outbox out
 * into deliveries, and the worker that sends them. Both start once the app is ready (events a crash
 * left are found by the first poll) and stop before it closes.
 */
export async function webhooksArea(app: FastifyInstance, deps: WebhooksDeps): Promise<WebhookService> {
  const { db, clock, config } = deps;
  const settings = config.webhooks;
  // On PostgreSQL, `due` claims what it hands out and fanOut claims its events: every node may run
  // the dispatcher and the worker at once, and each delivery is attempted by one of them.
  const repository = byDatabase(db, createWebhookRepository, createPostgresWebhookRepository);
  const fetch = createGuardedFetch({
    allowPrivate: config.fetchAllowPrivate,
    timeoutMs: settings.timeoutMs,
    maxBytes: MAX_RESPONSE_BYTES,
    maxRedirects: 0,
    proxy: config.outboundProxy,
    ...(deps.resolve === undefined ? {} : { resolve: deps.resolve }),
  });
  const worker = createDeliveryWorker({
    repository,
    secrets: deps.secrets,
    clock,
    settings,
    attempt: createSender(fetch, clock),
    log: app.log.child({ area: "webhooks" }),
  });
  // The database's own outbox (lifecycle/events.ts picks it).
  const outbox = createEventOutbox(db);
  const dispatcher = createDispatcher({ outbox, repository, clock, onDeliveries: worker.wake, log: app.log });
  const webhooks = createWebhookService({
    repository,
    feeds: deps.feeds,
    secrets: deps.secrets,
    clock,
    worker,
    allowPrivate: config.fetchAllowPrivate,
    ...(deps.resolve === undefined ? {} : { resolve: deps.resolve }),
  });
  await app.register(webhookRoutes, { webhooks });

  let timer: NodeJS.Timeout | undefined;
  let fanOutTimer: NodeJS.Timeout | undefined;
  let unsubscribe: (() => void) | undefined;
  let unsubscribeChanges: (() => void) | undefined;
  let lastPrune = 0;
  const prune = async () => {
    const now = clock.now().getTime();
    if (now - lastPrune < PRUNE_EVERY_MS) return;
    lastPrune = now;
    await repository.pruneCompleted(new Date(now - KEEP_DELIVERIES_MS));
    await outbox.pruneDispatched(new Date(now - KEEP_DISPATCHED_EVENTS_MS));
  };
  const poll = () => {
    void dispatcher
      .dispatch()
      .then(() => worker.wake())
      .then(prune)
      .catch((error: unknown) => app.log.warn({ err: error }, "pruning webhook deliveries failed"));
  };
  app.addHook("onReady", (done) => {
    // Not in the committing request's turn, and once for the events of FANOUT_DELAY_MS: a burst
    // of uploads is fanned out in one transaction instead of one each.
    const fanOutSoon = () => {
      fanOutTimer ??= setTimeout(() => {
        fanOutTimer = undefined;
        void dispatcher.dispatch();
      }, FANOUT_DELAY_MS);
    };
    unsubscribe = outbox.onAppended(fanOutSoon);
    unsubscribeChanges = deps.onChange?.((table) => {
      if (table === "lifecycle_events") fanOutSoon();
    });
    timer = setInterval(poll, settings.pollMs);
    timer.unref();
    poll();
    done();
  });
  app.addHook("preClose", (done) => {
    unsubscribe?.();
    unsubscribeChanges?.();
    clearInterval(timer);
    clearTimeout(fanOutTimer);
    Promise.all([dispatcher.stop(), worker.stop()]).then(() => done(), done);
  });
  return webhooks;
}
