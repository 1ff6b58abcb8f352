import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { requireJsonBody } from "../../http/json-reply.js";
import { AUTH_ERRORS, DELETE_METHODS, requiredId, TAGS, WRITE_METHODS } from "./http.js";
import { ADMINISTER } from "./model.js";
import type { PermissionService } from "./permission-service.js";
import { emptyBody, errorText, permissionInputSchema, permissionSchema } from "./schemas.js";

/**
 * Permissions (docs/compat.md 5.4; ProGet security API, pgutil `security permissions`): grant or deny
 * a task to a user, a group or Anonymous (everyone), globally or for one feed or feed group.
 */
export const permissionRoutes: FastifyPluginAsync<{ permissions: PermissionService }> = async (
  app,
  { permissions },
) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const access = { need: ADMINISTER };

  api.route({
    method: "GET",
    url: "/api/security/permissions/list",
    schema: {
      summary: "List permissions",
      description: "An array of SecurityPermission; Anonymous appears as the user `Anonymous`.",
      tags: TAGS,
      response: { 200: z.array(permissionSchema), ...AUTH_ERRORS },
    },
    config: { access },
    handler: async () => permissions.listPermissions(),
  });

  api.route({
    method: WRITE_METHODS,
    url: "/api/security/permissions/add",
    schema: {
      summary: "Grant or deny a task",
      description:
        "Body: SecurityPermission with exactly one of `user` (a user name, or Anonymous for everyone) or `group`, " +
        "a `task` name, optionally `feed` or `feedGroup` (the task must allow feed scope) and `deny`. A deny wins " +
        "over any grant. Answers the permission with its id.",
      tags: TAGS,
      body: permissionInputSchema.nullish(),
      response: { 200: permissionSchema, 400: errorText, ...AUTH_ERRORS, 409: errorText, 415: errorText },
    },
    config: { access },
    preValidation: requireJsonBody,
    handler: async (request) => permissions.addPermission(request.body ?? {}),
  });

  for (const url of ["/api/security/permissions/delete", "/api/security/permissions/remove"]) {
    api.route({
      method: DELETE_METHODS,
      url,
      schema: {
        summary: url.endsWith("delete") ? "Remove a permission" : "Remove a permission (alternate path)",
        description: "`?permissionId=` (pgutil) or `?id=` names the permission. 404 for an unknown id.",
        tags: TAGS,
        querystring: z
          .object({ permissionId: z.string().optional().describe("Permission id"), id: z.string().optional() })
          .loose(),
        response: { 200: emptyBody, 400: errorText, ...AUTH_ERRORS, 404: errorText },
      },
      config: { access },
      handler: async (request, reply) => {
        await permissions.removePermission(requiredId(request, "permissionId", "permissionId", "id"));
        return reply.code(200).send();
      },
    });
  }
};
