import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { queryDoc } from "../../http/query-doc.js";
import { parseBoolean } from "../../http/params.js";
import { type CatalogService, parseReleaseUsage, parseScheme } from "./catalog-service.js";
import type { ApplicationDraft } from "./model.js";
import { type Inputs, readInputs } from "./params.js";
import { errors } from "./routes-common.js";
import { applicationInfo, applicationInfoSchema } from "./schemas.js";

/**
 * `/api/applications/create|update|list` (docs/compat.md 7.8 ApplicationInfo; a Wharf management
 * addition). ApplicationInfo arrives as JSON, form or query. Managing needs a full-control key or
 * `Admin_ManageApplications`; listing also the `releases` scope or `Applications_View`.
 */
const TAGS = ["applications"];
const fields = queryDoc({
  id: "Application id (update: identifies it)",
  name: "Name (update without id: identifies it)",
  description: "Description",
  groupName: "Application group",
  active: "true/false",
  releaseUsage: "Required (default), Optional or Disabled",
  buildNumberScheme: "Sequential (default), DateTimeBased or Unique",
});

function changes(inputs: Inputs): Partial<ApplicationDraft> {
  const description = inputs.get("description");
  const groupName = inputs.get("groupName");
  const active = inputs.get("active");
  const usage = inputs.get("releaseUsage");
  const scheme = inputs.get("buildNumberScheme");
  return {
    ...(description !== undefined && { description }),
    ...(groupName !== undefined && { groupName }),
    ...(active !== undefined && { active: parseBoolean(active, true) }),
    ...(usage !== undefined && { releaseUsage: parseReleaseUsage(usage) }),
    ...(scheme !== undefined && { buildNumberScheme: parseScheme(scheme) }),
  };
}

export const applicationRoutes: FastifyPluginAsync<{ catalog: CatalogService }> = async (app, { catalog }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const manage = { access: { need: { attribute: "Admin_ManageApplications" } } } as const;

  api.post("/api/applications/create", {
    schema: {
      summary: "Create an application",
      tags: TAGS,
      querystring: fields,
      response: { 200: applicationInfoSchema, ...errors },
    },
    config: manage,
    handler: async (request) => {
      const inputs = readInputs(request);
      const draft: ApplicationDraft = {
        name: inputs.require("name"),
        active: true,
        releaseUsage: "required",
        buildNumberScheme: "sequential",
        ...changes(inputs),
      };
      return applicationInfo(await catalog.createApplication(draft));
    },
  });

  api.post("/api/applications/update", {
    schema: {
      summary: "Update an application",
      description: "Identified by `id` (then `name` renames) or by `name`; missing fields stay unchanged.",
      tags: TAGS,
      querystring: fields,
      response: { 200: applicationInfoSchema, ...errors },
    },
    config: manage,
    handler: async (request) => {
      const inputs = readInputs(request);
      const id = inputs.id("id", "applicationId");
      const name = inputs.get("name");
      if (id === undefined && name === undefined) {
        throw invalid("MISSING_PARAMETER", "The parameter 'id' or 'name' is required.");
      }
      const change = { ...changes(inputs), ...(id !== undefined && name !== undefined && { name }) };
      return applicationInfo(
        await catalog.updateApplication(id !== undefined ? { id } : { name: name as string }, change),
      );
    },
  });

  api.route({
    method: ["GET", "POST"],
    url: "/api/applications/list",
    schema: { summary: "List applications", tags: TAGS, response: { 200: z.array(applicationInfoSchema), ...errors } },
    config: { access: { need: { api: "releases", attribute: "Applications_View" } } },
    handler: async () => (await catalog.listApplications()).map(applicationInfo),
  });
};
