import { z } from "zod";
import { errorText } from "../../http/errors.js";
import { WEBHOOK_EVENTS, WEBHOOK_METHODS } from "./model.js";

/**
 * Request and response shapes of `/api/webhooks`. Inputs check JSON types only; the rules are the
 * service's. Outputs are exact: the serializer drops anything not listed, so a sealed secret can
 * never leave through them (the plain one is in the create answer alone).
 */
export { errorText };

const text = (max: number) => z.string().max(max);

export const webhookInputSchema = z.object({
  name: text(1000).nullish().describe("Required on create; at most 100 characters"),
  feed: text(1000)
    .nullish()
    .describe(
      "The feed whose events it hears (needs Admin_ManageFeed there); absent or null: global (Admin_ConfigureProGet). Fixed once created",
    ),
  events: z
    .array(text(100))
    .max(100)
    .nullish()
    .describe(`Any of ${WEBHOOK_EVENTS.join(", ")}; default all`),
  url: text(5000)
    .nullish()
    .describe(
      "Required on create: http(s) URL; {feed} {group} {name} {version} {event} in its path or query are replaced, URL-encoded",
    ),
  method: text(10)
    .nullish()
    .describe(`${WEBHOOK_METHODS.join(", ")}; default POST`),
  headers: z
    .record(z.string(), z.unknown())
    .nullish()
    .describe(
      "Extra request headers (not hop-by-hop ones, Host, Content-Length, Content-Type or X-Wharf-*); replaced wholesale",
    ),
  secret: text(1000)
    .nullish()
    .describe(
      "Write-only signing secret, 16-200 printable characters; generated on create when absent (and answered once)",
    ),
  active: z.boolean().nullish().describe("Default true; an inactive webhook gets no deliveries sent"),
});

export const webhookSchema = z.object({
  id: z.number(),
  name: z.string(),
  feed: z.string().nullable(),
  events: z.array(z.string()),
  url: z.string(),
  method: z.string(),
  headers: z.record(z.string(), z.string()),
  active: z.boolean(),
  createdBy: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const createdWebhookSchema = webhookSchema.extend({
  secret: z.string().describe("The signing secret: shown this once, never again"),
});

export const deliverySchema = z.object({
  id: z.number(),
  webhookId: z.number(),
  event: z.string(),
  eventId: z.number().nullable(),
  state: z.enum(["pending", "succeeded", "failed"]),
  attempts: z.number(),
  createdAt: z.string(),
  nextAttemptAt: z.string().nullable(),
  lastAttemptAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  request: z.object({ url: z.string().nullable(), body: z.string() }),
  response: z.object({
    status: z.number().nullable(),
    error: z.string().nullable(),
    durationMs: z.number().nullable(),
  }),
});

export const webhookIdParams = z.object({ id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });

export const deliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(500).default(50),
  before: z.coerce
    .number()
    .int()
    .min(1)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .describe("Deliveries older than this id (paging)"),
});
