import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { ACTOR_KINDS } from "./record.js";
import type { AuditFilter } from "./repository.js";

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 1000;

/** The query of both routes (the export ignores `limit`); checked by auditFilterOf for clear 400s. */
export const auditQuery = z
  .object({
    from: z.string().optional().describe("ISO 8601 instant: records at or after it"),
    to: z.string().optional().describe("ISO 8601 instant: records before it"),
    actor: z.string().optional().describe("A user name or API key display name, exactly"),
    action: z
      .string()
      .optional()
      .describe("Actions starting with this text, e.g. `DELETE` or `PUT /upack/:feed/upload`"),
    object: z.string().optional().describe("Objects containing this text, e.g. `feed=main`"),
    limit: z.string().optional().describe(`Records per page, 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT})`),
    after: z.string().optional().describe("The previous page's `next`: records older than it"),
  })
  .loose();
export type AuditQuery = z.infer<typeof auditQuery>;

export const auditRecordSchema = z.object({
  id: z.number(),
  at: z.string(),
  actor: z.object({ kind: z.enum(ACTOR_KINDS), name: z.string() }),
  address: z.string(),
  action: z.string(),
  object: z.string(),
  status: z.number(),
  outcome: z.enum(["success", "refused", "failed"]),
  requestId: z.string(),
});

export const auditPageSchema = z.object({
  records: z.array(auditRecordSchema),
  next: z.number().optional().describe("Pass as `after` for the next (older) page; absent on the last"),
});

function instant(name: string, text: string): string {
  const time = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || Number.isNaN(time)) {
    throw invalid("AUDIT_TIME_INVALID", `${name} must be an ISO 8601 date or instant, such as 2026-01-31T12:00:00Z.`);
  }
  return new Date(time).toISOString();
}

function positive(name: string, text: string, max: number): number {
  if (!/^\d{1,15}$/.test(text) || Number(text) < 1 || Number(text) > max) {
    throw invalid("AUDIT_PARAMETER_INVALID", `${name} must be a whole number from 1 to ${max}.`);
  }
  return Number(text);
}

const nonEmpty = (text: string | undefined) => (text === undefined || text === "" ? undefined : text);

/** The filter a query asks for; 400 naming the parameter that is not understood. */
export function auditFilterOf(query: AuditQuery): AuditFilter {
  const from = nonEmpty(query.from);
  const to = nonEmpty(query.to);
  const actor = nonEmpty(query.actor);
  const action = nonEmpty(query.action);
  const object = nonEmpty(query.object);
  const after = nonEmpty(query.after);
  return {
    ...(from === undefined ? {} : { from: instant("from", from) }),
    ...(to === undefined ? {} : { to: instant("to", to) }),
    ...(actor === undefined ? {} : { actor }),
    ...(action === undefined ? {} : { action }),
    ...(object === undefined ? {} : { object }),
    ...(after === undefined ? {} : { after: positive("after", after, Number.MAX_SAFE_INTEGER) }),
  };
}

export function limitOf(query: AuditQuery): number {
  const limit = nonEmpty(query.limit);
  return limit === undefined ? DEFAULT_LIMIT : positive("limit", limit, MAX_LIMIT);
}
