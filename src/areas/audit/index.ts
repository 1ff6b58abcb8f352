import type { FastifyPluginAsync } from "fastify";
import type { AuditLog } from "./audit-log.js";
import { auditRoutes } from "./routes.js";

export { type AuditLog, type AuditPage, createAuditLog } from "./audit-log.js";
export { registerAuditRecording } from "./recording.js";
export type { AuditFilter } from "./repository.js";

/**
 * The audit log's API (issue 17 section 4): `/api/audit` and `/api/audit/export`, reading only.
 * The records are made by one root hook (recording.ts, registered by app.ts before any route) and
 * by the CLI (cli-record.ts).
 */
export const auditArea: FastifyPluginAsync<{ audit: AuditLog }> = async (app, { audit }) => {
  await app.register(auditRoutes, { audit });
};
