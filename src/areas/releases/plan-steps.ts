import { DomainError } from "../../domain/errors.js";
import { type PlanStep, parsePlan, planStepsSchema } from "../../jobs/plan-steps.js";

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
    throw new DomainError(error.kind, error.code, `${where}: ${error.message}`);
  }
}

/** Reads a steps column written by this area (already validated, defaults applied, on write). */
export function parseStoredSteps(text: string | null): PlanStep[] {
  return text === null ? [] : planStepsSchema.parse(JSON.parse(text));
}
