import type { PlanStep } from "./plan-steps.js";

/**
 * The records of the releases area (migration 0008) as services see them. Optional members are
 * absent rather than null: the JSON answers omit them (docs/compat.md 7.3, BuildMaster.Net reads ids
 * into non-nullable ints).
 */

export const RELEASE_USAGES = ["required", "optional", "none"] as const;
export type ReleaseUsage = (typeof RELEASE_USAGES)[number];
export const BUILD_NUMBER_SCHEMES = ["sequential", "date-based", "unique"] as const;
export type BuildNumberScheme = (typeof BUILD_NUMBER_SCHEMES)[number];

export const RELEASE_STATUSES = ["active", "deployed", "canceled"] as const;
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];
export const BUILD_STATUSES = ["active", "deployed", "rejected"] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];
export const DEPLOYMENT_STATUSES = ["pending", "executing", "succeeded", "warned", "failed"] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
/** How a deployment may end (what the job runner reports). */
export type DeploymentOutcome = "succeeded" | "warned" | "failed";

export interface Application {
  readonly id: number;
  readonly name: string;
  readonly description?: string;
  readonly groupName?: string;
  readonly active: boolean;
  readonly releaseUsage: ReleaseUsage;
  readonly buildNumberScheme: BuildNumberScheme;
}
export type ApplicationDraft = Omit<Application, "id">;

export interface Environment {
  readonly id: number;
  readonly name: string;
  readonly parentName?: string;
  readonly active: boolean;
  readonly variables: Readonly<Record<string, string>>;
}
export type EnvironmentDraft = Omit<Environment, "id">;

export interface DeploymentPlan {
  readonly id: number;
  readonly name: string;
  readonly steps: readonly PlanStep[];
}

export interface PipelineStage {
  readonly name: string;
  readonly environmentName?: string;
  /** A named deployment plan, or inline `plan` steps, or neither (nothing to run). */
  readonly planName?: string;
  readonly plan?: readonly PlanStep[];
}

export interface Pipeline {
  readonly id: number;
  readonly name: string;
  readonly stages: readonly PipelineStage[];
  /** docs/compat.md 7.4: a newer build entering a stage rejects the release's older builds there. */
  readonly rejectOlderBuilds: boolean;
}
export type PipelineDraft = Omit<Pipeline, "id">;

export type Variables = ReadonlyMap<string, string>;

export interface Release {
  readonly id: number;
  readonly applicationId: number;
  readonly applicationName: string;
  readonly number: string;
  readonly name: string;
  readonly sequence: number;
  readonly pipelineId?: number;
  readonly pipelineName?: string;
  readonly status: ReleaseStatus;
  readonly template?: string;
  readonly targetDate?: string;
  readonly createdBy: string;
  readonly createdOn: string;
  readonly canceledBy?: string;
  readonly canceledOn?: string;
  /** Active or deployed build furthest in the pipeline, and the most recently created one. */
  readonly furthestBuild?: { readonly id: number; readonly number: string };
  readonly latestBuild?: { readonly id: number; readonly number: string };
}

export interface Build {
  readonly id: number;
  readonly applicationId: number;
  readonly applicationName: string;
  readonly releaseId?: number;
  readonly releaseNumber?: string;
  readonly releaseName?: string;
  readonly pipelineId?: number;
  readonly pipelineName?: string;
  readonly number: string;
  readonly status: BuildStatus;
  readonly furthestStage?: string;
  readonly furthestPosition?: number;
  readonly createdBy: string;
  readonly createdOn: string;
  readonly rejectedBy?: string;
  readonly rejectedOn?: string;
}

export interface Deployment {
  readonly id: number;
  readonly buildId: number;
  readonly buildNumber: string;
  readonly applicationId: number;
  readonly applicationName: string;
  readonly releaseId?: number;
  readonly releaseNumber?: string;
  readonly releaseName?: string;
  readonly pipelineName: string;
  readonly stageName: string;
  readonly stagePosition: number;
  readonly planName?: string;
  readonly planSteps: readonly PlanStep[];
  readonly environmentId?: number;
  readonly environmentName?: string;
  readonly status: DeploymentStatus;
  readonly forced: boolean;
  readonly startAfter?: string;
  readonly started?: string;
  readonly ended?: string;
  readonly createdBy: string;
  readonly createdOn: string;
  readonly canceledBy?: string;
  readonly canceledOn?: string;
  readonly log: string;
  readonly executionId?: number;
}
