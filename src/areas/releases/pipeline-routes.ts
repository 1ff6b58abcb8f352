import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { CatalogService } from "./catalog-service.js";
import { pipelineDraft, pipelineInputSchema } from "./pipeline-input.js";
import { errors } from "./routes-common.js";
import { pipelineJson, pipelineSchema } from "./schemas.js";

/**
 * `/api/pipelines/create|get|list|update|delete` (a Wharf management addition; JSON bodies of
 * pipeline-input.ts).
 */
const TAGS = ["pipelines"];
const body = pipelineInputSchema;
const nameParam = z.object({ name: z.string() });
const draft = pipelineDraft;

export const pipelineRoutes: FastifyPluginAsync<{ catalog: CatalogService }> = async (app, { catalog }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const manage = { access: { need: { attribute: "Pipelines_Manage" } } } as const;
  const view = { access: { need: { api: "releases", attribute: "Applications_View" } } } as const;

  api.post("/api/pipelines/create", {
    schema: { summary: "Create a pipeline", tags: TAGS, body, response: { 200: pipelineSchema, ...errors } },
    config: manage,
    handler: async (request) => pipelineJson(await catalog.createPipeline(draft(request.body))),
  });
  api.route({
    method: ["GET", "POST"],
    url: "/api/pipelines/list",
    schema: { summary: "List pipelines", tags: TAGS, response: { 200: z.array(pipelineSchema), ...errors } },
    config: view,
    handler: async () => (await catalog.listPipelines()).map(pipelineJson),
  });
  api.route({
    method: ["GET", "POST"],
    url: "/api/pipelines/get/:name",
    schema: { summary: "Get a pipeline", tags: TAGS, params: nameParam, response: { 200: pipelineSchema, ...errors } },
    config: view,
    handler: async (request) => pipelineJson(await catalog.getPipeline(request.params.name)),
  });
  api.post("/api/pipelines/update/:name", {
    schema: {
      summary: "Replace a pipeline",
      description: "Replaces name, stages and setting; existing deployments keep what they copied.",
      tags: TAGS,
      params: nameParam,
      body,
      response: { 200: pipelineSchema, ...errors },
    },
    config: manage,
    handler: async (request) => pipelineJson(await catalog.updatePipeline(request.params.name, draft(request.body))),
  });
  api.route({
    method: ["POST", "DELETE"],
    url: "/api/pipelines/delete/:name",
    schema: {
      summary: "Delete a pipeline (409 while used)",
      tags: TAGS,
      params: nameParam,
      response: { 200: z.string(), ...errors },
    },
    config: manage,
    handler: async (request, reply) => {
      await catalog.deletePipeline(request.params.name);
      return reply.type("text/plain").send("");
    },
  });
};
