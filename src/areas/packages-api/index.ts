import type { FastifyPluginAsync } from "fastify";
import type { UpackAreaOptions } from "../upack/index.js";
import { packagesApiReadRoutes } from "./read-routes.js";
import { createPackagesApiRepository } from "./repository.js";
import { createStandaloneServices, type PackagesApiServices } from "./standalone-services.js";
import { packagesApiWriteRoutes } from "./write-routes.js";

export type { PackagesApiServices } from "./standalone-services.js";

/**
 * The Common Packages API for universal feeds, `/api/packages/<feed>/...` (compat.md 3): what
 * `pgutil packages ...` uses, the documented way to upload universal packages today. It is a
 * second face of the universal feed area: every upload, delete and download goes through the
 * /upack services, so that both APIs validate, store, count, invalidate virtual assemblies and
 * clean up blobs identically.
 */
export interface PackagesApiOptions extends UpackAreaOptions {
  /**
   * The /upack area's own service instances. Pass them as soon as that area exports them: one
   * set means one blob keeper and one virtual-assembly cache for both APIs (standalone-services.ts
   * says what a second set cannot share). Built here from the same options when absent.
   */
  readonly services?: PackagesApiServices;
}

export const packagesApiArea: FastifyPluginAsync<PackagesApiOptions> = async (app, options) => {
  const { write, downloads } = options.services ?? createStandaloneServices(options);
  const repository = createPackagesApiRepository(options.db);
  const { feeds, blobs } = options;

  await app.register(packagesApiReadRoutes, { feeds, blobs, repository, downloads });
  await app.register(packagesApiWriteRoutes, {
    feeds,
    repository,
    write,
    maxUploadBytes: options.config.maxUploadBytes,
  });
};
