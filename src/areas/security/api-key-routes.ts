import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { requireJsonBody } from "../../http/json-reply.js";
import type { ApiKeyService } from "./api-key-service.js";
import { AUTH_ERRORS, DELETE_METHODS, requiredId, WRITE_METHODS } from "./http.js";
import { ADMINISTER } from "./model.js";
import { apiKeyInfoSchema, apiKeyInputSchema, emptyBody, errorText, idQuery } from "./schemas.js";

/**
 * API keys (docs/compat.md 5.4; pgutil `apikeys`): `/api/api-keys/list|create|delete`. Only
 * full-control System keys and administrators (users, or their personal keys, granted
 * Admin_ConfigureProGet) may use them. Keys are stored as SHA-256 only and shown once, on create.
 */
export const apiKeyRoutes: FastifyPluginAsync<{ apiKeys: ApiKeyService }> = async (app, { apiKeys }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ["api-keys"];

  api.route({
    method: "GET",
    url: "/api/api-keys/list",
    schema: {
      summary: "List API keys",
      description: "An array of ApiKeyInfo, oldest first; never the keys themselves.",
      tags,
      response: { 200: z.array(apiKeyInfoSchema), ...AUTH_ERRORS },
    },
    config: { access: { need: ADMINISTER } },
    handler: async () => apiKeys.list(),
  });

  api.route({
    method: WRITE_METHODS,
    url: "/api/api-keys/create",
    schema: {
      summary: "Create an API key",
      description:
        "Body: ApiKeyInfo. `type` is required; System keys need `systemApis`, Feed keys exactly one of `feed` or " +
        "`feedGroup` and `packagePermissions`, Personal keys an existing `user`. Answers 201 with the ApiKeyInfo " +
        "including `key`: the only time the key is shown.",
      tags,
      body: apiKeyInputSchema.nullish(),
      response: { 201: apiKeyInfoSchema, 400: errorText, ...AUTH_ERRORS, 409: errorText, 415: errorText },
    },
    config: { access: { need: ADMINISTER } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const created = await apiKeys.create(request.body ?? {});
      return reply.code(201).send(created);
    },
  });

  api.route({
    method: DELETE_METHODS,
    url: "/api/api-keys/delete",
    schema: {
      summary: "Delete an API key",
      description: "`?id=` names the key (see list). Answers 200 with an empty body, 404 for an unknown id.",
      tags,
      querystring: idQuery,
      response: { 200: emptyBody, 400: errorText, ...AUTH_ERRORS, 404: errorText },
    },
    config: { access: { need: ADMINISTER } },
    handler: async (request, reply) => {
      await apiKeys.delete(requiredId(request, "id", "id"));
      return reply.code(200).send();
    },
  });
};
