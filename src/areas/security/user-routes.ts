import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { param, type QueryLike } from "../../http/params.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { AUTH_ERRORS, DELETE_METHODS, requiredParam, TAGS, WRITE_METHODS } from "./http.js";
import { ADMINISTER } from "./model.js";
import { emptyBody, errorText, searchQuery, userInputSchema, userSchema } from "./schemas.js";
import type { UserService } from "./user-service.js";

/**
 * Users (docs/compat.md 5.4; ProGet security API, pgutil `security users`): `/api/security/users/...`.
 * Passwords are stored hashed and never returned.
 */
export const userRoutes: FastifyPluginAsync<{ users: UserService }> = async (app, { users }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const access = { need: ADMINISTER };

  api.route({
    method: "GET",
    url: "/api/security/users/list",
    schema: {
      summary: "List users",
      description:
        "An array of SecurityUser; `?search-term=` keeps those whose name, display name or e-mail contains it.",
      tags: TAGS,
      querystring: searchQuery,
      response: { 200: z.array(userSchema), ...AUTH_ERRORS },
    },
    config: { access },
    handler: async (request) =>
      users.listUsers(param(request.query as QueryLike, "search-term", "searchTerm", "search", "filter")),
  });

  api.route({
    method: WRITE_METHODS,
    url: "/api/security/users/add",
    schema: {
      summary: "Create a user",
      description: "Body: SecurityUser (`name` required). Answers the user, without its password.",
      tags: TAGS,
      body: userInputSchema.nullish(),
      response: { 200: userSchema, 400: errorText, ...AUTH_ERRORS, 409: errorText, 415: errorText },
    },
    config: { access },
    preValidation: requireJsonBody,
    handler: async (request) => users.addUser(request.body ?? {}),
  });

  for (const url of ["/api/security/users/edit", "/api/security/users/update"]) {
    api.route({
      method: WRITE_METHODS,
      url,
      schema: {
        summary: url.endsWith("edit") ? "Edit a user" : "Edit a user (the path ProGet's docs use)",
        description:
          "Body: SecurityUser naming an existing user. Members given replace the stored ones (an empty display " +
          "name or e-mail removes it; `groups` replaces the memberships); omitted or null members are kept.",
        tags: TAGS,
        body: userInputSchema.nullish(),
        response: { 200: userSchema, 400: errorText, ...AUTH_ERRORS, 404: errorText, 415: errorText },
      },
      config: { access },
      preValidation: requireJsonBody,
      handler: async (request) => users.editUser(request.body ?? {}),
    });
  }

  api.route({
    method: DELETE_METHODS,
    url: "/api/security/users/delete",
    schema: {
      summary: "Delete a user",
      description:
        "`?user=` names the user. Its memberships, permissions and personal API keys go with it. Deleting a user " +
        "that does not exist is not an error (ProGet's documented behaviour).",
      tags: TAGS,
      querystring: z.object({ user: z.string().optional().describe("User name") }).loose(),
      response: { 200: emptyBody, 400: errorText, ...AUTH_ERRORS },
    },
    config: { access },
    handler: async (request, reply) => {
      await users.deleteUser(requiredParam(request, "user", "user", "name", "username"));
      return reply.code(200).send();
    },
  });
};
