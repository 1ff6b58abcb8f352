import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { principalName } from "../../domain/principal.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { presentDelivery } from "./present.js";
import {
  createdWebhookSchema,
  deliveriesQuery,
  deliverySchema,
  errorText,
  webhookIdParams,
  webhookInputSchema,
  webhookSchema,
} from "./schemas.js";
import type { WebhookCaller, WebhookService } from "./service.js";

/**
 * Webhooks (issue 17 section 3): `/api/webhooks/...`. A global webhook needs Admin_ConfigureProGet
 * (System keys: full-control), a feed's Admin_ManageFeed on that feed (System keys: the `feeds`
 * scope). The need depends on the webhook, so it is decided in the handler (the service asks).
 * The secret is written only: answered once, on create.
 */
const PREFIX = "/api/webhooks";
const TAGS = ["webhooks"];
const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;
const IN_HANDLER = { access: { inHandler: true as const } };

/** The request as the service's caller: its access checks and its actor (never a secret). */
export function callerOf(request: FastifyRequest): WebhookCaller {
  return {
    actor: principalName(request.principal) ?? "Anonymous",
    can: (need) => request.can(need),
    authorize: (need) => request.authorize(need),
  };
}

export const webhookRoutes: FastifyPluginAsync<{ webhooks: WebhookService }> = async (app, { webhooks }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.get(
    PREFIX,
    {
      schema: {
        summary: "List webhooks",
        description: "Those the caller may manage.",
        tags: TAGS,
        response: { 200: z.array(webhookSchema), ...errors },
      },
      config: IN_HANDLER,
    },
    async (request) => webhooks.list(callerOf(request)),
  );

  api.post(
    PREFIX,
    {
      schema: {
        summary: "Create a webhook",
        description: "Answers 201 with the webhook and its signing secret, which is never shown again.",
        tags: TAGS,
        body: webhookInputSchema,
        response: { 201: createdWebhookSchema, ...errors, 415: errorText },
      },
      config: IN_HANDLER,
      preValidation: requireJsonBody,
    },
    async (request, reply) => {
      const { webhook, secret } = await webhooks.create(request.body, callerOf(request));
      return reply.code(201).send({ ...webhook, secret });
    },
  );

  api.get(
    `${PREFIX}/:id`,
    {
      schema: {
        summary: "Get a webhook",
        tags: TAGS,
        params: webhookIdParams,
        response: { 200: webhookSchema, ...errors },
      },
      config: IN_HANDLER,
    },
    async (request) => webhooks.get(request.params.id, callerOf(request)),
  );

  api.route({
    method: ["PUT", "PATCH"],
    url: `${PREFIX}/:id`,
    schema: {
      summary: "Change a webhook",
      description: "Members left out keep their value; `secret` replaces the stored one; `feed` cannot change.",
      tags: TAGS,
      params: webhookIdParams,
      body: webhookInputSchema,
      response: { 200: webhookSchema, ...errors, 415: errorText },
    },
    config: IN_HANDLER,
    preValidation: requireJsonBody,
    handler: async (request) => webhooks.update(request.params.id, request.body, callerOf(request)),
  });

  api.delete(
    `${PREFIX}/:id`,
    {
      schema: {
        summary: "Delete a webhook",
        description: "Its delivery log goes with it.",
        tags: TAGS,
        params: webhookIdParams,
        response: { 204: z.void(), ...errors },
      },
      config: IN_HANDLER,
    },
    async (request, reply) => {
      await webhooks.delete(request.params.id, callerOf(request));
      return reply.code(204).send();
    },
  );

  api.post(
    `${PREFIX}/:id/test`,
    {
      schema: {
        summary: "Send a test event",
        description: "Sends a `ping` event now (one attempt, no retry) and answers its delivery as recorded.",
        tags: TAGS,
        params: webhookIdParams,
        response: { 200: deliverySchema, ...errors },
      },
      config: IN_HANDLER,
    },
    async (request) => presentDelivery(await webhooks.test(request.params.id, callerOf(request))),
  );

  api.get(
    `${PREFIX}/:id/deliveries`,
    {
      schema: {
        summary: "A webhook's delivery log",
        description:
          "Newest first: each delivery's request (URL, body), last response status or error, timing and state.",
        tags: TAGS,
        params: webhookIdParams,
        querystring: deliveriesQuery,
        response: { 200: z.array(deliverySchema), ...errors },
      },
      config: IN_HANDLER,
    },
    async (request) => {
      const { limit, before } = request.query;
      const page = before === undefined ? { limit } : { limit, before };
      return (await webhooks.deliveries(request.params.id, callerOf(request), page)).map(presentDelivery);
    },
  );
};
