import { z } from "zod";
import type { Application, Build, Deployment, Environment, Pipeline, Release } from "./model.js";
import { errorText } from "../../http/errors.js";

/**
 * Response shapes of area E (docs/compat.md 7.3) and of Wharf's management additions (docs/compat.md 7.8,
 * 8.2). Area E emits both the short and long names and the BuildMaster 5 `*Package*` duplicates;
 * absent values are omitted, never null (BuildMaster.Net reads ids into non-nullable ints).
 */

export { errorText };
const id = z.number().int();
const text = z.string();

export const releaseInfoSchema = z
  .object({
    id,
    number: text,
    releaseNumber: text,
    name: text,
    releaseName: text,
    sequence: z.number().int(),
    template: text.optional(),
    status: z.enum(["active", "deployed", "canceled"]),
    createdBy: text,
    createdOn: text,
    canceledBy: text.optional(),
    canceledOn: text.optional(),
    targetDate: text.optional(),
    applicationId: id,
    applicationName: text,
    pipelineName: text.optional(),
    furthestBuildId: id.optional(),
    furthestBuildNumber: text.optional(),
    latestBuildId: id.optional(),
    latestBuildNumber: text.optional(),
    furthestPackageId: id.optional(),
    furthestPackageNumber: text.optional(),
    latestPackageId: id.optional(),
    latestPackageNumber: text.optional(),
    deployables: z.array(z.unknown()),
  })
  .describe("ReleaseInfo (docs/compat.md 7.3)");

export const buildInfoSchema = z
  .object({
    id,
    number: text,
    buildNumber: text,
    packageNumber: text,
    status: z.enum(["active", "deployed", "rejected"]),
    createdBy: text,
    createdOn: text,
    rejectedBy: text.optional(),
    rejectedOn: text.optional(),
    pipelineName: text.optional(),
    furthestStage: text.optional(),
    applicationId: id,
    applicationName: text,
    releaseId: id.optional(),
    releaseNumber: text.optional(),
    releaseName: text.optional(),
  })
  .describe("BuildInfo (docs/compat.md 7.3)");

export const deploymentInfoSchema = z
  .object({
    id,
    plan: text.optional(),
    status: z.enum(["pending", "executing", "succeeded", "warned", "failed"]),
    started: text.optional(),
    ended: text.optional(),
    createdBy: text,
    createdOn: text,
    canceledBy: text.optional(),
    canceledOn: text.optional(),
    pipelineName: text,
    pipelineStageName: text,
    environmentId: id.optional(),
    environmentName: text.optional(),
    applicationId: id,
    applicationName: text,
    releaseId: id.optional(),
    releaseNumber: text.optional(),
    releaseName: text.optional(),
    buildId: id,
    buildNumber: text,
    packageId: id,
    packageNumber: text,
  })
  .describe("DeploymentInfo (docs/compat.md 7.3)");

export function releaseInfo(r: Release): z.infer<typeof releaseInfoSchema> {
  return {
    id: r.id,
    number: r.number,
    releaseNumber: r.number,
    name: r.name,
    releaseName: r.name,
    sequence: r.sequence,
    ...(r.template !== undefined && { template: r.template }),
    status: r.status,
    createdBy: r.createdBy,
    createdOn: r.createdOn,
    ...(r.canceledBy !== undefined && { canceledBy: r.canceledBy }),
    ...(r.canceledOn !== undefined && { canceledOn: r.canceledOn }),
    ...(r.targetDate !== undefined && { targetDate: r.targetDate }),
    applicationId: r.applicationId,
    applicationName: r.applicationName,
    ...(r.pipelineName !== undefined && { pipelineName: r.pipelineName }),
    ...(r.furthestBuild && {
      furthestBuildId: r.furthestBuild.id,
      furthestBuildNumber: r.furthestBuild.number,
      furthestPackageId: r.furthestBuild.id,
      furthestPackageNumber: r.furthestBuild.number,
    }),
    ...(r.latestBuild && {
      latestBuildId: r.latestBuild.id,
      latestBuildNumber: r.latestBuild.number,
      latestPackageId: r.latestBuild.id,
      latestPackageNumber: r.latestBuild.number,
    }),
    deployables: [],
  };
}

