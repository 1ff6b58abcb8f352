import type { FastifyPluginAsync } from "fastify";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { FeedService } from "../management/index.js";
import { createPackageDeploymentRepository } from "./repository.js";
import { createPostgresPackageDeploymentRepository } from "./repository-postgres.js";
import { packageDeploymentRoutes } from "./routes.js";
import { createPackageDeploymentServiceWith, type PackageDeploymentService } from "./service.js";

export { announcesDeployment, recordAnnouncedDeployment } from "./download-headers.js";
export { deploymentCountKey } from "./repository.js";
export type { DeploymentDetails } from "./fields.js";
export type { DeploymentRecord, DownloadedVersion, PackageDeploymentService } from "./service.js";

export interface PackageDeploymentDeps {
  /** The node's metadata store: the records' repository is its database's (storage/metadata-db.ts). */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly feeds: FeedService;
}

/** Wires repository -> service; app.ts shares it with the universal feed (records on download, counts in versions). */
export function createPackageDeploymentService(deps: PackageDeploymentDeps): PackageDeploymentService {
  return createPackageDeploymentServiceWith({
    repository: byDatabase(deps.db, createPackageDeploymentRepository, createPostgresPackageDeploymentRepository),
    feeds: deps.feeds,
    clock: deps.clock,
  });
}

/** Area C: `/api/package-deployment/` (docs/seed-api.md C; docs/compat.md 6.2). */
export const packageDeploymentArea: FastifyPluginAsync<{ deployments: PackageDeploymentService }> = async (
  app,
  { deployments },
) => {
  await app.register(packageDeploymentRoutes, { deployments });
};
