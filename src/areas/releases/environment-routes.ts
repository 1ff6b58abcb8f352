import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { requireJsonBody } from "../../http/json-reply.js";
import { queryDoc } from "../../http/query-doc.js";
import { param } from "../../http/params.js";
import type { CatalogService } from "./catalog-service.js";
import type { EnvironmentDraft } from "./model.js";
import { errors } from "./routes-common.js";
import { environmentJson, environmentSchema } from "./schemas.js";

/**
 * `/api/infrastructure/environments/list|create|update|delete` (docs/compat.md 8.2, 7.8): the name in
 * the URL identifies the environment, a `name` in the body renames it, missing properties stay
 * unchanged; `parentName` and `parent` are both accepted (null removes the parent). A body of
 * another type arrives as a raw stream (http/body-parsers.ts), which the all-optional schema would
 * take for an empty object and create or update from it: 415, as the other JSON routes answer.
 */
const TAGS = ["environments"];
const body = z
  .looseObject({
    name: z.string().optional(),
    parentName: z.string().nullable().optional(),
    parent: z.string().nullable().optional(),
    active: z.boolean().optional(),
    variables: z.record(z.string(), z.string()).optional(),
  })
  // No body at all (some clients POST with none, docs/compat.md 0.2) reaches the schema as null.
  .nullish();
const nameParam = z.object({ name: z.string() });

function changes(input: z.infer<typeof body>): Partial<EnvironmentDraft> {
  if (!input) return {};
  const parentGiven = "parentName" in input || "parent" in input;
  const parent = input.parentName ?? input.parent ?? undefined;
  return {
    ...(input.name !== undefined && { name: input.name }),
    ...(parentGiven && { parentName: parent }),
    ...(input.active !== undefined && { active: input.active }),
    ...(input.variables !== undefined && { variables: input.variables }),
  };
}

export const environmentRoutes: FastifyPluginAsync<{ catalog: CatalogService }> = async (app, { catalog }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const manage = { access: { need: { api: "infrastructure", attribute: "Infrastructure_Manage" } } } as const;
  const base = "/api/infrastructure/environments";

  api.route({
    method: ["GET", "POST"],
    url: `${base}/list`,
    schema: {
      summary: "List environments",
      tags: TAGS,
      querystring: queryDoc({ name: "Only this environment" }),
      response: { 200: z.array(environmentSchema), ...errors },
    },
    // Environments are shared by releases (pipeline stages) and configuration management (servers).
    config: { access: { need: { api: ["releases", "infrastructure"], attribute: "Infrastructure_View" } } },
    handler: async (request) =>
      (await catalog.listEnvironments(param(request.query as Record<string, unknown>, "name"))).map(environmentJson),
  });
  api.post(`${base}/create/:name`, {
    schema: {
      summary: "Create an environment",
      tags: TAGS,
      params: nameParam,
      body,
      response: { 201: environmentSchema, ...errors },
    },
    config: manage,
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const change = changes(request.body);
      const draft: EnvironmentDraft = { active: true, variables: {}, ...change, name: request.params.name };
      return reply.code(201).send(environmentJson(await catalog.createEnvironment(draft)));
    },
  });
  api.post(`${base}/update/:name`, {
    schema: {
      summary: "Update an environment",
      tags: TAGS,
      params: nameParam,
      body,
      response: { 200: environmentSchema, ...errors },
    },
    config: manage,
    preValidation: requireJsonBody,
    handler: async (request) =>
      environmentJson(await catalog.updateEnvironment(request.params.name, changes(request.body))),
  });
  api.route({
    method: ["POST", "DELETE"],
    url: `${base}/delete/:name`,
    schema: {
      summary: "Delete an environment",
      tags: TAGS,
      params: nameParam,
      response: { 200: z.string(), ...errors },
    },
    config: manage,
    handler: async (request, reply) => {
      await catalog.deleteEnvironment(request.params.name);
      return reply.type("text/plain").send("");
    },
  });
};
