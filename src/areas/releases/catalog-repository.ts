import { conflict, DomainError, notFound } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../storage/sqlite-errors.js";
import type {
  Application,
  ApplicationDraft,
  DeploymentPlan,
  Environment,
  EnvironmentDraft,
  Pipeline,
  PipelineDraft,
  PipelineStage,
} from "./model.js";
import { type PlanStep, parseStoredSteps } from "./plan-steps.js";

/**
 * SQL for applications, environments, deployment plans and pipelines (migration 0008). Every
 * method is one transaction and returns a Promise. Names are matched case-insensitively.
 */
export interface CatalogRepository {
  listApplications(): Promise<Application[]>;
  findApplication(idOrName: number | string): Promise<Application | undefined>;
  /** Throws conflict when the name is taken. */
  insertApplication(draft: ApplicationDraft, now: string): Promise<Application>;
  /** Throws not_found for an unknown id, conflict when the new name is taken. */
  updateApplication(id: number, draft: ApplicationDraft): Promise<Application>;

  listEnvironments(): Promise<Environment[]>;
  findEnvironment(name: string): Promise<Environment | undefined>;
  /** Throws conflict when the name is taken, unprocessable for an unknown parent. */
  insertEnvironment(draft: EnvironmentDraft): Promise<Environment>;
  updateEnvironment(id: number, draft: EnvironmentDraft): Promise<Environment>;
  deleteEnvironment(name: string): Promise<boolean>;

  listPlans(): Promise<DeploymentPlan[]>;
  findPlan(name: string): Promise<DeploymentPlan | undefined>;
  /** Throws conflict when the name is taken. */
  insertPlan(name: string, steps: readonly PlanStep[], now: string): Promise<DeploymentPlan>;
  /** Replaces the steps of an existing plan; undefined when there is none of that name. */
  updatePlan(name: string, steps: readonly PlanStep[], now: string): Promise<DeploymentPlan | undefined>;
  /** False when there is no such plan; throws conflict PLAN_IN_USE while a pipeline stage names it. */
  deletePlan(name: string): Promise<boolean>;

  listPipelines(): Promise<Pipeline[]>;
  findPipeline(idOrName: number | string): Promise<Pipeline | undefined>;
  insertPipeline(draft: PipelineDraft, now: string): Promise<Pipeline>;
  /** Replaces name, setting and stages. */
  updatePipeline(id: number, draft: PipelineDraft, now: string): Promise<Pipeline>;
  /** Throws conflict while releases or builds use it. */
  deletePipeline(name: string): Promise<boolean>;
}

export interface ApplicationRow {
  id: number;
  name: string;
  description: string | null;
  group_name: string | null;
  active: number;
  release_usage: Application["releaseUsage"];
  build_number_scheme: Application["buildNumberScheme"];
}
export interface EnvironmentRow {
  id: number;
  name: string;
  parent_name: string | null;
  active: number;
  variables: string;
}
export interface StageRow {
  name: string;
  environment_name: string | null;
  plan_name: string | null;
  plan_steps: string | null;
}
export interface PipelineRow {
  id: number;
  name: string;
  reject_older_builds: number;
}
export interface PlanRow {
  id: number;
  name: string;
  steps: string;
}

/** The shared pieces below are the same on both databases (catalog-repository-postgres.ts). */

export const key = (name: string) => name.toLowerCase();

export const ENVIRONMENT_SELECT = `SELECT e.id, e.name, p.name AS parent_name, e.active, e.variables
    FROM environments e LEFT JOIN environments p ON p.id = e.parent_id`;

// Stages name plans as typed; the comparison is made on keys, like every name.
export const PLAN_USERS_SELECT = `SELECT p.name AS pipeline, s.plan_name FROM pipeline_stages s JOIN pipelines p ON p.id = s.pipeline_id
       WHERE s.plan_name IS NOT NULL ORDER BY p.name_key`;

export function toApplication(row: ApplicationRow): Application {
  return {
    id: row.id,
    name: row.name,
    ...(row.description !== null && { description: row.description }),
    ...(row.group_name !== null && { groupName: row.group_name }),
    active: row.active === 1,
    releaseUsage: row.release_usage,
    buildNumberScheme: row.build_number_scheme,
  };
}

