import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import type { CatalogService } from "./catalog-service.js";
import type { PipelineDraft } from "./model.js";
import { parseSteps } from "./plan-steps.js";
import { errors } from "./routes-common.js";
import { pipelineJson, pipelineSchema } from "./schemas.js";

/**
 * `/api/pipelines/create|get|list|update|delete` (a Wharf management addition; JSON bodies).
 * Stages are ordered; each names its environment and either a stored plan or inline steps.
 */
const TAGS = ["pipelines"];
const stage = z.strictObject({
  name: z.string().min(1).max(50),
  environmentName: z.string().min(1).max(50).optional(),
  planName: z.string().min(1).max(100).optional(),
  // Checked by parseSteps (the executor's schema) for messages that name the stage and step.
  plan: z
    .array(z.record(z.string(), z.unknown()))
    .optional()
    .describe("Inline steps: log, warn, fail, sleep, set-variable, http, deploy-package (as /api/plans)"),
});
const body = z.strictObject({
  name: z.string().min(1).max(100),
  stages: z.array(stage).min(1).max(50),
  rejectOlderBuilds: z
    .boolean()
    .optional()
    .describe("A newer build entering a stage rejects older ones (default true)"),
});
const nameParam = z.object({ name: z.string() });

function draft(input: z.infer<typeof body>): PipelineDraft {
  return {
    name: input.name,
    rejectOlderBuilds: input.rejectOlderBuilds ?? true,
    stages: input.stages.map((s) => ({
      name: s.name,
      ...(s.environmentName !== undefined && { environmentName: s.environmentName }),
      ...(s.planName !== undefined && { planName: s.planName }),
      ...(s.plan !== undefined && { plan: parseSteps(s.plan, `Stage '${s.name}'`) }),
    })),
  };
}

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
