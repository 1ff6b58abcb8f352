import type { Readable } from "node:stream";
import { DomainError } from "../../domain/errors.js";
import { createGuardedFetch, FETCH_SETTINGS, type GuardedFetch, MAX_REDIRECTS } from "../../net/fetch-guard.js";
import { uploadArchiveLimits } from "../../storage/archives.js";
import type { BlobStore } from "../../storage/blob-store.js";
import { withSmallBlobCache } from "../../storage/blob-cache.js";
import { dataPaths } from "../../storage/data-paths.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../storage/metadata-db.js";
import type { Clock } from "../../domain/clock.js";
import { cacheDownloadLookups } from "./download/cache.js";
import { createUpackDownloadService, type UpackDownloadService } from "./download/service.js";
import { createUpackImportService, type UpackImportService } from "./import/service.js";
import type { UpackAreaOptions } from "./index.js";
import { createUpackBrowseQueries, type UpackBrowseQueries } from "./read/browse-queries.js";
import { createPostgresUpackBrowseQueries } from "./read/browse-queries-postgres.js";
import { createUpackQueryRepository, type UpackQueryRepository } from "./read/query-repository.js";
import { createPostgresUpackQueryRepository } from "./read/query-repository-postgres.js";
import { createUpackQueryService, type UpackQueryService } from "./read/query-service.js";
import { createUpackWriteRepository, type UpackWriteRepository } from "./repository.js";
import { createPostgresUpackWriteRepository } from "./repository-postgres.js";
import { createRemoteDownloads, type RemoteDownloads } from "./remote/downloads.js";
import { type RemoteListingDeps, withConnectors } from "./remote/listings.js";
import { ownershipOf } from "./remote/shadow.js";
import { createUpackWriteService, type UpackWriteService } from "./write/upload-service.js";
import { createVirtualDownloads } from "./virtual/download.js";

/**
 * The universal feed services, built once per app and shared by every API that serves universal
 * packages (/upack and pgutil's /api/packages): one blob keeper (in-flight uploads), one virtual
 * assembly cache and one download lookup cache, so that neither API can undo the other's work.
 */
export interface UpackServices {
  readonly write: UpackWriteService;
  /** Imports from asset directories and the server's import folder (docs/compat.md 2.9), through `write`. */
  readonly imports: UpackImportService;
  readonly downloads: UpackDownloadService;
  /** Whether virtual packages can be assembled (listed in `meta` services). */
  readonly virtualPackages: boolean;
  /** The blob store for whole-file downloads, with one shared memory cache of small blobs. */
  readonly downloadBlobs: BlobStore;
  /** Downloads of versions feeds' connectors serve; undefined without `upstreams`. */
  readonly remote: RemoteDownloads | undefined;
  /** Typed reads of stored packages and versions (the native API's ProGetPackages_* methods). */
  readonly queries: UpackQueryRepository;
  /** Paged reads for the web UI's feed and package pages (read/browse-queries.ts). */
  readonly browse: UpackBrowseQueries;
}

/**
 * The area's repositories on the node's metadata store (either database: `byDatabase`). The
 * PostgreSQL query and browse repositories key what they keep between writes on the node's change
 * feed (`cacheVersionOf`), which SQLite's find on their connection.
 */
export function upackQueryRepositoryOf(db: MetadataDb, clock: Clock): UpackQueryRepository {
  return byDatabase(
    db,
    (sqlite) => createUpackQueryRepository(sqlite, clock),
    (postgres) => createPostgresUpackQueryRepository(postgres, cacheVersionOf(postgres), clock),
  );
}

export function upackWriteRepositoryOf(db: MetadataDb, clock: Clock): UpackWriteRepository {
  return byDatabase(
    db,
    (sqlite) => createUpackWriteRepository(sqlite, clock),
    (postgres) => createPostgresUpackWriteRepository(postgres, clock),
  );
}

