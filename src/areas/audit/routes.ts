import { Readable } from "node:stream";
import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errorText } from "../../http/errors.js";
import { ADMINISTER } from "../security/model.js";
import type { AuditLog } from "./audit-log.js";
import { auditFilterOf, auditPageSchema, auditQuery, limitOf } from "./schemas.js";

const TAGS = ["audit"];
const ERRORS = { 400: errorText, 401: errorText, 403: errorText } as const;

/**
 * Reading the audit log: full-control System keys, users and personal keys with
 * Admin_ConfigureProGet (as the security API). No route edits or deletes a record.
 */
export const auditRoutes: FastifyPluginAsync<{ audit: AuditLog }> = async (app, { audit }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.route({
    method: "GET",
    url: "/api/audit",
    schema: {
      summary: "Query the audit log",
      description:
        "Newest first, `limit` at a time (default 100, at most 1000); `next` in the answer is the `after` of the " +
        "next page. Filters: `from`/`to` (ISO instants), `actor` (exact), `action` (prefix), `object` (contains).",
      tags: TAGS,
      querystring: auditQuery,
      response: { 200: auditPageSchema, ...ERRORS },
    },
    config: { access: { need: ADMINISTER } },
    handler: async (request) => audit.page(auditFilterOf(request.query), limitOf(request.query)),
  });

  api.route({
    method: "GET",
    url: "/api/audit/export",
    schema: {
      summary: "Export the audit log as JSON lines",
      description:
        "Every record the filters keep (as `/api/audit`, without paging), newest first, one JSON object a line " +
        "(`application/x-ndjson`), streamed.",
      tags: TAGS,
      querystring: auditQuery,
      response: { 200: z.string().describe("One audit record as JSON per line"), ...ERRORS },
    },
    config: { access: { need: ADMINISTER } },
    handler: async (request, reply) => {
      const filter = auditFilterOf(request.query);
      return reply
        .type("application/x-ndjson; charset=utf-8")
        .header("Content-Disposition", 'attachment; filename="wharf-audit.jsonl"')
        .send(Readable.from(audit.exportLines(filter)) as never);
    },
  });
};
