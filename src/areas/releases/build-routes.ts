import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { queryDoc } from "../../http/query-doc.js";
import { actorName } from "./actor.js";
import { isJenkinsBuildMasterPlugin, JENKINS_FIRST_STAGE_WINDOW_MS } from "./jenkins-plugin.js";
import { BUILD_STATUSES, DEPLOYMENT_STATUSES } from "./model.js";
import { LEGACY_PACKAGE_ALIASES, readInputs } from "./params.js";
import type { ReleaseService } from "./release-service.js";
import {
  authorizeReleases,
  buildRef,
  commonFilter,
  errors,
  releaseRef,
  statusInput,
  INPUT_NOTE,
  TAGS,
} from "./routes-common.js";
import { buildInfo, buildInfoSchema, deploymentInfo, deploymentInfoSchema } from "./schemas.js";

/**
 * `/api/releases/builds[/create|/deploy|/reject|/deployments]` (docs/compat.md 7.2), and the
 * BuildMaster 5 aliases `/api/releases/packages/...` that take `packageId`/`packageNumber`
 * (BuildMaster.Net: everything in the query string, PUT with an empty text/plain body).
 */
const addressing = {
  applicationId: "Application id (or name)",
  applicationName: "Application name",
  releaseId: "Release id",
  releaseNumber: "Release number (with the application)",
  buildId: "Build id (legacy: packageId)",
  buildNumber: "Build number (legacy: packageNumber)",
};

export const buildRoutes: FastifyPluginAsync<{ service: ReleaseService }> = async (app, { service }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const config = { access: { inHandler: true } } as const;

  for (const [base, aliases] of [
    ["/api/releases/builds", {}],
    ["/api/releases/packages", LEGACY_PACKAGE_ALIASES],
  ] as const) {
    const legacy = base.endsWith("packages") ? " (BuildMaster 5 alias)" : "";

    api.route({
      method: ["GET", "POST"],
      url: base,
      schema: {
        summary: `Get builds${legacy}`,
        description: `Builds matching every filter, newest first (docs/compat.md 7.2). ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc({
          ...addressing,
          releaseName: "Release name",
          pipelineName: "Pipeline",
          furthestStage: "Stage",
          status: "active, rejected or deployed",
        }),
        response: { 200: z.array(buildInfoSchema), ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "Applications_View");
        const inputs = readInputs(request, aliases);
        const status = statusInput(inputs, BUILD_STATUSES);
        const buildId = inputs.id("buildId");
        const buildNumber = inputs.get("buildNumber");
        const furthestStage = inputs.get("furthestStage");
        const builds = await service.listBuilds({
          ...commonFilter(inputs),
          ...(status && { status }),
          ...(buildId !== undefined && { buildId }),
          ...(buildNumber !== undefined && { buildNumber }),
          ...(furthestStage !== undefined && { furthestStage }),
        });
        return builds.map(buildInfo);
      },
    });

    api.route({
      method: ["POST", "PUT"],
      url: `${base}/create`,
      schema: {
        summary: `Create a build${legacy}`,
        description:
          "Creates a build of a release (required when the application uses releases) or, with `pipelineName`, without " +
          "one; `buildNumber` is optional (the application's scheme picks one). A build with a pipeline is deployed to " +
          `the first stage (a pending deployment). Answers one BuildInfo. ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc({ ...addressing, pipelineName: "Pipeline (required without a release)" }),
        response: { 200: buildInfoSchema, ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "ReleasePackages_Create");
        const inputs = readInputs(request, aliases);
        const pipelineName = inputs.get("pipelineName");
        const buildNumber = inputs.get("buildNumber");
        const { build } = await service.createBuild(
          {
            ...releaseRef(inputs),
            ...(pipelineName !== undefined && { pipelineName }),
            ...(buildNumber !== undefined && { buildNumber }),
            variables: inputs.variables,
          },
          actorName(request.principal),
        );
        return buildInfo(build);
      },
    });

    api.route({
      method: ["POST", "PUT"],
      url: `${base}/deploy`,
      schema: {
        summary: `Deploy a build${legacy}`,
        description:
          "Creates a pending deployment of the build to `toStage` (default: the stage after the furthest one it was " +
          "deployed to successfully). Without force=true, stages cannot be skipped. Answers an ARRAY of the " +
          "deployments created (the Jenkins plugin parses an array; docs/compat.md 7.3). A bare deploy (no toStage, " +
          "force, startTime or $variables) of a build whose only deployment is the first-stage one its creation " +
          "queued answers that deployment while it runs, and, from the Jenkins BuildMaster plugin, up to 60 s " +
          `after it ended (its "deploy to first stage"; README). ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc({
          ...addressing,
          toStage: "Target stage",
          force: "true/false",
          startTime: "Not before (ISO 8601)",
        }),
        response: { 200: z.array(deploymentInfoSchema), ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "ReleasePackages_Deploy");
        const inputs = readInputs(request, aliases);
        const force = inputs.flag("force");
        if (force) await authorizeReleases(request, "ReleasePackages_Force");
        const toStage = inputs.get("toStage");
        const startTime = inputs.get("startTime");
        const deployments = await service.deployBuild(
          {
            ...buildRef(inputs),
            ...(toStage !== undefined && { toStage }),
            ...(startTime !== undefined && { startTime }),
            force,
            variables: inputs.variables,
            ...(isJenkinsBuildMasterPlugin(request) && {
              followEndedFirstStageWithinMs: JENKINS_FIRST_STAGE_WINDOW_MS,
            }),
          },
          actorName(request.principal),
        );
        return deployments.map(deploymentInfo);
      },
    });

    api.route({
      method: ["POST", "DELETE"],
      url: `${base}/reject`,
      schema: {
        summary: `Reject a build${legacy}`,
        description: `Rejects the build and cancels its pending deployments (docs/compat.md 7.4). Answers the BuildInfo. ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc(addressing),
        response: { 200: buildInfoSchema, ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "ReleasePackages_Manage");
        const inputs = readInputs(request, aliases);
        return buildInfo(await service.rejectBuild(buildRef(inputs), actorName(request.principal)));
      },
    });

    api.route({
      method: ["GET", "POST"],
      url: `${base}/deployments`,
      schema: {
        summary: `Get deployments${legacy}`,
        description: `Deployments matching every filter, newest first: the first is the latest (docs/compat.md 7.3). ${INPUT_NOTE}`,
        tags: TAGS,
        querystring: queryDoc({
          ...addressing,
          releaseName: "Release name",
          deploymentId: "Deployment id",
          pipelineName: "Pipeline",
          pipelineStageName: "Stage",
          environmentId: "Environment id",
          environmentName: "Environment name",
          status: "pending, executing, succeeded, warned or failed",
        }),
        response: { 200: z.array(deploymentInfoSchema), ...errors },
      },
      config,
      handler: async (request) => {
        await authorizeReleases(request, "Applications_View");
        const inputs = readInputs(request, aliases);
        const status = statusInput(inputs, DEPLOYMENT_STATUSES);
        const optional = {
          buildId: inputs.id("buildId"),
          buildNumber: inputs.get("buildNumber"),
          deploymentId: inputs.id("deploymentId"),
          pipelineStageName: inputs.get("pipelineStageName"),
          environmentId: inputs.id("environmentId"),
          environmentName: inputs.get("environmentName"),
          status,
        };
        const filter = Object.fromEntries(Object.entries(optional).filter(([, v]) => v !== undefined));
        const deployments = await service.listDeployments({ ...commonFilter(inputs), ...filter });
        return deployments.map(deploymentInfo);
      },
    });
  }
};
