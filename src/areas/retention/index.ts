import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import type { JobRunner } from "../../jobs/runner.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { AssetService } from "../endpoints/index.js";
import type { FeedService } from "../management/index.js";
import type { UpackWriteService } from "../upack/write/upload-service.js";
import { createAssetRetentionRows } from "./asset-candidates.js";
import { createPostgresAssetRetentionRows } from "./asset-candidates-postgres.js";
import { createRetentionRepository } from "./repository.js";
import { createPostgresRetentionRepository } from "./repository-postgres.js";
import { retentionRoutes } from "./routes.js";
import { createRetentionScheduler, type RetentionScheduler } from "./scheduler.js";
import { createRetentionService, RETENTION_JOB_KIND, retentionJobHandler, type RetentionService } from "./service.js";

export type { RetentionPreview, RetentionService } from "./service.js";
export type { RetentionRun } from "./repository.js";
export { presentRun, unitOf } from "./routes.js";
export { isRetainedFeedType } from "./kinds.js";

export interface RetentionDeps {
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly feeds: FeedService;
  /** The universal feeds' write service: retention deletes through its delete. */
  readonly write: UpackWriteService;
  /** The asset directories' service: retention deletes their files through its delete. */
  readonly assets: AssetService;
  readonly jobs: JobRunner;
  /** How often schedules are looked at (WHARF_RETENTION_CHECK_SECONDS); 0: never. */
  readonly checkIntervalMs: number;
  readonly log: { warn(fields: object, message: string): void };
}

/**
 * Wires retention: the service (API and web UI), the job kind of runs (one at a time: runs of two
 * feeds one after the other keep the write load of retention to one delete at a time), and the
 * scheduler. Call before the job runner starts (it adds a job kind).
 */
export function createRetention(deps: RetentionDeps): { service: RetentionService; scheduler: RetentionScheduler } {
  const repository = byDatabase(deps.db, createRetentionRepository, createPostgresRetentionRepository);
  const serviceDeps = {
    repository,
    feeds: deps.feeds,
    write: deps.write,
    assets: deps.assets,
    assetRows: byDatabase(deps.db, createAssetRetentionRows, createPostgresAssetRetentionRows),
    jobs: deps.jobs,
    clock: deps.clock,
  };
  deps.jobs.handle(RETENTION_JOB_KIND, retentionJobHandler(serviceDeps), { concurrency: 1 });
  const service = createRetentionService(serviceDeps);
  const scheduler = createRetentionScheduler({
    feeds: deps.feeds,
    repository,
    service,
    clock: deps.clock,
    intervalMs: deps.checkIntervalMs,
    log: deps.log,
  });
  return { service, scheduler };
}

/** `/api/retention/...` */
export const retentionArea: FastifyPluginAsync<{ service: RetentionService }> = async (app, { service }) => {
  await app.register(retentionRoutes, { service });
};
