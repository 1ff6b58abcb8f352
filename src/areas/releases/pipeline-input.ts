import { z } from "zod";
import type { PipelineDraft } from "./model.js";
import { parseSteps } from "./plan-steps.js";

/**
 * A pipeline as operators write it: the body of `POST /api/pipelines/create|update` and the file
 * `wharf pipelines create --file` reads. Stages are ordered; each names its environment and either
 * a stored plan or inline steps.
 */
const stage = z.strictObject({
  name: z.string().min(1).max(50),
  environmentName: z.string().min(1).max(50).optional(),
  planName: z.string().min(1).max(100).optional(),
  // Checked by parseSteps (the executor's schema) for messages that name the stage and step.
  plan: z
    .array(z.record(z.string(), z.unknown()))
    .optional()
    .describe("Inline steps: log, warn, fail, sleep, set-variable, http, deploy-package (as /api/plans)"),
});

export const pipelineInputSchema = z.strictObject({
  name: z.string().min(1).max(100),
  stages: z.array(stage).min(1).max(50),
  rejectOlderBuilds: z
    .boolean()
    .optional()
    .describe("A newer build entering a stage rejects older ones (default true)"),
});
export type PipelineInput = z.infer<typeof pipelineInputSchema>;

export function pipelineDraft(input: PipelineInput): PipelineDraft {
  return {
    name: input.name,
    rejectOlderBuilds: input.rejectOlderBuilds ?? true,
    stages: input.stages.map((s) => ({
      name: s.name,
      ...(s.environmentName !== undefined && { environmentName: s.environmentName }),
      ...(s.planName !== undefined && { planName: s.planName }),
      ...(s.plan !== undefined && { plan: parseSteps(s.plan, `Stage '${s.name}'`) }),
    })),
  };
}
