import type { FastifyInstance } from "fastify";
import { DomainError } from "../../../domain/errors.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import type { QueryLike } from "../../../http/params.js";
import {
  CONFIGURATION_MANAGE,
  remediationRequestOf,
  serversToCheck,
} from "../../configuration/configuration-routes.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { formFields } from "../form.js";
import { type EntityReads, KINDS, type RemediateForm, sendEntityPage } from "./entity-page.js";
import { entityUrl, jobUrl } from "./present.js";

/**
 * The check and remediate forms' targets. The same needs as /api/configuration/check and
 * /remediate (Infrastructure_Manage) and the same services: the checker, the servers a check
 * covers (serversToCheck), the remediation service with its arguments read as the API reads them
 * (remediationRequestOf: `job`, `start` as UTC, `simulate`). The CSRF token is checked before
 * (ui-security.ts). Success: 303 to the page (post/redirect/get); a refusal: the page again with
 * the message and the API's status for it.
 */
export function registerConfigurationActions(app: FastifyInstance, deps: WebUiDeps, reads: EntityReads): void {
  const { status, checker, remediation } = deps.configurationRuntime;
  const { infrastructure } = deps.configuration;

  app.post("/configuration/check", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, CONFIGURATION_MANAGE))) return reply;
    checker.request(await serversToCheck(infrastructure, status, undefined));
    return reply.redirect("/configuration?checked", 303);
  });

  app.post("/configuration/:kind/:name/:action", BROWSE_PAGE, async (request, reply) => {
    const { kind, name, action } = request.params as { kind: string; name: string; action: string };
    const type = Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
    if (type === undefined || (action !== "check" && action !== "remediate")) {
      return sendNotFound(request, reply, "There is no such configuration action.");
    }
    if (!(await requireView(request, reply, CONFIGURATION_MANAGE))) return reply;
    const form: RemediateForm = {
      job: formFields(request.body).text("job"),
      start: formFields(request.body).text("start"),
      simulate: formFields(request.body).text("simulate") === "true",
    };
    try {
      if (action === "check") {
        checker.request(await serversToCheck(infrastructure, status, { type, name }));
        return await reply.redirect(`${entityUrl(type, name)}?checked`, 303);
      }
      // The fields as sent (not the form's reading of them): a bad `simulate` is the API's 400, never a real run.
      const args: QueryLike = { job: form.job, start: form.start, simulate: formFields(request.body).text("simulate") };
      const token = await remediation.request(remediationRequestOf(type, name, args));
      request.log.info({ job: token, entityType: type }, "remediation requested in the web UI");
      return await reply.redirect(jobUrl(token), 303);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      if (error.kind === "not_found") return sendNotFound(request, reply, error.message);
      return sendEntityPage(request, reply.code(STATUS_BY_KIND[error.kind]), deps, reads, type, name, {
        form,
        message: error.message,
      });
    }
  });
}
