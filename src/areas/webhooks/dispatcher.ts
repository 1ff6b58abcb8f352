import type { FastifyBaseLogger } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { EventOutbox, StoredEvent } from "../../lifecycle/events.js";
import type { DeliveryBody, Webhook } from "./model.js";
import type { WebhookRepository } from "./repository.js";

/** Events fanned out per transaction: short transactions, so an upload never waits long for the lock. */
const BATCH = 200;

/**
 * Turns the outbox's pending events into deliveries (repository.fanOut: one transaction per batch
 * with the outbox's markDispatched). Runs when this process appends an event (onAppended), and on
 * every poll for the events of other processes (the CLI, the triggers of releases and builds) and
 * those a crash left pending. One run at a time; a call during a run makes it run again after.
 */
export interface Dispatcher {
  dispatch(): Promise<void>;
  /** Lets a run under way finish (its deliveries wait, pending, for the next start); no run after. */
  stop(): Promise<void>;
}

export function createDispatcher(deps: {
  readonly outbox: EventOutbox;
  readonly repository: WebhookRepository;
  readonly clock: Clock;
  readonly onDeliveries: () => void;
  readonly log: FastifyBaseLogger;
}): Dispatcher {
  const { outbox, repository, clock } = deps;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;

  async function run(): Promise<void> {
    for (;;) {
      const events = await outbox.pending(BATCH);
      if (events.length === 0) return;
      const now = clock.now();
      const made = await repository.fanOut(events, bodyOf, (ids) => outbox.markDispatched(ids, now), now);
      if (made > 0) deps.onDeliveries();
      if (events.length < BATCH) return;
    }
  }

  function dispatch(): Promise<void> {
    if (stopped) return running ?? Promise.resolve();
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = run()
      .catch((error: unknown) => {
        deps.log.warn({ err: error }, "fanning out events to webhooks failed; retried at the next poll");
      })
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          void dispatch();
        }
      });
    return running;
  }

  return {
    dispatch,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

export function bodyOf(event: StoredEvent, webhook: Webhook): string {
  const body: DeliveryBody = {
    event: event.type,
    eventId: event.id,
    occurredAt: event.occurredAt,
    feed: event.feedId === undefined ? null : { id: event.feedId, name: event.feedName ?? "" },
    package: event.package ?? null,
    actor: event.actor,
    data: event.data,
    webhook: { id: webhook.id, name: webhook.name },
  };
  return JSON.stringify(body);
}
