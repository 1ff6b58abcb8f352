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

const plannedSchema = z
  .object({
    id: z.number().describe("The version's (asset directory: the file's) internal id"),
    group: z.string().describe("The package's group; empty for a file"),
    name: z.string().describe("The package's name; for a file, its path (as `path`)"),
    version: z.string().describe("The version; empty for a file"),
    path: z
      .string()
      .optional()
      .describe("Asset directories only: the file's path in the directory, e.g. `builds/app-1.0.zip`"),
    sha256: z.string().describe("The stored file's SHA-256: a run skips the item if it changed"),
    rule: z.number().describe("The rule's position in retentionRules, from 1"),
    reason: z.string(),
    bytes: z.number().describe("The item's size: what deleting it frees unless another item shares the bytes"),
    ageDays: z.number().describe("Whole days since it was published (a file: since it was last written)"),
    publishedAt: z.string().describe("When the version was published; for a file, when it was last written"),
    lastDownloadedAt: z
      .string()
      .nullable()
      .describe("The last download (a file's is stamped at most once a minute); null: never"),
  })
  .describe(
    "A version a run would delete or, in an asset directory, a file: then `path` names it, `name` repeats " +
      "the path and `group` and `version` are empty",
  );

/** What a feed's retention deletes: a universal feed's versions or an asset directory's files. */
const unitSchema = z
  .enum(["versions", "files"])
  .describe("What the counts count: versions, or an asset directory's files");

export const previewSchema = z.object({
  feed: z.string(),
  unit: unitSchema,
  evaluatedAt: z.string(),
  examined: z.number().describe("Versions in the feed (asset directory: files)"),
  versions: z.number().describe("Versions (asset directory: files) a run would delete"),
  bytes: z.number().describe("Bytes those items hold"),
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
  versionsDeleted: z.number().describe("Versions (asset directory: files) deleted"),
  bytesFreed: z.number(),
  versionsSkipped: z.number(),
});

export const runsSchema = z.object({ feed: z.string(), runs: z.array(runSchema) });
export const runWithLogSchema = runSchema.extend({ unit: unitSchema, log: z.array(z.string()) });

export { errorText };
