import { z } from "zod";

/**
 * Steps of a deployment plan (PRODUCT.md "How the delivery half becomes real"). Stored and
 * validated here; the job runner executes them. Strings may carry `$Name` references to release,
 * build and deployment variables, resolved by the runner.
 */
const message = z.string().min(1).max(4000);

export const planStepSchema = z.discriminatedUnion("type", [
  z.strictObject({ type: z.literal("log"), message }),
  z.strictObject({ type: z.literal("warn"), message }),
  z.strictObject({ type: z.literal("fail"), message }),
  z.strictObject({ type: z.literal("sleep"), seconds: z.number().int().min(0).max(3600) }),
  z.strictObject({ type: z.literal("set-variable"), name: z.string().min(1).max(50), value: z.string().max(4000) }),
  z.strictObject({
    type: z.literal("call-url"),
    url: z.string().min(1).max(2000),
    method: z.enum(["GET", "POST", "PUT", "DELETE"]).optional(),
    body: z.string().max(65536).optional(),
  }),
  z.strictObject({
    type: z.literal("deploy-package"),
    feed: z.string().min(1),
    group: z.string().optional(),
    name: z.string().min(1),
    /** Absent: the latest version. */
    version: z.string().optional(),
    targetDirectory: z.string().min(1),
  }),
]);
export type PlanStep = z.infer<typeof planStepSchema>;

export const planStepsSchema = z.array(planStepSchema).max(200);

/** Reads a steps column written by this area (already validated on write). */
export function parseStoredSteps(text: string | null): PlanStep[] {
  return text === null ? [] : planStepsSchema.parse(JSON.parse(text));
}
