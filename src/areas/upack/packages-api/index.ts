import type { FastifyPluginAsync } from "fastify";
import { createUpackServices, type UpackAreaOptions } from "../index.js";
import { packagesApiReadRoutes } from "./read-routes.js";
import { byDatabase, type MetadataDb } from "../../../storage/metadata-db.js";
import { createPackagesApiRepository, type PackagesApiRepository } from "./repository.js";
import { createPostgresPackagesApiRepository } from "./repository-postgres.js";
import { packagesApiWriteRoutes } from "./write-routes.js";

/** The API's reads on the node's metadata store (either database). */
export const packagesApiRepositoryOf = (db: MetadataDb): PackagesApiRepository =>
  byDatabase(db, createPackagesApiRepository, createPostgresPackagesApiRepository);

/**
 * The Common Packages API for universal feeds, `/api/packages/<feed>/...` (docs/compat.md 3): what
 * `pgutil packages ...` uses, the documented way to upload universal packages today. It is a
 * second face of the universal feed area: every upload, delete and download goes through the
 * /upack services, so that both APIs validate, store, count, invalidate virtual assemblies and
 * clean up blobs identically.
 */
export const packagesApiArea: FastifyPluginAsync<UpackAreaOptions> = async (app, options) => {
  // Pass the app's services (app.ts does): one blob keeper and one virtual-assembly cache for both APIs.
  const { write, downloads, downloadBlobs } = options.services ?? createUpackServices(options);
  const repository = packagesApiRepositoryOf(options.db);
  const { feeds } = options;

  await app.register(packagesApiReadRoutes, { feeds, blobs: downloadBlobs, repository, downloads });
  await app.register(packagesApiWriteRoutes, {
    feeds,
    repository,
    write,
    maxUploadBytes: options.config.maxUploadBytes,
  });
};
