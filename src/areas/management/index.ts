// PLACEHOLDER: replaced by the feed management implementation.
import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { FeedScope } from "../../domain/principal.js";
import type { Db } from "../../storage/database.js";

export interface FeedService {
  /** Canonical name and feed group of the feed with this name or alternate name, case-insensitively. */
  findScope(name: string): Promise<FeedScope | undefined>;
}

export function createFeedService(_deps: { db: Db; clock: Clock; config: Config }): FeedService {
  return { findScope: async () => undefined };
}

export const managementArea: FastifyPluginAsync<{ feeds: FeedService }> = async () => {};
