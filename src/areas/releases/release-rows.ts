import type { Build, Deployment, Release } from "./model.js";
import { parseStoredSteps } from "./plan-steps.js";

/** Row shapes of the joined SELECTs of release-repository.ts and their mapping to the model. */

export const RELEASE_SELECT = `SELECT r.*, a.name AS application_name, p.name AS pipeline_name,
  (SELECT b.id FROM builds b WHERE b.release_id = r.id AND b.status != 'rejected' ORDER BY b.id DESC LIMIT 1) AS latest_id,
  (SELECT b.number FROM builds b WHERE b.release_id = r.id AND b.status != 'rejected' ORDER BY b.id DESC LIMIT 1) AS latest_number,
  (SELECT b.id FROM builds b WHERE b.release_id = r.id AND b.status != 'rejected'
    ORDER BY COALESCE(b.furthest_position, -1) DESC, b.id DESC LIMIT 1) AS furthest_id,
  (SELECT b.number FROM builds b WHERE b.release_id = r.id AND b.status != 'rejected'
    ORDER BY COALESCE(b.furthest_position, -1) DESC, b.id DESC LIMIT 1) AS furthest_number
  FROM releases r JOIN applications a ON a.id = r.application_id LEFT JOIN pipelines p ON p.id = r.pipeline_id`;

export const BUILD_SELECT = `SELECT b.*, a.name AS application_name, r.number AS release_number, r.name AS release_name,
  p.name AS pipeline_name
  FROM builds b JOIN applications a ON a.id = b.application_id LEFT JOIN releases r ON r.id = b.release_id
  LEFT JOIN pipelines p ON p.id = b.pipeline_id`;

export const DEPLOYMENT_SELECT = `SELECT d.*, b.number AS build_number, b.application_id, a.name AS application_name,
  b.release_id, r.number AS release_number, r.name AS release_name
  FROM deployments d JOIN builds b ON b.id = d.build_id JOIN applications a ON a.id = b.application_id
  LEFT JOIN releases r ON r.id = b.release_id`;

export interface ReleaseRow {
  id: number;
  application_id: number;
  application_name: string;
  number: string;
  name: string;
  sequence: number;
  pipeline_id: number | null;
  pipeline_name: string | null;
  status: Release["status"];
  template: string | null;
  target_date: string | null;
  created_by: string;
  created_on: string;
  canceled_by: string | null;
  canceled_on: string | null;
  latest_id: number | null;
  latest_number: string | null;
  furthest_id: number | null;
  furthest_number: string | null;
}

export interface BuildRow {
  id: number;
  application_id: number;
  application_name: string;
  release_id: number | null;
  release_number: string | null;
  release_name: string | null;
  pipeline_id: number | null;
  pipeline_name: string | null;
  number: string;
  status: Build["status"];
  furthest_stage: string | null;
  furthest_position: number | null;
  created_by: string;
  created_on: string;
  rejected_by: string | null;
  rejected_on: string | null;
}

export interface DeploymentRow {
  id: number;
  build_id: number;
  build_number: string;
  application_id: number;
  application_name: string;
  release_id: number | null;
  release_number: string | null;
  release_name: string | null;
  pipeline_name: string;
  stage_name: string;
  stage_position: number;
  plan_name: string | null;
  plan_steps: string;
  environment_id: number | null;
  environment_name: string | null;
  status: Deployment["status"];
  forced: number;
  start_after: string | null;
  started_at: string | null;
  ended_at: string | null;
  created_by: string;
  created_on: string;
  canceled_by: string | null;
  canceled_on: string | null;
  log: string;
  execution_id: number | null;
}

/** `{ name: value }` when value is not null, else nothing: absent members stay absent. */
function opt<K extends string, V>(name: K, value: V | null): { [P in K]?: V } {
  return (value === null ? {} : { [name]: value }) as { [P in K]?: V };
}

export function toRelease(row: ReleaseRow): Release {
  return {
    id: row.id,
    applicationId: row.application_id,
    applicationName: row.application_name,
    number: row.number,
    name: row.name,
    sequence: row.sequence,
    ...opt("pipelineId", row.pipeline_id),
    ...opt("pipelineName", row.pipeline_name),
    status: row.status,
    ...opt("template", row.template),
    ...opt("targetDate", row.target_date),
    createdBy: row.created_by,
    createdOn: row.created_on,
    ...opt("canceledBy", row.canceled_by),
    ...opt("canceledOn", row.canceled_on),
    ...(row.latest_id !== null && { latestBuild: { id: row.latest_id, number: row.latest_number ?? "" } }),
    ...(row.furthest_id !== null && { furthestBuild: { id: row.furthest_id, number: row.furthest_number ?? "" } }),
  };
}

export function toBuild(row: BuildRow): Build {
  return {
    id: row.id,
    applicationId: row.application_id,
    applicationName: row.application_name,
    ...opt("releaseId", row.release_id),
    ...opt("releaseNumber", row.release_number),
    ...opt("releaseName", row.release_name),
    ...opt("pipelineId", row.pipeline_id),
    ...opt("pipelineName", row.pipeline_name),
    number: row.number,
    status: row.status,
    ...opt("furthestStage", row.furthest_stage),
    ...opt("furthestPosition", row.furthest_position),
    createdBy: row.created_by,
    createdOn: row.created_on,
    ...opt("rejectedBy", row.rejected_by),
    ...opt("rejectedOn", row.rejected_on),
  };
}

export function toDeployment(row: DeploymentRow): Deployment {
  return {
    id: row.id,
    buildId: row.build_id,
    buildNumber: row.build_number,
    applicationId: row.application_id,
    applicationName: row.application_name,
    ...opt("releaseId", row.release_id),
    ...opt("releaseNumber", row.release_number),
    ...opt("releaseName", row.release_name),
    pipelineName: row.pipeline_name,
    stageName: row.stage_name,
    stagePosition: row.stage_position,
    ...opt("planName", row.plan_name),
    planSteps: parseStoredSteps(row.plan_steps),
    ...opt("environmentId", row.environment_id),
    ...opt("environmentName", row.environment_name),
    status: row.status,
    forced: row.forced === 1,
    ...opt("startAfter", row.start_after),
    ...opt("started", row.started_at),
    ...opt("ended", row.ended_at),
    createdBy: row.created_by,
    createdOn: row.created_on,
    ...opt("canceledBy", row.canceled_by),
    ...opt("canceledOn", row.canceled_on),
    log: row.log,
    ...opt("executionId", row.execution_id),
  };
}
