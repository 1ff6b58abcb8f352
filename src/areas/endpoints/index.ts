import type { FastifyPluginAsync } from "fastify";
import { uploadArchiveLimits } from "../../storage/archives.js";
import { dataPaths } from "../../storage/data-paths.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../storage/metadata-db.js";
import type { ContentAreaDeps } from "../content-area-deps.js";
import { archiveRoutes } from "./archive/routes.js";
import { type AssetArchives, createAssetArchives } from "./archive/service.js";
import { contentRoutes } from "./content-routes.js";
import { folderRoutes } from "./folder-routes.js";
import { createListingCache, type ListingCache } from "./listing-cache.js";
import { createMultipartUploads, type MultipartUploads, removeOrphanSpools } from "./multipart/service.js";
import { createAssetRepository } from "./repository.js";
import { createPostgresAssetRepository } from "./repository-postgres.js";
import { type AssetService, createAssetService } from "./service.js";

export type { AssetService } from "./service.js";

/** What the asset directory area (docs/seed-api.md area F) is built from. */
export type EndpointsDeps = ContentAreaDeps;

export interface EndpointsServices {
  readonly assets: AssetService;
  readonly listings: ListingCache;
  readonly multipart: MultipartUploads;
  readonly archives: AssetArchives;
}

export type EndpointsAreaOptions = EndpointsDeps & EndpointsServices;

/**
 * At start-up, before serving (main.ts): removes multipart spool files that no upload names. In
 * cluster mode no upload is spooled on a disk (parts are blobs of the package stores): a node's
 * spool directory can hold only files left from before, which no upload names.
 */
export const removeOrphanMultipartSpools = (db: MetadataDb, dataDir: string) =>
  removeOrphanSpools(db, dataPaths(dataDir).multipart);

/**
 * Wires repository -> services, on either database (the asset and multipart repositories by
 * `byDatabase`, the listing cache on `cacheVersionOf`); app.ts shares `assets` with the universal
 * feed import.
 */
export function createEndpointsServices(deps: EndpointsDeps): EndpointsServices {
  const assets = createAssetService({
    repository: byDatabase(deps.db, createAssetRepository, createPostgresAssetRepository),
    feeds: deps.feeds,
    keepers: deps.keepers,
    clock: deps.clock,
    maxUploadBytes: deps.config.maxUploadBytes,
  });
  const multipart = createMultipartUploads({
    db: deps.db,
    assets,
    keepers: deps.keepers,
    blobs: deps.blobs,
    clock: deps.clock,
    spoolDir: dataPaths(deps.config.dataDir).multipart,
    maxUploadBytes: deps.config.maxUploadBytes,
    maxAgeMs: deps.config.multipartMaxAgeMs,
  });
  const archives = createAssetArchives({
    assets,
    blobs: deps.blobs,
    tempDir: dataPaths(deps.config.dataDir).tmp,
    maxUploadBytes: deps.config.maxUploadBytes,
    limits: uploadArchiveLimits(deps.config),
  });
  return { assets, multipart, archives, listings: createListingCache(cacheVersionOf(deps.db)) };
}

/** `/endpoints/<dir>/...`: files (content-routes.ts), folders and metadata (folder-routes.ts), archives. */
export const endpointsArea: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  await app.register(contentRoutes, options);
  await app.register(folderRoutes, options);
  await app.register(archiveRoutes, options);
  // Abandoned multipart uploads are swept while the server runs (docs/compat.md 4.2 "Feed Cleanup").
  // Sweep errors go to the app's log, which is known here but not where the services are built.
  app.addHook("onReady", async () =>
    options.multipart.start((error) => app.log.warn({ err: error }, "removing abandoned multipart uploads failed")),
  );
  app.addHook("onClose", async () => options.multipart.stop());
};