export function upackBrowseQueriesOf(db: MetadataDb): UpackBrowseQueries {
  return byDatabase(db, createUpackBrowseQueries, (postgres) =>
    createPostgresUpackBrowseQueries(postgres, cacheVersionOf(postgres)),
  );
}

export function createUpackServices(options: UpackAreaOptions): UpackServices {
  const { config } = options;
  // One guard for every server-side fetch of the area (content-url, virtual URL sources), so the
  // administrator's WHARF_FETCH_* settings are applied in one place and cannot drift apart.
  const fetch = createGuardedFetch({
    allowPrivate: config.fetchAllowPrivate,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.fetchMaxBytes,
    maxRedirects: MAX_REDIRECTS,
    settings: FETCH_SETTINGS,
    proxy: config.outboundProxy,
  });
  const tempDir = dataPaths(config.dataDir).tmp;
  const queries = upackQueryRepositoryOf(options.db, options.clock);
  const virtual = createVirtualDownloads({
    db: options.db,
    repository: queries,
    blobs: options.blobs,
    keepers: options.keepers,
    fetch,
    tmpDir: tempDir,
    clock: options.clock,
  });
  const repository = upackWriteRepositoryOf(options.db, options.clock);
  const write = createUpackWriteService({
    repository,
    blobs: options.blobs,
    keepers: options.keepers,
    clock: options.clock,
    maxUploadBytes: config.maxUploadBytes,
    tempDir,
    limits: uploadArchiveLimits(config),
    // Off unless an administrator turned it on: without a fetcher the write side refuses content-url.
    ...(config.contentUrlUploads ? { fetchContentUrl: contentUrlFetcher(fetch) } : {}),
    onFeedChanged: (feedId) => virtual.forgetFeed(feedId),
  });
  const downloads = cacheDownloadLookups(
    createUpackDownloadService({
      repository: queries,
      feeds: options.feeds,
      blobs: options.blobs,
      assembleVirtual: virtual.assemble,
      recordDeployment: options.deployments?.recordDownload,
    }),
    cacheVersionOf(options.db),
  );
  const imports = createUpackImportService({ write, assets: options.assets, importRoot: config.importRoot });
  const remote =
    options.upstreams &&
    createRemoteDownloads({
      downloads,
      feeds: options.feeds,
      upstreams: options.upstreams,
      owns: ownershipOf(queries),
      blobs: options.blobs,
      keepers: options.keepers,
      write,
      maxBytes: config.maxUploadBytes,
    });
  const downloadBlobs = withSmallBlobCache(options.blobs);
  const browse = upackBrowseQueriesOf(options.db);
  return { write, imports, downloads, virtualPackages: true, downloadBlobs, remote, queries, browse };
}

/**
 * The listing queries of /upack reads (read/routes.ts): the feed's own packages, with its
 * connectors' merged in when the app has upstreams. Each call has its own response cache.
 */
export function createUpackQueries(
  options: UpackAreaOptions & { readonly virtualPackages: boolean },
  log: RemoteListingDeps["log"],
): UpackQueryService {
  const repository = upackQueryRepositoryOf(options.db, options.clock);
  const local = createUpackQueryService({
    repository,
    feeds: options.feeds,
    virtualPackages: options.virtualPackages,
    ...(options.deployments ? { deploymentCounts: options.deployments.countsByVersion } : {}),
  });
  if (!options.upstreams) return local;
  return withConnectors(local, {
    feeds: options.feeds,
    upstreams: options.upstreams,
    owns: ownershipOf(repository),
    log,
  });
}

function contentUrlFetcher(fetch: GuardedFetch) {
  return async (url: string): Promise<Readable> => {
    const response = await fetch(url);
    if (response.status < 200 || response.status > 299) {
      response.body.destroy();
      throw new DomainError("bad_gateway", "CONTENT_URL_FAILED", `The content-url answered HTTP ${response.status}.`);
    }
    return response.body;
  };
}
