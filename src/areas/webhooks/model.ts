import { EVENT_TYPES, type EventType } from "../../lifecycle/events.js";

/** Webhooks (issue 17 section 3): what is stored and what the API shows. */

/** The event a test sends (POST /api/webhooks/<id>/test); never stored in the outbox. */
export const PING_EVENT = "ping";
export type DeliveredEvent = EventType | typeof PING_EVENT;

export const WEBHOOK_EVENTS: readonly EventType[] = EVENT_TYPES;
export const WEBHOOK_METHODS = ["POST", "PUT", "PATCH"] as const;
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

export interface Webhook {
  readonly id: number;
  readonly name: string;
  /** undefined: global (every feed's events, and those of no feed). */
  readonly feedId: number | undefined;
  readonly events: readonly EventType[];
  readonly urlTemplate: string;
  readonly method: WebhookMethod;
  readonly headers: Readonly<Record<string, string>>;
  /** Sealed (storage/secrets.ts): opened only to sign a request. */
  readonly sealedSecret: string;
  readonly active: boolean;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type DeliveryState = "pending" | "succeeded" | "failed";

export interface Delivery {
  readonly id: number;
  readonly webhookId: number;
  readonly eventId: number | undefined;
  readonly eventType: string;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly nextAttemptAt: string | undefined;
  readonly createdAt: string;
  readonly requestBody: string;
  readonly requestUrl: string | undefined;
  readonly lastAttemptAt: string | undefined;
  readonly lastStatus: number | undefined;
  readonly lastError: string | undefined;
  readonly lastDurationMs: number | undefined;
  readonly completedAt: string | undefined;
}

/** The JSON body of every delivery: what happened, where, to what, and who did it. */
export interface DeliveryBody {
  readonly event: DeliveredEvent;
  /** The outbox row's id (the same on every retry: receivers may deduplicate on it); null for a ping. */
  readonly eventId: number | null;
  readonly occurredAt: string;
  /** The feed's name when the event happened. */
  readonly feed: { readonly id: number; readonly name: string } | null;
  readonly package: { readonly group: string; readonly name: string; readonly version: string } | null;
  readonly actor: string;
  readonly data: Readonly<Record<string, unknown>>;
  readonly webhook: { readonly id: number; readonly name: string };
}
