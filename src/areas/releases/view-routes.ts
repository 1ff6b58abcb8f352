import type { FastifyInstance, FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { notFound } from "../../domain/errors.js";
import type { CatalogService } from "./catalog-service.js";
import { executionLogRoutes } from "./execution-log-routes.js";
import type { Deployment } from "./model.js";
import { WHOLE_NUMBER } from "./params.js";
import type { ReleaseService } from "./release-service.js";
import { authorizeReleases, errors } from "./routes-common.js";
import {
  applicationInfo,
  applicationInfoSchema,
  buildInfo,
  buildInfoSchema,
  deploymentInfo,
  deploymentInfoSchema,
  releaseInfo,
  releaseInfoSchema,
} from "./schemas.js";

/**
 * The pages CI badge links point at (docs/compat.md 7.6): `/applications/<id>`, `.../releases/<number>`,
 * `.../builds/<id>` and `.../executions/<deployment id>` (with its log). These routes answer JSON, with
 * read access as for `/api/releases`, to every client that does not prefer HTML (`application/json`,
 * the any-type wildcard, no Accept); a browser preferring text/html gets the web UI's page at the same address, a
 * separate route (`constraints: BROWSER_ONLY`) that alone is authenticated by the session cookie.
 */
const TAGS = ["releases"];
const idParam = z.string().regex(WHOLE_NUMBER);
const params = z.object({ applicationId: idParam });

/** The route constraint that sends browsers to the web UI's page and everyone else to the JSON here. */
const ACCEPT_STRATEGY = "wharfPrefers";
export const BROWSER_ONLY = { [ACCEPT_STRATEGY]: "html" } as const;

/**
 * Whether the Accept header ranks HTML above JSON: text/html (or XHTML) with a weight above zero
 * and at least that of application/json. The any-type wildcard alone, no Accept, or JSON first: not a browser.
 */
export function prefersHtml(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  let html = 0;
  let json = 0;
  for (const element of accept.split(",")) {
    const [type = "", ...params] = element.split(";").map((part) => part.trim().toLowerCase());
    const weight = params.map((param) => /^q=([01](?:\.\d{0,3})?)$/.exec(param)).find((m) => m)?.[1];
    const q = weight === undefined ? 1 : Number(weight);
    if (type === "text/html" || type === "application/xhtml+xml") html = Math.max(html, q);
    else if (type === "application/json") json = Math.max(json, q);
  }
  return html > 0 && html >= json;
}

/** Registers the Accept constraint once (the router is shared by every plugin of the app). */
export function addBrowserConstraint(app: FastifyInstance): void {
  if (app.hasConstraintStrategy(ACCEPT_STRATEGY)) return;
  app.addConstraintStrategy({
    name: ACCEPT_STRATEGY,
    storage() {
      const routes = new Map<string, unknown>();
      return {
        get: (value: string) => (routes.get(value) as never) ?? null,
        set: (value: string, store: unknown) => void routes.set(value, store),
      };
    },
    deriveConstraint: (request) => (prefersHtml(request.headers.accept) ? "html" : "other"),
    // A route without the constraint (the JSON one) still answers a browser when no page is registered.
    mustMatchWhenDerived: false,
  });
}

const notFoundHere = (what: string) => notFound("NOT_FOUND", `The ${what} was not found.`);

export interface ViewRoutesOptions {
  readonly service: ReleaseService;
  readonly catalog: CatalogService;
  /** The execution's log: final once it ended, so far while it runs (the deployment runner's). */
  readonly logOf: (deployment: Deployment) => Promise<string>;
}

export const viewRoutes: FastifyPluginAsync<ViewRoutesOptions> = async (app, { service, catalog, logOf }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const config = { access: { inHandler: true } } as const;
  addBrowserConstraint(app);
  await app.register(executionLogRoutes, { service, logOf });

  api.get("/applications/:applicationId", {
    schema: {
      summary: "Application page (JSON)",
      tags: TAGS,
      params,
      response: { 200: applicationInfoSchema, ...errors },
    },
    config,
    handler: async (request) => {
      await authorizeReleases(request, "Applications_View");
      const application = await catalog.findApplication(Number(request.params.applicationId));
      if (application === undefined) throw notFoundHere("application");
      return applicationInfo(application);
    },
  });

  api.get("/applications/:applicationId/releases/:releaseNumber", {
    schema: {
      summary: "Release page (JSON)",
      tags: TAGS,
      params: params.extend({ releaseNumber: z.string() }),
      response: { 200: releaseInfoSchema, ...errors },
    },
    config,
    handler: async (request) => {
      await authorizeReleases(request, "Applications_View");
      const { applicationId, releaseNumber } = request.params;
      const [release] = await service.listReleases({ applicationId: Number(applicationId), releaseNumber });
      if (release === undefined) throw notFoundHere("release");
      return releaseInfo(release);
    },
  });

  api.get("/applications/:applicationId/builds/:buildId", {
    schema: {
      summary: "Build page (JSON)",
      tags: TAGS,
      params: params.extend({ buildId: idParam }),
      response: { 200: buildInfoSchema, ...errors },
    },
    config,
    handler: async (request) => {
      await authorizeReleases(request, "Applications_View");
      const { applicationId, buildId } = request.params;
      const [build] = await service.listBuilds({ applicationId: Number(applicationId), buildId: Number(buildId) });
      if (build === undefined) throw notFoundHere("build");
      return buildInfo(build);
    },
  });

  api.get("/applications/:applicationId/executions/:deploymentId", {
    schema: {
      summary: "Execution page (JSON): a deployment with its log",
      tags: TAGS,
      params: params.extend({ deploymentId: idParam }),
      response: { 200: deploymentInfoSchema.extend({ log: z.string() }), ...errors },
    },
    config,
    handler: async (request) => {
      await authorizeReleases(request, "Applications_View");
      const { applicationId, deploymentId } = request.params;
      const deployment = await service.findDeployment(Number(deploymentId));
      if (deployment === undefined || deployment.applicationId !== Number(applicationId)) {
        throw notFoundHere("execution");
      }
      return { ...deploymentInfo(deployment), log: await logOf(deployment) };
    },
  });
};
