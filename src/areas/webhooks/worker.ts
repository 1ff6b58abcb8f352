import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { type SecretBox, SecretUnreadableError } from "../../storage/secrets.js";
import { type Delivery, PING_EVENT } from "./model.js";
import type { WebhookRepository } from "./repository.js";
import type { AttemptInput, AttemptResult } from "./sender.js";

/** Authenticated data of every sealed webhook secret: it opens as nothing else. */
export const SECRET_PURPOSE = "webhook-secret";
/** Webhooks whose opened secret is kept in memory; beyond it the memory starts over. */
const MAX_OPENED_SECRETS = 1000;

/**
 * Sends pending deliveries, at most `concurrency` at once, off every request's path: an upload only
 * writes its event (lifecycle/events.ts), so a slow or dead receiver costs it nothing. A failed
 * attempt is tried again after `retryFirstMs`, then twice as long each time (at most `retryMaxMs`),
 * until `attempts` have been made; a ping is tried once. Attempts cut short by stop() are not
 * counted: the delivery stays pending for the next start.
 */
export interface DeliveryWorker {
  /** Looks for due deliveries now (after a fan-out, a poll, a finished attempt). */
  wake(): void;
  /** Attempts this delivery now, whatever the concurrency, and answers it as recorded. */
  sendNow(delivery: Delivery): Promise<Delivery | undefined>;
  stop(): Promise<void>;
}

export interface DeliveryWorkerDeps {
  readonly repository: WebhookRepository;
  readonly secrets: SecretBox;
  readonly clock: Clock;
  readonly settings: Config["webhooks"];
  readonly attempt: (input: AttemptInput) => Promise<AttemptResult>;
  readonly log: FastifyBaseLogger;
}

export function retryDelayMs(
  attempts: number,
  settings: Pick<Config["webhooks"], "retryFirstMs" | "retryMaxMs">,
): number {
  return Math.min(settings.retryFirstMs * 2 ** Math.min(attempts - 1, 30), settings.retryMaxMs);
}

export function createDeliveryWorker(deps: DeliveryWorkerDeps): DeliveryWorker {
  const { repository, clock, settings, log } = deps;
  const inFlight = new Map<number, { controller: AbortController; done: Promise<void> }>();
  let stopped = false;
  let woken = false;
  /** Opened secrets by their sealed text (a changed secret is another key): one decryption per webhook, not per delivery. */
  const opened = new Map<string, string>();
  const openSecret = (sealed: string): string => {
    let secret = opened.get(sealed);
    if (secret === undefined) {
      secret = deps.secrets.open(sealed, SECRET_PURPOSE);
      if (opened.size >= MAX_OPENED_SECRETS) opened.clear();
      opened.set(sealed, secret);
    }
    return secret;
  };

  async function fill(): Promise<void> {
    const free = settings.concurrency - inFlight.size;
    if (stopped || free <= 0) return;
    const due = await repository.due(clock.now(), free, new Set(inFlight.keys()));
    for (const delivery of due) start(delivery);
  }

  function start(delivery: Delivery): Promise<void> {
    const controller = new AbortController();
    const done = deliver(delivery, controller.signal)
      .catch((error: unknown) => {
        if (!controller.signal.aborted) log.warn({ err: error, delivery: delivery.id }, "a webhook delivery failed");
      })
      .finally(() => {
        inFlight.delete(delivery.id);
        wake();
      });
    inFlight.set(delivery.id, { controller, done });
    return done;
  }

  async function deliver(delivery: Delivery, signal: AbortSignal): Promise<void> {
    const webhook = await repository.find(delivery.webhookId);
    if (webhook === undefined) return;
    let result: AttemptResult;
    try {
      const secret = openSecret(webhook.sealedSecret);
      result = await deps.attempt({ webhook, secret, deliveryId: delivery.id, body: delivery.requestBody, signal });
    } catch (error) {
      if (!(error instanceof SecretUnreadableError)) throw error;
      const why = `The webhook's secret cannot be decrypted (${error.message}); set it again.`;
      result = { ok: false, url: undefined, status: undefined, error: why, durationMs: 0 };
    }
    if (stopped) return;
    const attempts = delivery.attempts + 1;
    const last = result.ok || attempts >= settings.attempts || delivery.eventType === PING_EVENT;
    const now = clock.now();
    await repository.recordAttempt(delivery.id, {
      state: result.ok ? "succeeded" : last ? "failed" : "pending",
      at: now,
      nextAttemptAt: last ? undefined : new Date(now.getTime() + retryDelayMs(attempts, settings)),
      url: result.url,
      status: result.status,
      error: result.error,
      durationMs: result.durationMs,
    });
    const fields = { webhook: webhook.id, delivery: delivery.id, attempts, status: result.status };
    if (result.ok) log.debug(fields, "webhook delivered");
    else
      log.warn(
        { ...fields, reason: result.error },
        last ? "webhook delivery failed for good" : "webhook delivery failed; will retry",
      );
  }

  function wake(): void {
    if (stopped || woken) return;
    woken = true;
    setImmediate(() => {
      woken = false;
      fill().catch((error: unknown) => log.warn({ err: error }, "reading due webhook deliveries failed"));
    });
  }

  return {
    wake,
    async sendNow(delivery) {
      if (stopped) return undefined;
      await start(delivery);
      return repository.findDelivery(delivery.id);
    },
    async stop() {
      stopped = true;
      for (const { controller } of inFlight.values()) controller.abort(new Error("the server is closing"));
      await Promise.all([...inFlight.values()].map(({ done }) => done));
    },
  };
}