export function buildInfo(b: Build): z.infer<typeof buildInfoSchema> {
  return {
    id: b.id,
    number: b.number,
    buildNumber: b.number,
    packageNumber: b.number,
    status: b.status,
    createdBy: b.createdBy,
    createdOn: b.createdOn,
    ...(b.rejectedBy !== undefined && { rejectedBy: b.rejectedBy }),
    ...(b.rejectedOn !== undefined && { rejectedOn: b.rejectedOn }),
    ...(b.pipelineName !== undefined && { pipelineName: b.pipelineName }),
    ...(b.furthestStage !== undefined && { furthestStage: b.furthestStage }),
    applicationId: b.applicationId,
    applicationName: b.applicationName,
    ...(b.releaseId !== undefined && { releaseId: b.releaseId }),
    ...(b.releaseNumber !== undefined && { releaseNumber: b.releaseNumber }),
    ...(b.releaseName !== undefined && { releaseName: b.releaseName }),
  };
}

export function deploymentInfo(d: Deployment): z.infer<typeof deploymentInfoSchema> {
  return {
    id: d.id,
    ...(d.planName !== undefined && { plan: d.planName }),
    status: d.status,
    ...(d.started !== undefined && { started: d.started }),
    ...(d.ended !== undefined && { ended: d.ended }),
    createdBy: d.createdBy,
    createdOn: d.createdOn,
    ...(d.canceledBy !== undefined && { canceledBy: d.canceledBy }),
    ...(d.canceledOn !== undefined && { canceledOn: d.canceledOn }),
    pipelineName: d.pipelineName,
    pipelineStageName: d.stageName,
    ...(d.environmentId !== undefined && { environmentId: d.environmentId }),
    ...(d.environmentName !== undefined && { environmentName: d.environmentName }),
    applicationId: d.applicationId,
    applicationName: d.applicationName,
    ...(d.releaseId !== undefined && { releaseId: d.releaseId }),
    ...(d.releaseNumber !== undefined && { releaseNumber: d.releaseNumber }),
    ...(d.releaseName !== undefined && { releaseName: d.releaseName }),
    buildId: d.buildId,
    buildNumber: d.buildNumber,
    packageId: d.buildId,
    packageNumber: d.buildNumber,
  };
}

/** docs/compat.md 7.8 spellings of the stored values. */
const RELEASE_USAGE_NAMES = { required: "Required", optional: "Optional", none: "Disabled" } as const;
export const SCHEME_NAMES = { sequential: "Sequential", "date-based": "DateTimeBased", unique: "Unique" } as const;

export const applicationInfoSchema = z
  .object({
    id,
    name: text,
    description: text.optional(),
    groupName: text.optional(),
    active: z.boolean(),
    releaseUsage: z.enum(["Required", "Optional", "Disabled"]),
    buildNumberScheme: z.enum(["Sequential", "DateTimeBased", "Unique"]),
  })
  .describe("ApplicationInfo (docs/compat.md 7.8)");

export function applicationInfo(a: Application): z.infer<typeof applicationInfoSchema> {
  return {
    id: a.id,
    name: a.name,
    ...(a.description !== undefined && { description: a.description }),
    ...(a.groupName !== undefined && { groupName: a.groupName }),
    active: a.active,
    releaseUsage: RELEASE_USAGE_NAMES[a.releaseUsage],
    buildNumberScheme: SCHEME_NAMES[a.buildNumberScheme],
  };
}

export const environmentSchema = z
  .object({
    id,
    name: text,
    parentName: text.optional(),
    parent: text.optional(),
    active: z.boolean(),
    variables: z.record(z.string(), z.string()),
  })
  .describe("Environment (docs/compat.md 8.2; `parentName` and `parent` both emitted)");

export function environmentJson(e: Environment): z.infer<typeof environmentSchema> {
  return {
    id: e.id,
    name: e.name,
    ...(e.parentName !== undefined && { parentName: e.parentName, parent: e.parentName }),
    active: e.active,
    variables: { ...e.variables },
  };
}

export const pipelineSchema = z
  .object({
    id,
    name: text,
    rejectOlderBuilds: z.boolean(),
    stages: z.array(
      z.object({
        name: text,
        environmentName: text.optional(),
        planName: text.optional(),
        plan: z.array(z.record(z.string(), z.unknown())).optional().describe("Inline steps"),
      }),
    ),
  })
  .describe("Pipeline (Wharf addition)");

export function pipelineJson(p: Pipeline): z.infer<typeof pipelineSchema> {
  return {
    id: p.id,
    name: p.name,
    rejectOlderBuilds: p.rejectOlderBuilds,
    stages: p.stages.map(({ plan, ...stage }) => ({
      ...stage,
      ...(plan && { plan: plan.map((step): Record<string, unknown> => ({ ...step })) }),
    })),
  };
}
