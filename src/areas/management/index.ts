import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import { createFeedRepository } from "./repository.js";
import { feedRoutes } from "./routes.js";
import { createFeedServiceWith, type FeedService } from "./service.js";
import { storageRoutes } from "./storage-routes.js";

export type { Feed, FeedDraft, FeedSettings, RetentionRule } from "./feed-settings.js";
export type { FeedInput, FeedJson } from "./schemas.js";
export { endpointUrl, type FeedService, type FeedView } from "./service.js";

/**
 * Wires repository -> service for feed management; app.ts shares the service with other areas.
 * `connectorExists` comes from the connectors area; without it no connector exists (CLI, tests).
 */
export function createFeedService(deps: {
  db: Db;
  clock: Clock;
  config: Config;
  connectorExists?: (name: string) => Promise<boolean>;
}): FeedService {
  const { clock, config, connectorExists } = deps;
  return createFeedServiceWith({ repository: createFeedRepository(deps.db), clock, config, connectorExists });
}

/** Area I: `/api/management/feeds/...` and `/api/storage`. */
export const managementArea: FastifyPluginAsync<{ feeds: FeedService }> = async (app, { feeds }) => {
  await app.register(feedRoutes, { feeds });
  await app.register(storageRoutes, { feeds });
};
