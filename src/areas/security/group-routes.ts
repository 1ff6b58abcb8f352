import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { requireJsonBody } from "../../http/json-reply.js";
import { AUTH_ERRORS, DELETE_METHODS, requiredParam, TAGS, WRITE_METHODS } from "./http.js";
import { ADMINISTER } from "./model.js";
import { emptyBody, errorText, groupInputSchema, groupSchema } from "./schemas.js";
import type { UserService } from "./user-service.js";

/**
 * Groups (docs/compat.md 5.4; ProGet security API, pgutil `security groups`): `/api/security/groups/...`.
 * pgutil changes membership by posting the whole member list to groups/add, so add creates the
 * group or replaces the members of an existing one; members/add and members/remove are Wharf's
 * one-member shortcuts.
 */
export const groupRoutes: FastifyPluginAsync<{ users: UserService }> = async (app, { users }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const access = { need: ADMINISTER };
  const memberQuery = z
    .object({
      group: z.string().optional().describe("Group name"),
      user: z.string().optional().describe("User name"),
    })
    .loose();

  api.route({
    method: "GET",
    url: "/api/security/groups/list",
    schema: {
      summary: "List groups",
      description: "An array of SecurityGroup with their members.",
      tags: TAGS,
      response: { 200: z.array(groupSchema), ...AUTH_ERRORS },
    },
    config: { access },
    handler: async () => users.listGroups(),
  });

  api.route({
    method: WRITE_METHODS,
    url: "/api/security/groups/add",
    schema: {
      summary: "Create a group, or set its members",
      description:
        "Body: SecurityGroup (`name` required). A new group is created; when `users` is given, it replaces the " +
        "members (of a new or an existing group), as pgutil's `security groups members add|remove` expect.",
      tags: TAGS,
      body: groupInputSchema.nullish(),
      response: { 200: groupSchema, 400: errorText, ...AUTH_ERRORS, 415: errorText },
    },
    config: { access },
    preValidation: requireJsonBody,
    handler: async (request) => users.saveGroup(request.body ?? {}),
  });

  api.route({
    method: DELETE_METHODS,
    url: "/api/security/groups/delete",
    schema: {
      summary: "Delete a group",
      description:
        "`?group=` names the group; its permissions go with it. Deleting a group that does not exist is not an " +
        "error (ProGet's documented behaviour).",
      tags: TAGS,
      querystring: z.object({ group: z.string().optional().describe("Group name") }).loose(),
      response: { 200: emptyBody, 400: errorText, ...AUTH_ERRORS },
    },
    config: { access },
    handler: async (request, reply) => {
      await users.deleteGroup(requiredParam(request, "group", "group", "name"));
      return reply.code(200).send();
    },
  });

  for (const [action, member] of [
    ["add", true],
    ["remove", false],
  ] as const) {
    api.route({
      method: member ? WRITE_METHODS : DELETE_METHODS,
      url: `/api/security/groups/members/${action}`,
      schema: {
        summary: member ? "Add a user to a group" : "Remove a user from a group",
        description: "`?group=` and `?user=` (or the same members in a JSON body). Answers the group.",
        tags: TAGS,
        querystring: memberQuery,
        response: { 200: groupSchema, 400: errorText, ...AUTH_ERRORS, 404: errorText },
      },
      config: { access },
      handler: async (request) =>
        users.setMembership(
          requiredParam(request, "group", "group", "name"),
          requiredParam(request, "user", "user", "member"),
          member,
        ),
    });
  }
};
