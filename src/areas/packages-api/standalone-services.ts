import path from "node:path";
import { createGuardedFetch } from "../../net/fetch-guard.js";
import { createUpackDownloadService, type UpackDownloadService } from "../upack/download-service.js";
import type { UpackAreaOptions } from "../upack/index.js";
import { createUpackQueryRepository } from "../upack/query-repository.js";
import { createUpackWriteRepository } from "../upack/repository.js";
import { createBlobKeeper } from "../upack/upload-blobs.js";
import { createUpackWriteService, type UpackWriteService } from "../upack/upload-service.js";
import { createVirtualDownloads } from "../upack/vpack-download.js";

/** The /upack services this API goes through. */
export interface PackagesApiServices {
  readonly write: UpackWriteService;
  readonly downloads: UpackDownloadService;
}

/** As upack/index.ts: enough for CDNs and release pages, few enough to stay cheap. */
const MAX_FETCH_REDIRECTS = 5;

/**
 * The /upack services built a second time, exactly as upack/index.ts wires them, for as long as
 * that area does not hand out its own instances (then pass those as `services` and delete this
 * file). What a second set cannot share, and so where it is weaker than shared instances:
 * - the blob keeper's in-memory holds: a failed upload here can, in a narrow window, delete a blob
 *   that an identical upload through /upack is about to commit (and the other way round);
 * - the virtual assemblies' in-memory generations: a change here empties the persisted assembly
 *   cache of the feed (`upack_assembled`, shared through the database), but an assembly already
 *   running in the /upack instance may still save what it built from the old package.
 */
export function createStandaloneServices(options: UpackAreaOptions): PackagesApiServices {
  const { config } = options;
  const fetch = createGuardedFetch({
    allowPrivate: config.fetchAllowPrivate,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.fetchMaxBytes,
    maxRedirects: MAX_FETCH_REDIRECTS,
  });
  const queries = createUpackQueryRepository(options.db);
  const tmpDir = path.join(config.dataDir, "tmp");
  const virtual = createVirtualDownloads({
    db: options.db,
    repository: queries,
    blobs: options.blobs,
    fetch,
    tmpDir,
    clock: options.clock,
  });
  const repository = createUpackWriteRepository(options.db);
  const write = createUpackWriteService({
    repository,
    blobs: options.blobs,
    keeper: createBlobKeeper(options.blobs, repository.isBlobReferenced),
    clock: options.clock,
    maxUploadBytes: config.maxUploadBytes,
    tempDir: tmpDir,
    // No fetchContentUrl: this API takes the package as the raw body only.
    onFeedChanged: (feedId) => virtual.forgetFeed(feedId),
  });
  const downloads = createUpackDownloadService({
    repository: queries,
    feeds: options.feeds,
    blobs: options.blobs,
    assembleVirtual: virtual.assemble,
  });
  return { write, downloads };
}
