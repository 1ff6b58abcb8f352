import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { queryDoc } from "../../http/query-doc.js";
import { actorName } from "./actor.js";
import { RELEASE_STATUSES } from "./model.js";
import { readInputs } from "./params.js";
import type { ReleaseService } from "./release-service.js";
import {
  applicationRef,
  authorizeReleases,
  commonFilter,
  errors,
  releaseRef,
  statusInput,
  INPUT_NOTE,
  TAGS,
} from "./routes-common.js";
import { releaseInfo, releaseInfoSchema } from "./schemas.js";

/**
 * `/api/releases`, `/create`, `/create-from-template`, `/cancel`, `/restore` (docs/compat.md 7.1, 7.2).
 * Inputs come from the query string and/or a form or JSON body (params.ts).
 */
const addressing = {
  applicationId: "Application id (or name)",
  applicationName: "Application name",
  releaseId: "Release id (not with the application)",
  releaseNumber: "Release number (with the application)",
  reason: "Why it is canceled (cancel only)",
};

export const releaseRoutes: FastifyPluginAsync<{ service: ReleaseService }> = async (app, { service }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const config = { access: { inHandler: true } } as const;

  api.route({
    method: ["GET", "POST"],
    url: "/api/releases",
    schema: {
      summary: "Get releases",
      description: `Releases matching every filter, newest first (docs/compat.md 7.2). ${INPUT_NOTE}`,
      tags: TAGS,
      querystring: queryDoc({
        ...addressing,
        releaseName: "Release name",
        pipelineName: "Pipeline name",
        status: "active, canceled or deployed",
      }),
      response: { 200: z.array(releaseInfoSchema), ...errors },
    },
    config,
    handler: async (request) => {
      await authorizeReleases(request, "Applications_View");
      const inputs = readInputs(request);
      const status = statusInput(inputs, RELEASE_STATUSES);
      const releases = await service.listReleases({ ...commonFilter(inputs), ...(status && { status }) });
      return releases.map(releaseInfo);
    },
  });

  for (const fromTemplate of [false, true]) {
    api.route({
      method: ["POST", "PUT"],
      url: fromTemplate ? "/api/releases/create-from-template" : "/api/releases/create",
      schema: {
        summary: fromTemplate ? "Create a release from a template" : "Create a release",
        description:
          (fromTemplate
            ? "Old BuildMaster docs: like create, with a required `template` (stored) and an optional pipeline. "
            : "Requires the application, `releaseNumber` and `pipelineName`. ") + INPUT_NOTE,
        tags: TAGS,
        querystring: queryDoc({
          ...addressing,
          releaseName: "Release name (default: the number)",
          pipelineName: "Pipeline name",
          template: "Template name",
        }),
        response: { 200: releaseInfoSchema, ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "Releases_Manage");
        const inputs = readInputs(request);
        const releaseName = inputs.get("releaseName");
        const pipelineName = fromTemplate ? inputs.get("pipelineName") : inputs.require("pipelineName");
        const template = fromTemplate ? inputs.require("template") : inputs.get("template");
        const release = await service.createRelease(
          {
            ...applicationRef(inputs),
            releaseNumber: inputs.require("releaseNumber"),
            ...(releaseName !== undefined && { releaseName }),
            ...(pipelineName !== undefined && { pipelineName }),
            ...(template !== undefined && { template }),
            variables: inputs.variables,
          },
          actorName(request.principal),
        );
        return releaseInfo(release);
      },
    });
  }

  for (const action of ["cancel", "restore"] as const) {
    api.route({
      method: ["POST", "PUT"],
      url: `/api/releases/${action}`,
      schema: {
        summary: action === "cancel" ? "Cancel a release" : "Restore a canceled release",
        description:
          (action === "cancel"
            ? "Cancels the release and rejects its active builds (docs/compat.md 7.4). "
            : "Brings a canceled release back to active; its rejected builds stay rejected. ") +
          `Address the release by releaseId, or releaseNumber with the application (not both). ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc(addressing),
        response: { 200: releaseInfoSchema, ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "Releases_Manage");
        const inputs = readInputs(request);
        const by = actorName(request.principal);
        const release =
          action === "cancel"
            ? await service.cancelRelease(releaseRef(inputs), inputs.get("reason"), by)
            : await service.restoreRelease(releaseRef(inputs));
        return releaseInfo(release);
      },
    });
  }
};
