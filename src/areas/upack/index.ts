import path from "node:path";
import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { createGuardedFetch } from "../../net/fetch-guard.js";
import type { BlobStore } from "../../storage/blob-store.js";
import type { Db } from "../../storage/database.js";
import type { FeedService } from "../management/index.js";
import { createUpackQueryRepository } from "./query-repository.js";
import { upackReadRoutes } from "./read-routes.js";
import { createVirtualDownloads } from "./vpack-download.js";
import { upackWriteRoutes } from "./write-routes.js";

/** What the universal feed area (seed-api.md area A) is built from. */
export interface UpackAreaOptions {
  readonly db: Db;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  readonly config: Config;
  readonly feeds: FeedService;
}

/** Redirects followed by a server-side fetch: enough for CDNs and release pages, few enough to stay cheap. */
const MAX_FETCH_REDIRECTS = 5;

/** `/upack/<feed>/...`: uploads and deletes (write-routes.ts), listings and downloads (read-routes.ts). */
export const upackArea: FastifyPluginAsync<UpackAreaOptions> = async (app, options) => {
  const { config } = options;
  // One guard for every server-side fetch of the area (content-url, virtual URL sources), so the
  // administrator's WHARF_FETCH_* settings are applied in one place and cannot drift apart.
  const fetch = createGuardedFetch({
    allowPrivate: config.fetchAllowPrivate,
    timeoutMs: config.fetchTimeoutMs,
    maxBytes: config.fetchMaxBytes,
    maxRedirects: MAX_FETCH_REDIRECTS,
  });
  const virtual = createVirtualDownloads({
    db: options.db,
    repository: createUpackQueryRepository(options.db),
    blobs: options.blobs,
    fetch,
    tmpDir: path.join(config.dataDir, "tmp"),
    clock: options.clock,
  });
  await app.register(upackWriteRoutes, {
    ...options,
    // Off unless an administrator turned it on: without a fetcher the write side refuses content-url.
    contentUrlFetch: config.contentUrlUploads ? fetch : undefined,
    onFeedChanged: (feedId) => virtual.forgetFeed(feedId),
  });
  await app.register(upackReadRoutes, { ...options, assembleVirtual: virtual.assemble });
};
