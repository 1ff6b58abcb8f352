import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { requireJsonBody } from "../../http/json-reply.js";
import { AUTH_ERRORS, DELETE_METHODS, requiredParam, TAGS, WRITE_METHODS } from "./http.js";
import { ADMINISTER } from "./model.js";
import type { PermissionService } from "./permission-service.js";
import { attributeSchema, emptyBody, errorText, taskInputSchema, taskSchema } from "./schemas.js";

/**
 * Tasks and privilege attributes (docs/compat.md 5.4 and 9; ProGet security API, pgutil `security
 * tasks` and `security attributes`). Built-in tasks (Administer, View & Download Packages,
 * Publish Packages, Manage Feeds) come from migrations and cannot be changed or deleted.
 */
export const taskRoutes: FastifyPluginAsync<{ permissions: PermissionService }> = async (app, { permissions }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const access = { need: ADMINISTER };

  api.route({
    method: "GET",
    url: "/api/security/tasks/list",
    schema: {
      summary: "List tasks",
      description: "An array of SecurityTask: built-in tasks first, then custom ones by name.",
      tags: TAGS,
      response: { 200: z.array(taskSchema), ...AUTH_ERRORS },
    },
    config: { access },
    handler: async () => permissions.listTasks(),
  });

  api.route({
    method: WRITE_METHODS,
    url: "/api/security/tasks/add",
    schema: {
      summary: "Create a custom task",
      description:
        "Body: SecurityTask (`name` and `attributes` required). Attributes are matched case-insensitively and " +
        "stored in their canonical spelling (see attributes/list). 409 when the name is taken.",
      tags: TAGS,
      body: taskInputSchema.nullish(),
      response: { 200: taskSchema, 400: errorText, ...AUTH_ERRORS, 409: errorText, 415: errorText },
    },
    config: { access },
    preValidation: requireJsonBody,
    handler: async (request) => permissions.addTask(request.body ?? {}),
  });

  api.route({
    method: DELETE_METHODS,
    url: "/api/security/tasks/delete",
    schema: {
      summary: "Delete a custom task",
      description:
        "`?task=` names the task; permissions that use it go with it. Built-in tasks cannot be deleted (400).",
      tags: TAGS,
      querystring: z.object({ task: z.string().optional().describe("Task name") }).loose(),
      response: { 200: emptyBody, 400: errorText, ...AUTH_ERRORS, 404: errorText },
    },
    config: { access },
    handler: async (request, reply) => {
      await permissions.deleteTask(requiredParam(request, "task", "task", "name"));
      return reply.code(200).send();
    },
  });

  api.route({
    method: "GET",
    url: "/api/security/attributes/list",
    schema: {
      summary: "List privilege attributes",
      description:
        "An array of SecurityTaskAttribute: every attribute a task may carry, and whether it may be feed-scoped.",
      tags: TAGS,
      response: { 200: z.array(attributeSchema), ...AUTH_ERRORS },
    },
    config: { access },
    handler: async () => permissions.listAttributes(),
  });
};
