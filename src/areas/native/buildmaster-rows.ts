import { z } from "zod";
import type { Build, Deployment } from "../releases/index.js";
import type { Environment, Pipeline } from "../releases/model.js";

/**
 * Result shapes of the BuildMaster reads beyond the application methods (schemas.ts), in
 * BuildMaster's PascalCase column names; absent values are left out, indicators are booleans and
 * dates ISO 8601 UTC, as in rows.ts.
 */

const id = z.number().int();
const text = z.string();
const date = z.string().describe("ISO 8601, UTC");

const BUILD_STATUS_NAMES = { active: "Active", deployed: "Deployed", rejected: "Rejected" } as const;
const DEPLOYMENT_STATUS_NAMES = {
  pending: "Pending",
  executing: "Executing",
  succeeded: "Succeeded",
  warned: "Warned",
  failed: "Failed",
} as const;

export const buildRowSchema = z
  .object({
    Build_Id: id,
    Application_Id: id,
    Application_Name: text,
    Release_Id: id.optional(),
    Release_Number: text.optional(),
    Release_Name: text.optional(),
    Pipeline_Name: text.optional(),
    Build_Number: text,
    BuildStatus_Name: z.enum(["Active", "Deployed", "Rejected"]),
    Current_PipelineStage_Name: text.optional().describe("The furthest stage the build reached"),
    CreatedBy_User_Name: text,
    CreatedOn_Date: date,
    RejectedBy_User_Name: text.optional(),
    RejectedOn_Date: date.optional(),
  })
  .describe("Builds_Extended row");

export const deploymentRowSchema = z
  .object({
    Deployment_Id: id,
    Build_Id: id,
    Build_Number: text,
    Application_Id: id,
    Application_Name: text,
    Release_Id: id.optional(),
    Release_Number: text.optional(),
    Pipeline_Name: text,
    PipelineStage_Name: text,
    Environment_Id: id.optional(),
    Environment_Name: text.optional(),
    DeploymentStatus_Name: z.enum(["Pending", "Executing", "Succeeded", "Warned", "Failed"]),
    Forced_Indicator: z.boolean(),
    Execution_Id: id.optional(),
    CreatedBy_User_Name: text,
    CreatedOn_Date: date,
    ExecutionStart_Date: date.optional(),
    ExecutionEnd_Date: date.optional(),
  })
  .describe("Deployments_Extended row");

export const pipelineRowSchema = z
  .object({
    Pipeline_Id: id,
    Pipeline_Name: text,
    Stage_Count: z.number().int(),
    RejectOlderBuilds_Indicator: z.boolean(),
  })
  .describe("Pipelines row");

export const pipelineStageRowSchema = z
  .object({
    Pipeline_Id: id,
    PipelineStage_Name: text,
    Stage_Sequence: z.number().int().describe("1 for the first stage"),
    Environment_Name: text.optional(),
    Plan_Name: text.optional(),
  })
  .describe("PipelineStages row");

export const environmentRowSchema = z
  .object({
    Environment_Id: id,
    Environment_Name: text,
    Parent_Environment_Name: text.optional(),
    Active_Indicator: z.boolean(),
  })
  .describe("Environments row (variables are the variables API's)");

export function buildRow(build: Build): z.input<typeof buildRowSchema> {
  return {
    Build_Id: build.id,
    Application_Id: build.applicationId,
    Application_Name: build.applicationName,
    ...(build.releaseId !== undefined && { Release_Id: build.releaseId }),
    ...(build.releaseNumber !== undefined && { Release_Number: build.releaseNumber }),
    ...(build.releaseName !== undefined && { Release_Name: build.releaseName }),
    ...(build.pipelineName !== undefined && { Pipeline_Name: build.pipelineName }),
    Build_Number: build.number,
    BuildStatus_Name: BUILD_STATUS_NAMES[build.status],
    ...(build.furthestStage !== undefined && { Current_PipelineStage_Name: build.furthestStage }),
    CreatedBy_User_Name: build.createdBy,
    CreatedOn_Date: build.createdOn,
    ...(build.rejectedBy !== undefined && { RejectedBy_User_Name: build.rejectedBy }),
    ...(build.rejectedOn !== undefined && { RejectedOn_Date: build.rejectedOn }),
  };
}

export function deploymentRow(deployment: Deployment): z.input<typeof deploymentRowSchema> {
  return {
    Deployment_Id: deployment.id,
    Build_Id: deployment.buildId,
    Build_Number: deployment.buildNumber,
    Application_Id: deployment.applicationId,
    Application_Name: deployment.applicationName,
    ...(deployment.releaseId !== undefined && { Release_Id: deployment.releaseId }),
    ...(deployment.releaseNumber !== undefined && { Release_Number: deployment.releaseNumber }),
    Pipeline_Name: deployment.pipelineName,
    PipelineStage_Name: deployment.stageName,
    ...(deployment.environmentId !== undefined && { Environment_Id: deployment.environmentId }),
    ...(deployment.environmentName !== undefined && { Environment_Name: deployment.environmentName }),
    DeploymentStatus_Name: DEPLOYMENT_STATUS_NAMES[deployment.status],
    Forced_Indicator: deployment.forced,
    ...(deployment.executionId !== undefined && { Execution_Id: deployment.executionId }),
    CreatedBy_User_Name: deployment.createdBy,
    CreatedOn_Date: deployment.createdOn,
    ...(deployment.started !== undefined && { ExecutionStart_Date: deployment.started }),
    ...(deployment.ended !== undefined && { ExecutionEnd_Date: deployment.ended }),
  };
}

export function pipelineRow(pipeline: Pipeline): z.input<typeof pipelineRowSchema> {
  return {
    Pipeline_Id: pipeline.id,
    Pipeline_Name: pipeline.name,
    Stage_Count: pipeline.stages.length,
    RejectOlderBuilds_Indicator: pipeline.rejectOlderBuilds,
  };
}

export function pipelineStageRows(pipeline: Pipeline): z.input<typeof pipelineStageRowSchema>[] {
  return pipeline.stages.map((stage, index) => ({
    Pipeline_Id: pipeline.id,
    PipelineStage_Name: stage.name,
    Stage_Sequence: index + 1,
    ...(stage.environmentName !== undefined && { Environment_Name: stage.environmentName }),
    ...(stage.planName !== undefined && { Plan_Name: stage.planName }),
  }));
}

export function environmentRow(environment: Environment): z.input<typeof environmentRowSchema> {
  return {
    Environment_Id: environment.id,
    Environment_Name: environment.name,
    ...(environment.parentName !== undefined && { Parent_Environment_Name: environment.parentName }),
    Active_Indicator: environment.active,
  };
}
