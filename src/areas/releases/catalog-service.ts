import type { Clock } from "../../domain/clock.js";
import { DomainError, invalid, notFound } from "../../domain/errors.js";
import type { CatalogRepository } from "./catalog-repository.js";
import {
  type Application,
  type ApplicationDraft,
  BUILD_NUMBER_SCHEMES,
  type DeploymentPlan,
  type Environment,
  type EnvironmentDraft,
  type Pipeline,
  type PipelineDraft,
  RELEASE_USAGES,
} from "./model.js";
import { isVariableName } from "./params.js";
import { parseSteps } from "./plan-steps.js";

/** Applications, environments and pipelines: the operators' management additions (docs/compat.md 7.8, 8.2). */
export interface CatalogService {
  listApplications(): Promise<Application[]>;
  /** A number is an id, a string a name (any letter case). */
  findApplication(idOrName: number | string): Promise<Application | undefined>;
  createApplication(draft: ApplicationDraft): Promise<Application>;
  /** Identified by id, or by name when no id is given; missing fields are left unchanged. */
  updateApplication(ref: { id?: number; name?: string }, change: Partial<ApplicationDraft>): Promise<Application>;
  listEnvironments(name?: string): Promise<Environment[]>;
  createEnvironment(draft: EnvironmentDraft): Promise<Environment>;
  updateEnvironment(name: string, change: Partial<EnvironmentDraft>): Promise<Environment>;
  deleteEnvironment(name: string): Promise<void>;
  listPipelines(): Promise<Pipeline[]>;
  getPipeline(name: string): Promise<Pipeline>;
  createPipeline(draft: PipelineDraft): Promise<Pipeline>;
  updatePipeline(name: string, draft: PipelineDraft): Promise<Pipeline>;
  deletePipeline(name: string): Promise<void>;
  listPlans(): Promise<DeploymentPlan[]>;
  getPlan(name: string): Promise<DeploymentPlan>;
  /** `steps` as a client sent them: validated by the executor's schema (invalid PLAN_INVALID). */
  createPlan(name: string, steps: unknown): Promise<DeploymentPlan>;
  /** Replaces the steps; deployments already created keep the steps they copied. */
  updatePlan(name: string, steps: unknown): Promise<DeploymentPlan>;
  /** conflict PLAN_IN_USE while a pipeline stage names the plan. */
  deletePlan(name: string): Promise<void>;
}

/** ≤ 100 characters, not starting with white space. */
const PIPELINE_NAME = /^[^\s].{0,99}$/;
/** Plans are named like pipelines, and stages refer to them by that name. */
const PLAN_NAME = PIPELINE_NAME;
/** ≤ 50 letters, digits, `.`, `_`, `-` or spaces, starting with a letter or digit. */
const APPLICATION_NAME = /^[A-Za-z0-9][A-Za-z0-9._ -]{0,49}$/;
const planNotFound = (name: string) => notFound("PLAN_NOT_FOUND", `The deployment plan '${name}' was not found.`);

/** docs/compat.md 8.2: ≤ 50 letters, digits, `-`, `_`; starts with a letter; not ending in `-`/`_`. */
const ENTITY_NAME = /^[A-Za-z]([A-Za-z0-9_-]{0,48}[A-Za-z0-9])?$/;

export function parseReleaseUsage(text: string): Application["releaseUsage"] {
  const value = text.toLowerCase() === "disabled" ? "none" : text.toLowerCase();
  if (!(RELEASE_USAGES as readonly string[]).includes(value)) {
    throw invalid("INVALID_RELEASE_USAGE", "'releaseUsage' must be Required, Optional or Disabled.");
  }
  return value as Application["releaseUsage"];
}

export function parseScheme(text: string): Application["buildNumberScheme"] {
  const lowered = text.toLowerCase();
  const value = lowered === "datetimebased" ? "date-based" : lowered;
  if (!(BUILD_NUMBER_SCHEMES as readonly string[]).includes(value)) {
    throw invalid("INVALID_BUILD_NUMBER_SCHEME", "'buildNumberScheme' must be Sequential, DateTimeBased or Unique.");
  }
  return value as Application["buildNumberScheme"];
}

function checkName(what: string, name: string, pattern: RegExp): void {
  if (!pattern.test(name)) throw invalid("INVALID_NAME", `Invalid ${what} name '${name}'.`);
}