export function toEnvironment(row: EnvironmentRow): Environment {
  return {
    id: row.id,
    name: row.name,
    ...(row.parent_name !== null && { parentName: row.parent_name }),
    active: row.active === 1,
    variables: JSON.parse(row.variables) as Record<string, string>,
  };
}

export function toStage(row: StageRow): PipelineStage {
  return {
    name: row.name,
    ...(row.environment_name !== null && { environmentName: row.environment_name }),
    ...(row.plan_name !== null && { planName: row.plan_name }),
    ...(row.plan_steps !== null && { plan: parseStoredSteps(row.plan_steps) }),
  };
}

export function toPipeline(row: PipelineRow, stages: readonly StageRow[]): Pipeline {
  return {
    id: row.id,
    name: row.name,
    rejectOlderBuilds: row.reject_older_builds === 1,
    stages: stages.map(toStage),
  };
}

export function toPlan(row: PlanRow): DeploymentPlan {
  return { id: row.id, name: row.name, steps: parseStoredSteps(row.steps) };
}

export function applicationParams(draft: ApplicationDraft) {
  return {
    name: draft.name,
    nameKey: key(draft.name),
    description: draft.description ?? null,
    groupName: draft.groupName ?? null,
    active: draft.active ? 1 : 0,
    releaseUsage: draft.releaseUsage,
    buildNumberScheme: draft.buildNumberScheme,
  };
}

export function environmentParams(draft: EnvironmentDraft, parentId: number | null) {
  return {
    name: draft.name,
    nameKey: key(draft.name),
    parentId,
    active: draft.active ? 1 : 0,
    variables: JSON.stringify(draft.variables),
  };
}

export function stageParams(pipelineId: number, stage: PipelineStage, position: number) {
  return {
    pipelineId,
    position,
    name: stage.name,
    nameKey: key(stage.name),
    environmentName: stage.environmentName ?? null,
    planName: stage.planName ?? null,
    planSteps: stage.plan ? JSON.stringify(stage.plan) : null,
  };
}

/** The pipelines whose stages name the plan `name` (rows of PLAN_USERS_SELECT), each once. */
export function pipelinesUsing(rows: readonly { pipeline: string; plan_name: string }[], name: string): string[] {
  return [...new Set(rows.filter((u) => key(u.plan_name) === key(name)).map((u) => u.pipeline))];
}

export const applicationNotFound = (id: number) =>
  notFound("APPLICATION_NOT_FOUND", `No application has the id ${id}.`);

export const parentNotFound = (name: string) =>
  new DomainError("unprocessable", "PARENT_NOT_FOUND", `The parent environment '${name}' does not exist.`);

export const parentIsSelf = () =>
  new DomainError("unprocessable", "PARENT_IS_SELF", "An environment cannot be its own parent.");

export const planInUse = (name: string, users: readonly string[]) =>
  conflict("PLAN_IN_USE", `The deployment plan '${name}' is used by the pipeline(s) ${users.join(", ")}.`);

export const pipelineInUse = (name: string, cause: unknown) =>
  conflict("PIPELINE_IN_USE", `The pipeline '${name}' is used by releases or builds.`, { cause });

export function nameTaken(what: string, name: string, cause?: unknown) {
  return conflict(
    `${what.toUpperCase()}_EXISTS`,
    `${/^[aeiou]/i.test(what) ? "An" : "A"} ${what} named '${name}' already exists.`,
    { cause },
  );
}

