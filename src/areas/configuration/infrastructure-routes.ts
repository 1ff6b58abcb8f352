import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { errorText } from "../../http/errors.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { param } from "../../http/params.js";
import { queryDoc } from "../../http/query-doc.js";
import type { RolesService } from "./roles-service.js";
import { roleInputSchema, serverInputSchema } from "./servers-input.js";
import type { ServersService } from "./servers-service.js";

/**
 * `/api/infrastructure/<servers|roles>/<list|create|update|delete>[/<name>]` (docs/compat.md 8.2):
 * list by GET or POST (`?name=` for one), create 201 + the entity, update 200 (missing properties
 * unchanged, a body `name` renames), delete 200 empty; 404, 409 (name taken, role in use) and 422
 * (a missing role, environment or credential) with text. Servers add agent keys. Environments are
 * the releases area's (environment-routes.ts): one table, one API.
 */
export const errors = {
  400: errorText,
  403: errorText,
  404: errorText,
  409: errorText,
  415: errorText,
  422: errorText,
};
export const VIEW = { access: { need: { api: "infrastructure", attribute: "Infrastructure_View" } } } as const;
export const MANAGE = { access: { need: { api: "infrastructure", attribute: "Infrastructure_Manage" } } } as const;

const entity = z.looseObject({ name: z.string() });
const nameParam = z.object({ name: z.string() });

type Entity = z.infer<typeof entity>;
interface EntityService<I> {
  list(name?: string): Promise<readonly { readonly name: string }[]>;
  create(name: string, input: I): Promise<{ readonly name: string }>;
  update(name: string, input: I): Promise<{ readonly name: string }>;
  delete(name: string): Promise<void>;
}

function crudRoutes<I>(
  kind: "servers" | "roles",
  bodySchema: z.ZodType<I | null | undefined>,
  service: EntityService<I>,
): FastifyPluginAsync {
  const singular = kind.slice(0, -1);
  const tags = ["infrastructure"];
  const base = `/api/infrastructure/${kind}`;
  return async (app) => {
    const api = app.withTypeProvider<ZodTypeProvider>();
    api.route({
      method: ["GET", "POST"],
      url: `${base}/list`,
      schema: {
        summary: `List ${kind}`,
        tags,
        querystring: queryDoc({ name: `Only this ${singular}` }),
        response: { 200: z.array(entity), ...errors },
      },
      config: VIEW,
      handler: async (request) =>
        (await service.list(param(request.query as Record<string, unknown>, "name"))) as Entity[],
    });
    api.post(`${base}/create/:name`, {
      schema: {
        summary: `Create a ${singular}`,
        tags,
        params: nameParam,
        body: bodySchema,
        response: { 201: entity, ...errors },
      },
      config: MANAGE,
      preValidation: requireJsonBody,
      handler: async (request, reply) =>
        reply
          .code(201)
          .header("Cache-Control", "no-store")
          .send((await service.create(request.params.name, (request.body ?? {}) as I)) as Entity),
    });
    // The name in the body instead of the URL (docs/compat.md 8.2 makes `/<name>` optional).
    api.post(`${base}/create`, {
      schema: {
        summary: `Create a ${singular} named by the body's \`name\``,
        tags,
        body: bodySchema,
        response: { 201: entity, ...errors },
      },
      config: MANAGE,
      preValidation: requireJsonBody,
      handler: async (request, reply) => {
        const input = (request.body ?? {}) as I & { name?: string };
        if (!input.name)
          throw invalid("MISSING_NAME", `Give the ${singular}'s name in the URL (create/<name>) or as 'name'.`);
        return reply
          .code(201)
          .header("Cache-Control", "no-store")
          .send((await service.create(input.name, input)) as Entity);
      },
    });
    api.post(`${base}/update/:name`, {
      schema: {
        summary: `Update a ${singular}`,
        tags,
        params: nameParam,
        body: bodySchema,
        response: { 200: entity, ...errors },
      },
      config: MANAGE,
      preValidation: requireJsonBody,
      handler: async (request) => (await service.update(request.params.name, (request.body ?? {}) as I)) as Entity,
    });
    api.route({
      method: ["POST", "DELETE"],
      url: `${base}/delete/:name`,
      schema: { summary: `Delete a ${singular}`, tags, params: nameParam, response: { 200: z.string(), ...errors } },
      config: MANAGE,
      handler: async (request, reply) => {
        await service.delete(request.params.name);
        return reply.type("text/plain").send("");
      },
    });
  };
}

export const infrastructureRoutes: FastifyPluginAsync<{ servers: ServersService; roles: RolesService }> = async (
  app,
  { servers, roles },
) => {
  await app.register(crudRoutes("servers", serverInputSchema, servers));
  await app.register(crudRoutes("roles", roleInputSchema, roles));
  const api = app.withTypeProvider<ZodTypeProvider>();
  const tags = ["infrastructure"];
  // An agent's key: issued (revoking the one before) and answered once as text, or revoked.
  api.post("/api/infrastructure/servers/agent-key/:name", {
    schema: {
      summary: "Issue a new agent key (the old one stops working)",
      tags,
      params: nameParam,
      response: { 200: z.string(), ...errors },
    },
    config: MANAGE,
    handler: async (request, reply) =>
      reply
        .type("text/plain")
        .header("Cache-Control", "no-store")
        .send(await servers.issueAgentKey(request.params.name)),
  });
  api.post("/api/infrastructure/servers/revoke-agent-key/:name", {
    schema: { summary: "Revoke an agent's key", tags, params: nameParam, response: { 200: z.string(), ...errors } },
    config: MANAGE,
    handler: async (request, reply) => {
      await servers.revokeAgentKey(request.params.name);
      return reply.type("text/plain").send("");
    },
  });
};