export function createCatalogService({ catalog, clock }: { catalog: CatalogRepository; clock: Clock }): CatalogService {
  const now = () => clock.now().toISOString();
  const validPipeline = async (draft: PipelineDraft) => {
    checkName("pipeline", draft.name, PIPELINE_NAME);
    if (draft.stages.length === 0) throw invalid("NO_STAGES", "A pipeline needs at least one stage.");
    const seen = new Set<string>();
    for (const stage of draft.stages) {
      if (seen.has(stage.name.toLowerCase()))
        throw invalid("DUPLICATE_STAGE", `The stage '${stage.name}' is listed twice.`);
      seen.add(stage.name.toLowerCase());
      if (stage.planName !== undefined && stage.plan !== undefined) {
        throw invalid("PLAN_AMBIGUOUS", `Stage '${stage.name}': give either planName or plan, not both.`);
      }
      if (stage.planName !== undefined && !(await catalog.findPlan(stage.planName))) {
        throw new DomainError(
          "unprocessable",
          "PLAN_NOT_FOUND",
          `The deployment plan '${stage.planName}' does not exist.`,
        );
      }
    }
  };
  const environmentNamed = async (name: string) => {
    const environment = await catalog.findEnvironment(name);
    if (!environment) throw notFound("ENVIRONMENT_NOT_FOUND", `The environment '${name}' was not found.`);
    return environment;
  };
  const checkVariables = (variables: Readonly<Record<string, string>>) => {
    for (const name of Object.keys(variables)) {
      if (!isVariableName(name)) throw invalid("INVALID_VARIABLE_NAME", `Invalid variable name '${name}'.`);
    }
  };

  return {
    listApplications: () => catalog.listApplications(),
    findApplication: (idOrName) => catalog.findApplication(idOrName),
    async createApplication(draft) {
      checkName("application", draft.name, APPLICATION_NAME);
      return catalog.insertApplication(draft, now());
    },
    async updateApplication(ref, change) {
      const current = await catalog.findApplication(ref.id ?? ref.name ?? "");
      if (!current) throw notFound("APPLICATION_NOT_FOUND", "The specified application was not found.");
      const { id, ...rest } = current;
      const draft = { ...rest, ...change };
      checkName("application", draft.name, APPLICATION_NAME);
      return catalog.updateApplication(id, draft);
    },
    async listEnvironments(name) {
      if (name !== undefined) return [await environmentNamed(name)];
      return catalog.listEnvironments();
    },
    async createEnvironment(draft) {
      checkName("environment", draft.name, ENTITY_NAME);
      checkVariables(draft.variables);
      return catalog.insertEnvironment(draft);
    },
    async updateEnvironment(name, change) {
      const { id, ...current } = await environmentNamed(name);
      const draft = { ...current, ...change };
      checkName("environment", draft.name, ENTITY_NAME);
      checkVariables(draft.variables);
      return catalog.updateEnvironment(id, draft);
    },
    async deleteEnvironment(name) {
      if (!(await catalog.deleteEnvironment(name)))
        throw notFound("ENVIRONMENT_NOT_FOUND", `The environment '${name}' was not found.`);
    },
    listPipelines: () => catalog.listPipelines(),
    async getPipeline(name) {
      const pipeline = await catalog.findPipeline(name);
      if (!pipeline) throw notFound("PIPELINE_NOT_FOUND", `The pipeline '${name}' was not found.`);
      return pipeline;
    },
    async createPipeline(draft) {
      await validPipeline(draft);
      return catalog.insertPipeline(draft, now());
    },
    async updatePipeline(name, draft) {
      const current = await this.getPipeline(name);
      await validPipeline(draft);
      return catalog.updatePipeline(current.id, draft, now());
    },
    async deletePipeline(name) {
      if (!(await catalog.deletePipeline(name)))
        throw notFound("PIPELINE_NOT_FOUND", `The pipeline '${name}' was not found.`);
    },
    listPlans: () => catalog.listPlans(),
    async getPlan(name) {
      const plan = await catalog.findPlan(name);
      if (!plan) throw planNotFound(name);
      return plan;
    },
    async createPlan(name, steps) {
      checkName("plan", name, PLAN_NAME);
      return catalog.insertPlan(name, parseSteps(steps), now());
    },
    async updatePlan(name, steps) {
      const plan = await catalog.updatePlan(name, parseSteps(steps), now());
      if (!plan) throw planNotFound(name);
      return plan;
    },
    async deletePlan(name) {
      if (!(await catalog.deletePlan(name))) throw planNotFound(name);
    },
  };
}
