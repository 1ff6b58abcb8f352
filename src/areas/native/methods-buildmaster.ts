import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import {
  buildRow,
  buildRowSchema,
  deploymentRow,
  deploymentRowSchema,
  environmentRow,
  environmentRowSchema,
  pipelineRow,
  pipelineRowSchema,
  pipelineStageRows,
  pipelineStageRowSchema,
} from "./buildmaster-rows.js";
import { releaseRow } from "./rows.js";
import { defineNativeMethod, type NativeMethod } from "./registry.js";
import { releaseDetailsResultSchema } from "./schemas.js";

/**
 * The BuildMaster reads of the native API beyond the application methods (methods.ts): releases,
 * builds, pipelines, environments and deployments (docs/compat.md 7.7; issue 14 section 1), read
 * through the releases area's services. Reads of unknown ids give empty tables. Environments are
 * one table for BuildMaster and Otter, so `Environments_GetEnvironments` serves both.
 */

const optionalApplicationId = {
  name: "Application_Id",
  type: "integer",
  required: false,
  description: "Only this application's",
} as const;
const optionalReleaseNumber = {
  name: "Release_Number",
  type: "string",
  required: false,
  description: "Only this release's (with Application_Id)",
} as const;

const RELEASE_STATUS_BY_NAME: Readonly<Record<string, string>> = {
  active: "active",
  deployed: "deployed",
  canceled: "canceled",
  cancelled: "canceled",
};

const getReleases = defineNativeMethod({
  name: "Releases_GetReleases",
  summary: "Releases (`Releases_Extended` rows), newest first within each application.",
  parameters: [
    optionalApplicationId,
    {
      name: "ReleaseStatus_Name",
      type: "string",
      required: false,
      description: "Active, Deployed or Canceled (Cancelled)",
    },
    { name: "Release_Count", type: "integer", required: false, description: "At most this many (all if absent)" },
  ],
  attribute: "Applications_View",
  result: releaseDetailsResultSchema.shape.Releases_Extended,
  async run(args, { services: { releases } }) {
    const status =
      args.ReleaseStatus_Name === undefined ? undefined : RELEASE_STATUS_BY_NAME[args.ReleaseStatus_Name.toLowerCase()];
    if (args.ReleaseStatus_Name !== undefined && status === undefined) {
      throw invalid("INVALID_PARAMETER", "The parameter 'ReleaseStatus_Name' must be Active, Deployed or Canceled.");
    }
    const rows = await releases.releases.listReleases({
      ...(args.Application_Id !== undefined && { applicationId: args.Application_Id }),
      ...(status !== undefined && { status }),
    });
    return rows.slice(0, args.Release_Count ?? Number.POSITIVE_INFINITY).map(releaseRow);
  },
});

const getBuilds = defineNativeMethod({
  name: "Builds_GetBuilds",
  summary: "Builds (`Builds_Extended` rows) of an application or release, newest first.",
  parameters: [
    optionalApplicationId,
    optionalReleaseNumber,
    { name: "Build_Count", type: "integer", required: false, description: "At most this many (all if absent)" },
  ],
  attribute: "Applications_View",
  result: z.array(buildRowSchema),
  async run(args, { services: { releases } }) {
    const builds = await releases.releases.listBuilds({
      ...(args.Application_Id !== undefined && { applicationId: args.Application_Id }),
      ...(args.Release_Number !== undefined && { releaseNumber: args.Release_Number }),
      ...(args.Build_Count !== undefined && { limit: args.Build_Count }),
    });
    return builds.map(buildRow);
  },
});

const getBuild = defineNativeMethod({
  name: "Builds_GetBuild",
  summary: "One build (`Builds_Extended[0]`) and its deployments; empty tables when unknown.",
  parameters: [{ name: "Build_Id", type: "integer", required: true, description: "Id of the build" }],
  attribute: "Applications_View",
  result: z.object({
    Builds_Extended: z.array(buildRowSchema).describe("The build, or empty when unknown"),
    Deployments_Extended: z.array(deploymentRowSchema).describe("Its deployments, newest first"),
  }),
  async run(args, { services: { releases } }) {
    const [build] = await releases.releases.listBuilds({ buildId: args.Build_Id });
    if (!build) return { Builds_Extended: [], Deployments_Extended: [] };
    const deployments = await releases.releases.listDeployments({ buildId: build.id });
    return { Builds_Extended: [buildRow(build)], Deployments_Extended: deployments.map(deploymentRow) };
  },
});

const getPipelines = defineNativeMethod({
  name: "Pipelines_GetPipelines",
  summary: "Every pipeline by name with its stages (`Pipelines` and `PipelineStages`).",
  parameters: [],
  attribute: "Applications_View",
  result: z.object({ Pipelines: z.array(pipelineRowSchema), PipelineStages: z.array(pipelineStageRowSchema) }),
  async run(_args, { services: { releases } }) {
    const pipelines = await releases.catalog.listPipelines();
    return { Pipelines: pipelines.map(pipelineRow), PipelineStages: pipelines.flatMap(pipelineStageRows) };
  },
});

const getEnvironments = defineNativeMethod({
  name: "Environments_GetEnvironments",
  summary: "Every environment by name (BuildMaster's and Otter's: one table).",
  parameters: [
    {
      name: "IncludeInactive_Indicator",
      type: "indicator",
      required: false,
      description: "N leaves out inactive environments (default Y)",
    },
  ],
  attribute: "Environments_View",
  result: z.array(environmentRowSchema),
  async run(args, { services: { releases } }) {
    const environments = await releases.catalog.listEnvironments();
    return environments.filter((e) => e.active || args.IncludeInactive_Indicator !== false).map(environmentRow);
  },
});

const getDeployments = defineNativeMethod({
  name: "Deployments_GetDeployments",
  summary: "Deployments (`Deployments_Extended` rows), newest first; logs are at /executions/logs.",
  parameters: [
    optionalApplicationId,
    optionalReleaseNumber,
    { name: "Build_Id", type: "integer", required: false, description: "Only this build's" },
    { name: "Environment_Name", type: "string", required: false, description: "Only to this environment" },
    { name: "Deployment_Count", type: "integer", required: false, description: "At most this many (all if absent)" },
  ],
  attribute: "Applications_View",
  result: z.array(deploymentRowSchema),
  async run(args, { services: { releases } }) {
    const deployments = await releases.releases.listDeployments({
      ...(args.Application_Id !== undefined && { applicationId: args.Application_Id }),
      ...(args.Release_Number !== undefined && { releaseNumber: args.Release_Number }),
      ...(args.Build_Id !== undefined && { buildId: args.Build_Id }),
      ...(args.Environment_Name !== undefined && { environmentName: args.Environment_Name }),
      ...(args.Deployment_Count !== undefined && { limit: args.Deployment_Count }),
    });
    return deployments.map(deploymentRow);
  },
});

/** The BuildMaster reads, in reference-page order. */
export const BUILDMASTER_METHODS: readonly NativeMethod[] = [
  getReleases,
  getBuilds,
  getBuild,
  getPipelines,
  getEnvironments,
  getDeployments,
];
