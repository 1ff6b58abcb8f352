import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import { applicationRoutes } from "./application-routes.js";
import { buildRoutes } from "./build-routes.js";
import { createChangeScriptRepository } from "./change-script-repository.js";
import { createPostgresChangeScriptRepository } from "./change-script-repository-postgres.js";
import { type ChangeScriptService, createChangeScriptService } from "./change-script-service.js";
import { createCatalogRepository } from "./catalog-repository.js";
import { createPostgresCatalogRepository } from "./catalog-repository-postgres.js";
import { type CatalogService, createCatalogService } from "./catalog-service.js";
import { createDeploymentRunner, type DeploymentRunner, type DeploymentRunnerDeps } from "./deployment-runner.js";
import { environmentRoutes } from "./environment-routes.js";
import { pipelineRoutes } from "./pipeline-routes.js";
import { planRoutes } from "./plan-routes.js";
import { createReleaseRepository } from "./release-repository.js";
import { createPostgresReleaseRepository } from "./release-repository-postgres.js";
import { releaseRoutes } from "./release-routes.js";
import { createReleaseService, type ReleaseService } from "./release-service.js";
import { viewRoutes } from "./view-routes.js";

export type { Build, Deployment, Release } from "./model.js";
export type { BuildFilter } from "./release-repository.js";
export type { ReleaseService } from "./release-service.js";
export type { ChangeScript, ChangeScriptDraft, ChangeScriptFilter } from "./change-script-model.js";
export type { ChangeScriptService } from "./change-script-service.js";
export { packageOpener } from "./deployment-runner.js";

export interface ReleasesServices {
  readonly releases: ReleaseService;
  readonly catalog: CatalogService;
  /** Database change scripts per release (native methods DatabaseChangeScripts_*). */
  readonly changeScripts: ChangeScriptService;
  /** Runs deployments; absent when the caller gave no runner deps (tests that drive deployments by hand). */
  readonly runner?: DeploymentRunner;
}

/**
 * Wires repositories -> services (and the deployment runner); app.ts shares `releases` with the badges.
 * On either database (metadata-db.ts): each repository is the SQLite or the PostgreSQL one; the
 * services and the deployment runner are the same: deployments are jobs of the job runner given as
 * `runner.jobs` (on PostgreSQL, jobs/runner-postgres.ts).
 */
export function createReleasesServices(deps: {
  db: MetadataDb;
  clock: Clock;
  runner?: Omit<DeploymentRunnerDeps, "db" | "clock" | "releases">;
}): ReleasesServices {
  const catalog = byDatabase(deps.db, createCatalogRepository, createPostgresCatalogRepository);
  const releases = createReleaseService({
    releases: byDatabase(deps.db, createReleaseRepository, createPostgresReleaseRepository),
    catalog,
    clock: deps.clock,
    onDeploymentsCreated: () => runner?.wake(),
  });
  const runner = deps.runner && createDeploymentRunner({ ...deps.runner, db: deps.db, clock: deps.clock, releases });
  return {
    releases,
    catalog: createCatalogService({ catalog, clock: deps.clock }),
    changeScripts: createChangeScriptService({
      scripts: byDatabase(deps.db, createChangeScriptRepository, createPostgresChangeScriptRepository),
      clock: deps.clock,
    }),
    ...(runner && { runner }),
  };
}

/** Area E `/api/releases/...` (docs/compat.md 7.2) and the management additions (docs/compat.md 7.8, 8.2). */
export const releasesArea: FastifyPluginAsync<{ services: ReleasesServices }> = async (app, { services }) => {
  const { runner } = services;
  if (runner) {
    app.addHook("onReady", () => runner.start());
    app.addHook("onClose", () => runner.stop());
  }
  await app.register(releaseRoutes, { service: services.releases });
  await app.register(buildRoutes, { service: services.releases });
  await app.register(applicationRoutes, { catalog: services.catalog });
  await app.register(pipelineRoutes, { catalog: services.catalog });
  await app.register(planRoutes, { catalog: services.catalog });
  await app.register(environmentRoutes, { catalog: services.catalog });
  await app.register(viewRoutes, {
    service: services.releases,
    catalog: services.catalog,
    logOf: runner ? (deployment) => runner.logOf(deployment) : async (deployment) => deployment.log,
  });
};
