import type { FastifyPluginAsync } from "fastify";
import type { HotResponses } from "../../http/hot-responses.js";
import type { ContentAreaDeps } from "../content-area-deps.js";
import type { ConnectorUpstreams } from "../connectors/index.js";
import type { AssetService } from "../endpoints/index.js";
import type { PackageDeploymentService } from "../package-deployment/index.js";
import { upackImportRoutes } from "./import/routes.js";
import { upackReadRoutes } from "./read/routes.js";
import { createUpackServices, type UpackServices } from "./services.js";
import { upackWriteRoutes } from "./write/routes.js";

export { createUpackServices, type UpackServices } from "./services.js";
export type { UpackDownloadService } from "./download/service.js";
export type { DownloadRow, PackageRow, VersionRow } from "./read/query-repository.js";
export { isoMillis } from "./present.js";
export { versionKeyOf } from "./read/query-service.js";
export { assertFeedAcceptsPackages } from "./feed-lookup.js";
export { versionExists } from "./repository.js";
export { MAX_MANIFEST_BYTES } from "./write/upload-archive.js";

/** What the universal feed area (docs/seed-api.md area A) is built from. */
export interface UpackAreaOptions extends ContentAreaDeps {
  /** Deployment records: stored from download headers and counted in versions (docs/compat.md 2.4, 6.2); absent: neither. */
  readonly deployments?: PackageDeploymentService;
  /** Asset directories, for imports from them (docs/compat.md 2.9); absent: such imports are 404. */
  readonly assets?: AssetService;
  /** The app's one set of universal feed services (services.ts); built here when absent. */
  readonly services?: UpackServices;
  /**
   * Feeds' connectors (the connectors area, built once in app.ts: one circuit breaker per
   * upstream); absent: feeds serve only what they store, whatever connectors they name.
   */
  readonly upstreams?: ConnectorUpstreams;
  /** Replays of small downloads (http/hot-responses.ts, made in app.ts); absent: none. */
  readonly hot?: HotResponses;
}

/**
 * `/upack/<feed>/...`: uploads and deletes (write/), imports (import/), listings (read/) and
 * downloads (download/, registered by read/routes.ts), with connectors' versions (remote/) and
 * virtual packages (virtual/). Route pieces they share are in http.ts, not-found errors in
 * errors.ts, the services they all use are built once in services.ts. pgutil's `/api/packages`
 * face of the same feeds is packages-api/ (registered by app.ts).
 */
export const upackArea: FastifyPluginAsync<UpackAreaOptions> = async (app, options) => {
  const services = options.services ?? createUpackServices(options);
  await app.register(upackWriteRoutes, { ...options, service: services.write });
  await app.register(upackImportRoutes, { ...options, imports: services.imports });
  await app.register(upackReadRoutes, {
    ...options,
    downloads: services.downloads,
    downloadBlobs: services.downloadBlobs,
    virtualPackages: services.virtualPackages,
    remoteDownloads: services.remote,
  });
};
