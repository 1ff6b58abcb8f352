import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { DomainError, notFound } from "../../../domain/errors.js";
import { STATUS_BY_KIND } from "../../../http/errors.js";
import { actorName } from "../../releases/actor.js";
import { releasesNeed } from "../../releases/routes-common.js";
import type { WebUiDeps } from "../index.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "../pages/access.js";
import { formFields, positiveId } from "../form.js";
import type { deliveryPages, Refusal } from "./pages.js";
import { buildUrl, executionUrl, releaseUrl } from "./present.js";

type Pages = ReturnType<typeof deliveryPages>;
type Params = Record<string, string>;
const NO_VARIABLES: ReadonlyMap<string, string> = new Map();

/** A form field, blank fields as absent (the service then applies its default, as for an API call without it). */
function field(request: FastifyRequest, name: string): string | undefined {
  const value = formFields(request.body).text(name).trim();
  return value === "" ? undefined : value;
}

/**
 * The actions the releases API offers (docs/compat.md 7.2-7.4), as form posts: each asks the API's
 * need for it (the same `releasesNeed` attributes as release-routes.ts and build-routes.ts), calls
 * the same ReleaseService method with the signed-in user as actor, and answers 303 to the page that
 * shows the result. A refusal of the service shows the page again with its message and status.
 * The CSRF token is checked for every `ui` POST before this runs (session/ui-security.ts).
 */
export function registerDeliveryActions(app: FastifyInstance, deps: WebUiDeps, pages: Pages): void {
  const { releases } = deps.releases;

  function action(
    attribute: Parameters<typeof releasesNeed>[0],
    perform: (request: FastifyRequest, applicationId: number, params: Params) => Promise<string>,
    showAgain: (
      request: FastifyRequest,
      reply: FastifyReply,
      applicationId: number,
      params: Params,
      refusal: Refusal,
    ) => Promise<boolean>,
  ) {
    return async (request: FastifyRequest, reply: FastifyReply) => {
      if (!(await requireView(request, reply, releasesNeed(attribute)))) return reply;
      const params = request.params as Params;
      const applicationId = positiveId(params.applicationId ?? "");
      if (applicationId === undefined) return sendNotFound(request, reply, "No such application.");
      try {
        return reply.redirect(await perform(request, applicationId, params), 303);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        const refusal = { status: STATUS_BY_KIND[error.kind], message: error.message };
        if (await showAgain(request, reply, applicationId, params, refusal)) return reply;
        return sendNotFound(request, reply, error.message);
      }
    };
  }
  const by = (request: FastifyRequest) => actorName(request.principal);
  const onApplication = (
    request: FastifyRequest,
    reply: FastifyReply,
    applicationId: number,
    _p: Params,
    refusal: Refusal,
  ) => pages.application(request, reply, applicationId, refusal);
  const onRelease = (
    request: FastifyRequest,
    reply: FastifyReply,
    applicationId: number,
    p: Params,
    refusal: Refusal,
  ) => pages.release(request, reply, applicationId, p.releaseNumber ?? "", refusal);
  const onBuild = async (
    request: FastifyRequest,
    reply: FastifyReply,
    applicationId: number,
    p: Params,
    refusal: Refusal,
  ) => {
    const buildId = positiveId(p.buildId ?? "");
    return buildId !== undefined && pages.build(request, reply, applicationId, buildId, refusal);
  };

  app.post(
    "/applications/:applicationId/releases",
    BROWSE_PAGE,
    action(
      "Releases_Manage",
      async (request, applicationId) => {
        const pipelineName = field(request, "pipelineName");
        const release = await releases.createRelease(
          {
            applicationId,
            releaseNumber: field(request, "releaseNumber") ?? "",
            ...(pipelineName !== undefined && { pipelineName }),
            variables: NO_VARIABLES,
          },
          by(request),
        );
        return releaseUrl(applicationId, release.number);
      },
      onApplication,
    ),
  );

  for (const action_ of ["cancel", "restore"] as const) {
    app.post(
      `/applications/:applicationId/releases/:releaseNumber/${action_}`,
      BROWSE_PAGE,
      action(
        "Releases_Manage",
        async (request, applicationId, params) => {
          const ref = { applicationId, releaseNumber: params.releaseNumber ?? "" };
          const release =
            action_ === "cancel"
              ? await releases.cancelRelease(ref, field(request, "reason"), by(request))
              : await releases.restoreRelease(ref);
          return releaseUrl(applicationId, release.number);
        },
        onRelease,
      ),
    );
  }

  /** Create build: from the application page (any release, or a pipeline) or a release's page (that release). */
  const createBuild = (fromRelease: boolean) =>
    action(
      "ReleasePackages_Create",
      async (request, applicationId, params) => {
        const releaseNumber = fromRelease ? params.releaseNumber : field(request, "releaseNumber");
        const pipelineName = fromRelease ? undefined : field(request, "pipelineName");
        const buildNumber = field(request, "buildNumber");
        const { build } = await releases.createBuild(
          {
            applicationId,
            ...(releaseNumber !== undefined && { releaseNumber }),
            ...(pipelineName !== undefined && { pipelineName }),
            ...(buildNumber !== undefined && { buildNumber }),
            variables: NO_VARIABLES,
          },
          by(request),
        );
        return buildUrl(applicationId, build.id);
      },
      fromRelease ? onRelease : onApplication,
    );
  app.post("/applications/:applicationId/builds", BROWSE_PAGE, createBuild(false));
  app.post("/applications/:applicationId/releases/:releaseNumber/builds", BROWSE_PAGE, createBuild(true));

  /**
   * The build a URL names, by id, once found in the application the URL names (the service, given a
   * build id, does not compare the application: the page's URL must not act on another's build).
   */
  async function buildRef(applicationId: number, params: Params) {
    const buildId = positiveId(params.buildId ?? "");
    const [build] = buildId === undefined ? [] : await releases.listBuilds({ applicationId, buildId });
    if (build === undefined) throw notFound("BUILD_NOT_FOUND", "The build was not found in this application.");
    return { buildId: build.id };
  }

  app.post(
    "/applications/:applicationId/builds/:buildId/deploy",
    BROWSE_PAGE,
    action(
      "ReleasePackages_Deploy",
      async (request, applicationId, params) => {
        // To the next stage only: a forced deploy (skipping stages) is the API's, with its extra need.
        const [deployment] = await releases.deployBuild(
          { ...(await buildRef(applicationId, params)), force: false, variables: NO_VARIABLES },
          by(request),
        );
        return deployment
          ? executionUrl(applicationId, deployment.id)
          : buildUrl(applicationId, Number(params.buildId));
      },
      onBuild,
    ),
  );

  app.post(
    "/applications/:applicationId/builds/:buildId/reject",
    BROWSE_PAGE,
    action(
      "ReleasePackages_Manage",
      async (request, applicationId, params) => {
        const build = await releases.rejectBuild(await buildRef(applicationId, params), by(request));
        return buildUrl(applicationId, build.id);
      },
      onBuild,
    ),
  );
}
