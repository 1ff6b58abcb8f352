import { z } from "zod";
import { AGENT_LIMITS } from "../../agent/protocol.js";
import { ITEM_TYPES, type LogLevel } from "../../drift/model.js";

/**
 * What an agent may post (src/agent/protocol.ts), bounded so that a huge or malformed body is a
 * 400 or 413 naming the field, never a 500 nor a result Wharf would store unchecked.
 */

/** Results and changes of one post: no work has more items than this (src/drift/items MAX_ITEMS is lower). */
const MAX_RESULTS = 100_000;

const text = z.string().max(AGENT_LIMITS.textChars);
const scalar = z.union([text, z.number(), z.boolean(), z.null()]);
const itemType = z.enum(ITEM_TYPES);
const itemKey = z.string().min(1).max(4096);
const LOG_LEVELS = ["debug", "info", "warn", "error"] as const satisfies readonly LogLevel[];

export const workResultSchema = z.strictObject({
  results: z
    .array(
      z.object({
        type: itemType,
        key: itemKey,
        role: z.string().max(1024).nullable(),
        status: z.enum(["current", "drifted", "unknown"]),
        differences: z
          .array(z.object({ property: z.string().min(1).max(256), desired: scalar, actual: scalar }))
          .max(AGENT_LIMITS.differencesPerItem),
        error: text.optional(),
      }),
    )
    .max(MAX_RESULTS),
  changes: z
    .array(
      z.object({
        type: itemType,
        key: itemKey,
        description: text,
        installed: z
          .object({
            feed: z.string().max(256),
            group: z.string().max(1024),
            name: z.string().max(256),
            version: z.string().max(256),
            target: z.string().max(4096),
          })
          .optional(),
      }),
    )
    .max(MAX_RESULTS),
  error: text.optional(),
});

export const logBodySchema = z.strictObject({
  lines: z
    .array(z.object({ level: z.enum(LOG_LEVELS), message: z.string().max(AGENT_LIMITS.logLineChars) }))
    .max(AGENT_LIMITS.logLines),
});

/** `fieldPath: message` of the first problem, for a 400's text. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (issue === undefined) return "invalid";
  const where = issue.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`)).join("");
  return `${where.replace(/^\./, "") || "body"}: ${issue.message}`;
}
