import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { ConnectorReference } from "./feed-caller.js";
import { createFeedRepository } from "./repository.js";
import { createPostgresFeedRepository } from "./repository-postgres.js";
import { feedRoutes } from "./routes.js";
import type { SecretBox } from "../../storage/secrets.js";
import { createFeedServiceWith, type FeedService } from "./service.js";
import { storageMoveRoutes } from "./storage-move-routes.js";
import { storageRoutes } from "./storage-routes.js";
import type { FeedStoreMoves } from "../../storage/feed-store-move.js";

export type { ConnectorReference, FeedCaller } from "./feed-caller.js";
export type { Feed, FeedDraft, FeedSettings, RetentionRule } from "./feed-settings.js";
export type { FeedInput, FeedJson } from "./schemas.js";
export { endpointUrl, type FeedService, type FeedView } from "./service.js";
export { callerOf as feedCallerOf } from "./routes.js";
export { feedsVisibleTo, scopeOf } from "./visible-feeds.js";

/**
 * Wires repository -> service for feed management; app.ts shares the service with other areas.
 * The repository is the database's (SQLite or PostgreSQL: storage/metadata-db.ts). `findConnector`
 * comes from the connectors area; without it no connector exists (tests).
 */
export function createFeedService(deps: {
  db: MetadataDb;
  clock: Clock;
  config: Config;
  findConnector?: (name: string) => Promise<ConnectorReference | undefined>;
  /** Seals the credentials of S3 and Azure storage settings; without it they are refused. */
  secrets?: SecretBox;
}): FeedService {
  const { clock, config, findConnector, secrets } = deps;
  return createFeedServiceWith({
    repository: byDatabase(deps.db, createFeedRepository, createPostgresFeedRepository),
    clock,
    config,
    findConnector,
    ...(secrets ? { secrets } : {}),
  });
}

/** Area I: `/api/management/feeds/...` and `/api/storage`; with `moves`, `/api/storage/move` too. */
export const managementArea: FastifyPluginAsync<{ feeds: FeedService; moves?: FeedStoreMoves }> = async (
  app,
  { feeds, moves },
) => {
  await app.register(feedRoutes, { feeds });
  await app.register(storageRoutes, { feeds, ...(moves ? { moves } : {}) });
  if (moves) await app.register(storageMoveRoutes, { feeds, moves });
};
