import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { ArchiveLimits } from "../../storage/archives.js";
import type { BlobStore } from "../../storage/blob-store.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { FeedService } from "../management/index.js";
import type { UpackServices } from "../upack/index.js";
import { createPromotionRepository } from "./repository.js";
import { createPostgresPromotionRepository } from "./repository-postgres.js";
import { promotionRoutes } from "./routes.js";
export { callerOf } from "./routes.js";
import { createPromotionService, type PromotionService } from "./service.js";

export type { Caller, PromotionRow, PromotionService, RepackagingRow } from "./service.js";
export { promotionJson, repackagingJson } from "./schemas.js";

export interface PromotionDeps {
  /** The node's metadata store: the promotion records' repository is its database's (storage/metadata-db.ts). */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly feeds: FeedService;
  /** The app's one set of universal feed services: promotions read through its queries and save through its write service. */
  readonly upack: Pick<UpackServices, "write" | "queries">;
  /** Every package store as one (storage/blob-stores.ts reader). */
  readonly blobs: BlobStore;
  readonly limits?: ArchiveLimits;
}

/** Wires repository -> service; app.ts shares it with the web UI's package page. */
export function createPromotionServices(deps: PromotionDeps): PromotionService {
  return createPromotionService({
    feeds: deps.feeds,
    upack: deps.upack,
    repository: byDatabase(deps.db, createPromotionRepository, createPostgresPromotionRepository),
    blobs: deps.blobs,
    clock: deps.clock,
    ...(deps.limits ? { limits: deps.limits } : {}),
  });
}

/** Promotion and repackaging (issue 17 section 2; docs/compat.md 5.4): `/api/promotions/...`, `/api/repackaging/...`. */
export const promotionsArea: FastifyPluginAsync<{ promotions: PromotionService }> = async (app, { promotions }) => {
  await app.register(promotionRoutes, { promotions });
};
