import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import type { CatalogService } from "./catalog-service.js";
import type { DeploymentPlan } from "./model.js";
import { errors } from "./routes-common.js";

/**
 * `/api/plans/create|get|list|update|delete` (a Wharf management addition; JSON bodies): named
 * deployment plans that pipeline stages refer to by `planName`. Steps are validated by the
 * executor's schema (src/jobs/plan-steps.ts); access as for pipelines.
 */
const TAGS = ["pipelines"];
const steps = z
  .array(z.record(z.string(), z.unknown()))
  .describe("Steps: log, warn, fail, sleep, set-variable, http, deploy-package");
const planSchema = z.object({ id: z.number().int(), name: z.string(), steps }).describe("Deployment plan");
const nameParam = z.object({ name: z.string() });

const planJson = (plan: DeploymentPlan): z.infer<typeof planSchema> => ({
  id: plan.id,
  name: plan.name,
  steps: plan.steps.map((step): Record<string, unknown> => ({ ...step })),
});

export const planRoutes: FastifyPluginAsync<{ catalog: CatalogService }> = async (app, { catalog }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const manage = { access: { need: { attribute: "Pipelines_Manage" } } } as const;
  const view = { access: { need: { api: "releases", attribute: "Applications_View" } } } as const;

  api.post("/api/plans/create", {
    schema: {
      summary: "Create a deployment plan",
      tags: TAGS,
      body: z.strictObject({ name: z.string().min(1).max(100), steps: z.array(z.unknown()) }),
      response: { 200: planSchema, ...errors },
    },
    config: manage,
    handler: async (request) => planJson(await catalog.createPlan(request.body.name, request.body.steps)),
  });
  api.route({
    method: ["GET", "POST"],
    url: "/api/plans/list",
    schema: { summary: "List deployment plans", tags: TAGS, response: { 200: z.array(planSchema), ...errors } },
    config: view,
    handler: async () => (await catalog.listPlans()).map(planJson),
  });
  api.route({
    method: ["GET", "POST"],
    url: "/api/plans/get/:name",
    schema: {
      summary: "Get a deployment plan",
      tags: TAGS,
      params: nameParam,
      response: { 200: planSchema, ...errors },
    },
    config: view,
    handler: async (request) => planJson(await catalog.getPlan(request.params.name)),
  });
  api.post("/api/plans/update/:name", {
    schema: {
      summary: "Replace a deployment plan's steps",
      description: "Deployments already created keep the steps they copied. Plans cannot be renamed.",
      tags: TAGS,
      params: nameParam,
      body: z.strictObject({ name: z.string().optional(), steps: z.array(z.unknown()) }),
      response: { 200: planSchema, ...errors },
    },
    config: manage,
    handler: async (request) => {
      const { name } = request.params;
      // Stages refer to plans by name: a rename would leave them pointing at nothing.
      if (request.body.name !== undefined && request.body.name.toLowerCase() !== name.toLowerCase()) {
        throw invalid("PLAN_RENAME_UNSUPPORTED", "A deployment plan cannot be renamed; create a new one.");
      }
      return planJson(await catalog.updatePlan(name, request.body.steps));
    },
  });
  api.route({
    method: ["POST", "DELETE"],
    url: "/api/plans/delete/:name",
    schema: {
      summary: "Delete a deployment plan (409 while a pipeline uses it)",
      tags: TAGS,
      params: nameParam,
      response: { 200: z.string(), ...errors },
    },
    config: manage,
    handler: async (request, reply) => {
      await catalog.deletePlan(request.params.name);
      return reply.type("text/plain").send("");
    },
  });
};
