import { z } from "zod";
import { errorText } from "../../http/errors.js";

/** Shapes of `/api/retention/...` (Wharf's own API: ProGet has no public retention API). */

export const feedQuery = z.object({ feed: z.string().min(1).max(1000).describe("The feed's name") }).loose();

export const runsQuery = feedQuery.extend({
  limit: z.coerce.number().int().min(1).max(500).optional().describe("Newest first; default 50"),
});

export const runParams = z.object({ id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });

export const runBodySchema = z
  .object({
    token: z
      .string()
      .regex(/^[0-9a-f]{32}$/, "a preview token is 32 hexadecimal digits")
      .nullish()
      .describe("The token of a preview made with POST: the run deletes exactly that preview's versions"),
  })
  .loose();

const plannedSchema = z.object({
  id: z.number().describe("The version's internal id"),
  group: z.string(),
  name: z.string(),
  version: z.string(),
  sha256: z.string().describe("The stored file's SHA-256: a run skips the version if it changed"),
  rule: z.number().describe("The rule's position in retentionRules, from 1"),
  reason: z.string(),
  bytes: z.number().describe("The version's size: what deleting it frees unless another version shares the bytes"),
  ageDays: z.number().describe("Whole days since it was published"),
  publishedAt: z.string(),
  lastDownloadedAt: z.string().nullable(),
});

export const previewSchema = z.object({
  feed: z.string(),
  evaluatedAt: z.string(),
  examined: z.number().describe("Versions in the feed"),
  versions: z.number().describe("Versions a run would delete"),
  bytes: z.number().describe("Bytes those versions hold"),
  token: z.string().optional().describe("POST only: give it to POST run to delete exactly this list"),
  items: z.array(plannedSchema),
});

export const runSchema = z.object({
  id: z.number(),
  jobId: z.number().nullable(),
  status: z.string().describe("The job's status: pending, executing, succeeded, warned (some skipped) or failed"),
  trigger: z.enum(["manual", "schedule"]),
  requestedBy: z.string(),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
  fromPreview: z.boolean(),
  versionsDeleted: z.number(),
  bytesFreed: z.number(),
  versionsSkipped: z.number(),
});

export const runsSchema = z.object({ feed: z.string(), runs: z.array(runSchema) });
export const runWithLogSchema = runSchema.extend({ log: z.array(z.string()) });

export { errorText };
