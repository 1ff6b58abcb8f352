import type { FastifyInstance } from "fastify";
import { byDatabase } from "../../../storage/metadata-db.js";
import { CONFIGURATION_VIEW } from "../../configuration/configuration-routes.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { defineView, sendPage } from "../views.js";
import { registerConfigurationActions } from "./actions.js";
import { KINDS, sendEntityPage } from "./entity-page.js";
import { isMoving, jobView, statusCounts, statusView } from "./present.js";
import { createRemediationJobs } from "./remediation-jobs.js";
import { createPostgresRemediationJobs } from "./remediation-jobs-postgres.js";
import { JOB, OVERVIEW } from "./templates.js";
import { CONFIGURATION_MANAGE } from "../../configuration/configuration-routes.js";

const OVERVIEW_VIEW = defineView("configuration-overview", OVERVIEW);
const JOB_VIEW = defineView("configuration-job", JOB);

/** The notice a page shows after the check its form started (post/redirect/get: `?checked`). */
export const CHECK_NOTICE = "Check started: the status updates when it ends.";
const checkedNotice = (query: unknown) =>
  Object.hasOwn((query ?? {}) as object, "checked") ? CHECK_NOTICE : undefined;

/**
 * Configuration management (issue 16 section 1): servers, roles and environments with their drift
 * status, a server's items and what differs, check and remediate, the remediation jobs' logs. Read
 * through the configuration API's own services (status, checker, remediation) with its needs:
 * Infrastructure_View to look, Infrastructure_Manage to check and remediate.
 */
export async function registerConfigurationPages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  const jobs = byDatabase(deps.db, createRemediationJobs, createPostgresRemediationJobs);
  const { collections } = deps.configurationRuntime;
  const reads = { jobs, recentChecks: (serverId: number) => collections.recentOf(serverId) };
  const status = deps.configurationRuntime.status;

  app.get("/configuration", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, CONFIGURATION_VIEW))) return reply;
    const all = await status.allStatuses();
    const servers = all.filter((o) => o.type === "server");
    const jobRows = (await jobs.recent()).map((job) => jobView(job, deps.clock.now()));
    return sendPage(request, reply, OVERVIEW_VIEW, {
      title: "Configuration",
      counts: statusCounts(servers),
      servers: servers.map(statusView),
      roles: all.filter((o) => o.type === "role").map(statusView),
      environments: all.filter((o) => o.type === "environment").map(statusView),
      jobs: jobRows,
      live: servers.some((o) => isMoving(o.status)) || jobRows.some((j) => j.moving),
      actions: await request.can(CONFIGURATION_MANAGE),
      notice: checkedNotice(request.query),
    });
  });

  app.get("/configuration/:kind/:name", BROWSE_PAGE, async (request, reply) => {
    const { kind, name } = request.params as { kind: string; name: string };
    const type = Object.hasOwn(KINDS, kind) ? KINDS[kind] : undefined;
    if (type === undefined) return sendNotFound(request, reply, "There is no such configuration page.");
    if (!(await requireView(request, reply, CONFIGURATION_VIEW))) return reply;
    return sendEntityPage(request, reply, deps, reads, type, name, { notice: checkedNotice(request.query) });
  });

  app.get("/configuration/jobs/:id", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, CONFIGURATION_VIEW))) return reply;
    const text = (request.params as { id: string }).id;
    const job = /^[1-9][0-9]{0,14}$/.test(text) ? await jobs.get(Number(text)) : undefined;
    if (job === undefined) return sendNotFound(request, reply, "There is no remediation job with this number.");
    const log = (await deps.jobs.readLog(job.id)).map((line) => ({
      level: line.level,
      time: line.loggedAt.toISOString().slice(11, 19),
      message: line.message,
    }));
    const view = jobView(job, deps.clock.now());
    return sendPage(request, reply, JOB_VIEW, {
      title: view.title,
      job: view,
      log,
      live: view.moving,
    });
  });

  registerConfigurationActions(app, deps, reads);
}
