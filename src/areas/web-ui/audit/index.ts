import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerAuditPage } from "./page.js";

/** The audit log for administrators (issue 17 section 5): filters, paging and export. */
export function registerAuditPages(app: FastifyInstance, deps: WebUiDeps): void {
  registerAuditPage(app, deps.audit, deps.config.auditRetentionDays);
}