export function createCatalogRepository(db: Db): CatalogRepository {
  const app = {
    all: db.prepare<[], ApplicationRow>("SELECT * FROM applications ORDER BY name_key"),
    byId: db.prepare<[number], ApplicationRow>("SELECT * FROM applications WHERE id = ?"),
    byName: db.prepare<[string], ApplicationRow>("SELECT * FROM applications WHERE name_key = ?"),
    insert: db.prepare(
      `INSERT INTO applications (name, name_key, description, group_name, active, release_usage, build_number_scheme, created_at)
       VALUES (@name, @nameKey, @description, @groupName, @active, @releaseUsage, @buildNumberScheme, @now)`,
    ),
    update: db.prepare(
      `UPDATE applications SET name = @name, name_key = @nameKey, description = @description, group_name = @groupName,
         active = @active, release_usage = @releaseUsage, build_number_scheme = @buildNumberScheme WHERE id = @id`,
    ),
  };
  const env = {
    all: db.prepare<[], EnvironmentRow>(`${ENVIRONMENT_SELECT} ORDER BY e.name_key`),
    byId: db.prepare<[number], EnvironmentRow>(`${ENVIRONMENT_SELECT} WHERE e.id = ?`),
    byName: db.prepare<[string], EnvironmentRow>(`${ENVIRONMENT_SELECT} WHERE e.name_key = ?`),
    idByName: db.prepare<[string], { id: number }>("SELECT id FROM environments WHERE name_key = ?"),
    insert: db.prepare(
      `INSERT INTO environments (name, name_key, parent_id, active, variables) VALUES (@name, @nameKey, @parentId, @active, @variables)`,
    ),
    update: db.prepare(
      `UPDATE environments SET name = @name, name_key = @nameKey, parent_id = @parentId, active = @active, variables = @variables WHERE id = @id`,
    ),
    delete: db.prepare<[string]>("DELETE FROM environments WHERE name_key = ?"),
  };
  const plan = {
    all: db.prepare<[], PlanRow>("SELECT id, name, steps FROM deployment_plans ORDER BY name_key"),
    byName: db.prepare<[string], PlanRow>("SELECT id, name, steps FROM deployment_plans WHERE name_key = ?"),
    insert: db.prepare(
      "INSERT INTO deployment_plans (name, name_key, steps, created_at, modified_at) VALUES (@name, @nameKey, @steps, @now, @now)",
    ),
    update: db.prepare<[string, string, string], { id: number; name: string }>(
      "UPDATE deployment_plans SET steps = ?, modified_at = ? WHERE name_key = ? RETURNING id, name",
    ),
    delete: db.prepare<[string]>("DELETE FROM deployment_plans WHERE name_key = ?"),
    users: db.prepare<[], { pipeline: string; plan_name: string }>(PLAN_USERS_SELECT),
  };
  const pipe = {
    all: db.prepare<[], PipelineRow>("SELECT id, name, reject_older_builds FROM pipelines ORDER BY name_key"),
    byId: db.prepare<[number], PipelineRow>("SELECT id, name, reject_older_builds FROM pipelines WHERE id = ?"),
    byName: db.prepare<[string], PipelineRow>("SELECT id, name, reject_older_builds FROM pipelines WHERE name_key = ?"),
    stages: db.prepare<[number], StageRow>(
      "SELECT name, environment_name, plan_name, plan_steps FROM pipeline_stages WHERE pipeline_id = ? ORDER BY position",
    ),
    insert: db.prepare(
      "INSERT INTO pipelines (name, name_key, reject_older_builds, created_at, modified_at) VALUES (@name, @nameKey, @reject, @now, @now)",
    ),
    update: db.prepare(
      "UPDATE pipelines SET name = @name, name_key = @nameKey, reject_older_builds = @reject, modified_at = @now WHERE id = @id",
    ),
    clearStages: db.prepare<[number]>("DELETE FROM pipeline_stages WHERE pipeline_id = ?"),
    insertStage: db.prepare(
      `INSERT INTO pipeline_stages (pipeline_id, position, name, name_key, environment_name, plan_name, plan_steps)
       VALUES (@pipelineId, @position, @name, @nameKey, @environmentName, @planName, @planSteps)`,
    ),
    delete: db.prepare<[string]>("DELETE FROM pipelines WHERE name_key = ?"),
  };

  const readPipeline = (row: PipelineRow | undefined) => row && toPipeline(row, pipe.stages.all(row.id));
  const readApplication = (idOrName: number | string) => {
    const row = typeof idOrName === "number" ? app.byId.get(idOrName) : app.byName.get(key(idOrName));
    return row && toApplication(row);
  };
  const envParams = (draft: EnvironmentDraft) => {
    let parentId: number | null = null;
    if (draft.parentName !== undefined) {
      const parent = env.idByName.get(key(draft.parentName));
      if (!parent) throw parentNotFound(draft.parentName);
      parentId = parent.id;
    }
    return environmentParams(draft, parentId);
  };
  const writeStages = (pipelineId: number, stages: readonly PipelineStage[]) => {
    pipe.clearStages.run(pipelineId);
    stages.forEach((stage, position) => pipe.insertStage.run(stageParams(pipelineId, stage, position)));
  };
  const unique = <T>(what: string, name: string, work: () => T): T => {
    try {
      return work();
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(what, name, error);
      throw error;
    }
  };

  return withBusyRetries(db, {
    listApplications: async () => app.all.all().map(toApplication),
    findApplication: async (idOrName) => readApplication(idOrName),
    insertApplication: async (draft, now) =>
      unique("application", draft.name, () => {
        const id = Number(app.insert.run({ ...applicationParams(draft), now }).lastInsertRowid);
        return { id, ...draft };
      }),
    updateApplication: async (id, draft) =>
      unique("application", draft.name, () => {
        if (app.update.run({ ...applicationParams(draft), id }).changes === 0) throw applicationNotFound(id);
        return { id, ...draft };
      }),

    listEnvironments: async () => env.all.all().map(toEnvironment),
    findEnvironment: async (name) => {
      const row = env.byName.get(key(name));
      return row && toEnvironment(row);
    },
    insertEnvironment: async (draft) =>
      unique("environment", draft.name, () => {
        const id = Number(env.insert.run(envParams(draft)).lastInsertRowid);
        return toEnvironment(env.byId.get(id) as EnvironmentRow);
      }),
    updateEnvironment: async (id, draft) =>
      unique("environment", draft.name, () =>
        db.transaction(() => {
          const params = envParams(draft);
          if (params.parentId === id) throw parentIsSelf();
          env.update.run({ ...params, id });
          return toEnvironment(env.byId.get(id) as EnvironmentRow);
        })(),
      ),
    deleteEnvironment: async (name) => env.delete.run(key(name)).changes > 0,

    listPlans: async () => plan.all.all().map(toPlan),
    findPlan: async (name) => {
      const row = plan.byName.get(key(name));
      return row && toPlan(row);
    },
    insertPlan: async (name, steps, now) =>
      unique("plan", name, () => {
        const id = Number(
          plan.insert.run({ name, nameKey: key(name), steps: JSON.stringify(steps), now }).lastInsertRowid,
        );
        return { id, name, steps };
      }),
    updatePlan: async (name, steps, now) => {
      const row = plan.update.get(JSON.stringify(steps), now, key(name));
      return row && { id: row.id, name: row.name, steps };
    },
    deletePlan: async (name) =>
      db.transaction(() => {
        const users = pipelinesUsing(plan.users.all(), name);
        if (users.length > 0) throw planInUse(name, users);
        return plan.delete.run(key(name)).changes > 0;
      })(),

    listPipelines: async () => pipe.all.all().map((row) => readPipeline(row) as Pipeline),
    findPipeline: async (idOrName) =>
      readPipeline(typeof idOrName === "number" ? pipe.byId.get(idOrName) : pipe.byName.get(key(idOrName))),
    insertPipeline: async (draft, now) =>
      unique("pipeline", draft.name, () =>
        db.transaction(() => {
          const id = Number(
            pipe.insert.run({
              name: draft.name,
              nameKey: key(draft.name),
              reject: draft.rejectOlderBuilds ? 1 : 0,
              now,
            }).lastInsertRowid,
          );
          writeStages(id, draft.stages);
          return { id, ...draft };
        })(),
      ),
    updatePipeline: async (id, draft, now) =>
      unique("pipeline", draft.name, () =>
        db.transaction(() => {
          pipe.update.run({
            id,
            name: draft.name,
            nameKey: key(draft.name),
            reject: draft.rejectOlderBuilds ? 1 : 0,
            now,
          });
          writeStages(id, draft.stages);
          return { id, ...draft };
        })(),
      ),
    deletePipeline: async (name) => {
      try {
        return pipe.delete.run(key(name)).changes > 0;
      } catch (error) {
        if (isForeignKeyViolation(error)) throw pipelineInUse(name, error);
        throw error;
      }
    },
  });
}
