import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { forbidden } from "../../../domain/errors.js";
import type { Deployment } from "../../releases/model.js";
import { addBrowserConstraint, BROWSER_ONLY } from "../../releases/view-routes.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { positiveId } from "../form.js";
import { queryText } from "../pages/present.js";
import { registerDeliveryActions } from "./actions.js";
import { registerUiBadgeImages } from "./badge-images.js";
import { deliveryPages, sendExecutionPage, VIEW_NEED } from "./pages.js";
import { isRunning } from "./present.js";

type Params = Record<string, string>;

/** The badge link targets answer HTML only to browsers; other clients keep the releases area's JSON route. */
const BADGE_TARGET = { ...BROWSE_PAGE, constraints: BROWSER_ONLY };

/**
 * Delivery (issue 16 section 1): applications, releases, builds and deployments with their live
 * logs, the actions the releases API offers, the badge builder; the badge link targets answer HTML
 * to browsers and JSON to clients asking for it (releases/view-routes.ts).
 */
export async function registerDeliveryPages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  addBrowserConstraint(app);
  const pages = deliveryPages(deps);
  const { releases, runner } = deps.releases;
  const logOf = (deployment: Deployment) => (runner ? runner.logOf(deployment) : Promise.resolve(deployment.log));

  /** Reads the page's ids, and answers 404 when one is not an id or names nothing. */
  function page(render: (request: FastifyRequest, reply: FastifyReply, params: Params) => Promise<boolean>) {
    return async (request: FastifyRequest, reply: FastifyReply) => {
      if (!(await requireView(request, reply, VIEW_NEED))) return reply;
      if (!(await render(request, reply, request.params as Params))) {
        return sendNotFound(request, reply, "There is nothing at this address, or it was deleted.");
      }
      return reply;
    };
  }
  const ids = (...texts: Array<string | undefined>) => texts.map((text) => positiveId(text ?? ""));

  app.get("/applications", BROWSE_PAGE, async (request, reply) => {
    if (!(await requireView(request, reply, VIEW_NEED))) return reply;
    return pages.applications(request, reply);
  });

  app.get(
    "/applications/:applicationId",
    BADGE_TARGET,
    page(async (request, reply, params) => {
      const [applicationId] = ids(params.applicationId);
      return applicationId !== undefined && pages.application(request, reply, applicationId);
    }),
  );

  app.get(
    "/applications/:applicationId/releases/:releaseNumber",
    BADGE_TARGET,
    page(async (request, reply, params) => {
      const [applicationId] = ids(params.applicationId);
      return applicationId !== undefined && pages.release(request, reply, applicationId, params.releaseNumber ?? "");
    }),
  );

  app.get(
    "/applications/:applicationId/builds/:buildId",
    BADGE_TARGET,
    page(async (request, reply, params) => {
      const [applicationId, buildId] = ids(params.applicationId, params.buildId);
      return (
        applicationId !== undefined && buildId !== undefined && pages.build(request, reply, applicationId, buildId)
      );
    }),
  );

  /** The deployment an execution URL names, when it belongs to the application the URL names. */
  async function deploymentAt(params: Params): Promise<Deployment | undefined> {
    const [applicationId, deploymentId] = ids(params.applicationId, params.deploymentId);
    if (applicationId === undefined || deploymentId === undefined) return undefined;
    const deployment = await releases.findDeployment(deploymentId);
    return deployment?.applicationId === applicationId ? deployment : undefined;
  }

  app.get(
    "/applications/:applicationId/executions/:deploymentId",
    BADGE_TARGET,
    page(async (request, reply, params) => {
      const deployment = await deploymentAt(params);
      if (deployment === undefined) return false;
      await sendExecutionPage(request, reply, deployment, await logOf(deployment));
      return true;
    }),
  );

  /**
   * The execution page's script polls this while the deployment runs: the log from `from` (the
   * length the page already shows) and whether it ended. A `ui` route, so that the session cookie
   * counts (it never does on the JSON page); a GET that changes nothing.
   */
  app.get("/ui/applications/:applicationId/executions/:deploymentId/log", BROWSE_PAGE, async (request, reply) => {
    if (!(await request.can(VIEW_NEED))) throw forbidden();
    const deployment = await deploymentAt(request.params as Params);
    if (deployment === undefined) return sendNotFound(request, reply, "No such execution.");
    const log = await logOf(deployment);
    const fromText = queryText(request.query, "from") ?? "0";
    const from = /^\d{1,12}$/.test(fromText) ? Math.min(Number(fromText), log.length) : 0;
    return reply.header("Cache-Control", "no-store").send({
      status: deployment.status,
      text: log.slice(from),
      next: log.length,
      running: isRunning(deployment),
    });
  });

  registerDeliveryActions(app, deps, pages);
  await registerUiBadgeImages(app, deps);
}
