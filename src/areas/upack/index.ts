import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { BlobStore } from "../../storage/blob-store.js";
import type { Db } from "../../storage/database.js";
import type { FeedService } from "../management/index.js";
import { upackReadRoutes } from "./read-routes.js";
import { createUpackServices, type UpackServices } from "./services.js";
import { upackWriteRoutes } from "./write-routes.js";

export { createUpackServices, type UpackServices } from "./services.js";

/** What the universal feed area (seed-api.md area A) is built from. */
export interface UpackAreaOptions {
  readonly db: Db;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
  /** The app's one set of universal feed services (services.ts); built here when absent. */
  readonly services?: UpackServices;
}

/** `/upack/<feed>/...`: uploads and deletes (write-routes.ts), listings and downloads (read-routes.ts). */
export const upackArea: FastifyPluginAsync<UpackAreaOptions> = async (app, options) => {
  const services = options.services ?? createUpackServices(options);
  await app.register(upackWriteRoutes, { ...options, service: services.write });
  await app.register(upackReadRoutes, {
    ...options,
    downloads: services.downloads,
    downloadBlobs: services.downloadBlobs,
    virtualPackages: services.virtualPackages,
  });
};
