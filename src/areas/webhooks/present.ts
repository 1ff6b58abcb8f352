import type { z } from "zod";
import type { Delivery } from "./model.js";
import type { deliverySchema } from "./schemas.js";

/** A delivery as the API and the CLI show it: what was sent, and what came back. */
export function presentDelivery(delivery: Delivery): z.infer<typeof deliverySchema> {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    event: delivery.eventType,
    eventId: delivery.eventId ?? null,
    state: delivery.state,
    attempts: delivery.attempts,
    createdAt: delivery.createdAt,
    nextAttemptAt: delivery.state === "pending" ? (delivery.nextAttemptAt ?? null) : null,
    lastAttemptAt: delivery.lastAttemptAt ?? null,
    completedAt: delivery.completedAt ?? null,
    request: { url: delivery.requestUrl ?? null, body: delivery.requestBody },
    response: {
      status: delivery.lastStatus ?? null,
      error: delivery.lastError ?? null,
      durationMs: delivery.lastDurationMs ?? null,
    },
  };
}
