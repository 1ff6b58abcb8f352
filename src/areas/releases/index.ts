import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import { applicationRoutes } from "./application-routes.js";
import { buildRoutes } from "./build-routes.js";
import { createCatalogRepository } from "./catalog-repository.js";
import { type CatalogService, createCatalogService } from "./catalog-service.js";
import { environmentRoutes } from "./environment-routes.js";
import { pipelineRoutes } from "./pipeline-routes.js";
import { createReleaseRepository } from "./release-repository.js";
import { releaseRoutes } from "./release-routes.js";
import { createReleaseService, type ReleaseService } from "./release-service.js";
import { viewRoutes } from "./view-routes.js";

export type { Build, Deployment, DeploymentOutcome, DeploymentStatus, Release } from "./model.js";
export type { PlanStep } from "./plan-steps.js";
export type { BuildFilter, DeploymentFilter } from "./release-repository.js";
export type { ReleaseService } from "./release-service.js";

export interface ReleasesServices {
  readonly releases: ReleaseService;
  readonly catalog: CatalogService;
}

/** Wires repositories -> services; app.ts shares `releases` with the job runner and badges. */
export function createReleasesServices(deps: { db: Db; clock: Clock }): ReleasesServices {
  const catalog = createCatalogRepository(deps.db);
  return {
    releases: createReleaseService({ releases: createReleaseRepository(deps.db), catalog, clock: deps.clock }),
    catalog: createCatalogService({ catalog, clock: deps.clock }),
  };
}

/** Area E `/api/releases/...` (compat.md 7.2) and the management additions (compat.md 7.8, 8.2). */
export const releasesArea: FastifyPluginAsync<{ services: ReleasesServices }> = async (app, { services }) => {
  await app.register(releaseRoutes, { service: services.releases });
  await app.register(buildRoutes, { service: services.releases });
  await app.register(applicationRoutes, { catalog: services.catalog });
  await app.register(pipelineRoutes, { catalog: services.catalog });
  await app.register(environmentRoutes, { catalog: services.catalog });
  await app.register(viewRoutes, { service: services.releases, catalog: services.catalog });
};
