import { DomainError } from "../../domain/errors.js";
import { type PlanStep, parsePlan } from "../../jobs/plan-steps.js";

/**
 * Plan steps as the releases area stores them. The schema is the executor's (src/jobs/plan-steps.ts):
 * what a pipeline stage or a stored plan accepts is exactly what the job runner can execute.
 */
export type { PlanStep } from "../../jobs/plan-steps.js";

/** Validates steps given by a client; invalid PLAN_INVALID, its message prefixed with `where`. */
export function parseSteps(steps: unknown, where?: string): PlanStep[] {
  try {
    return parsePlan({ steps }).steps;
  } catch (error) {
    if (where === undefined || !(error instanceof DomainError)) throw error;
    throw new DomainError(error.kind, error.code, `${where}: ${error.message}`, { cause: error });
  }
}

/**
 * Reads a steps column written by this area. Not validated again: every write validates with
 * parseSteps and stores its result, defaults applied (stored plans: catalog-service createPlan and
 * updatePlan; a stage's inline plan: pipeline-input.ts pipelineDraft, for the API and the CLI;
 * a deployment copies one of those), and this runs for every deployment row read.
 */
export function parseStoredSteps(text: string | null): PlanStep[] {
  return text === null ? [] : (JSON.parse(text) as PlanStep[]);
}
