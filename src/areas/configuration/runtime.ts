import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { PackageSource } from "../../drift/model.js";
import type { JobRunner } from "../../jobs/runner.js";
import { dataPaths } from "../../storage/data-paths.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../storage/metadata-db.js";
import { defaultNodeId } from "../../storage/postgres/cluster-nodes.js";
import type { PackageDeploymentService } from "../package-deployment/index.js";
import { type Checker, type CheckerLogger, createChecker } from "./checker.js";
import { type CollectionsRepository, createCollectionsRepository } from "./collections-repository.js";
import { createPostgresCollectionsRepository } from "./collections-repository-postgres.js";
import { type CredentialOpener, createExecutorTransports } from "./executor-transport.js";
import type { InfrastructureRepository } from "./infrastructure-repository.js";
import { createRemediationRepository } from "./remediation-repository.js";
import { createPostgresRemediationRepository } from "./remediation-repository-postgres.js";
import { createRemediationService, type RemediationService } from "./remediation.js";
import { createStatusService, type StatusService } from "./status.js";
import type { ServerTransport } from "./transport.js";

/**
 * The running half of configuration management (issue 13): checks, remediation jobs and the
 * status they make, wired once by app.ts. The remediation job kind is added to the database's one
 * job runner here, so this must be created before that runner starts.
 */
export interface ConfigurationRuntimeDeps {
  /** The metadata store: SQLite, or PostgreSQL with its change feed attached (node-database.ts). */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Config;
  readonly infrastructure: InfrastructureRepository;
  /** The database's one job runner, not started yet (on PostgreSQL: runner-postgres.ts's). */
  readonly jobs: JobRunner;
  /** Packages for `package` items (createFeedPackageSource over the universal feeds). */
  readonly packages: PackageSource;
  /** Records packages that remediations install (area C). */
  readonly deployments?: Pick<PackageDeploymentService, "record"> | undefined;
  /** Opens stored SSH credentials (credentials-repository.ts). */
  readonly credentials?: CredentialOpener | undefined;
  /** Reaches `agent` servers (the agent hub's transport); absent: their checks end in error. */
  readonly agentTransport?: ServerTransport | undefined;
  readonly log: CheckerLogger;
  /**
   * This node's cluster_nodes.node_id: on PostgreSQL each check records it, and the restart rule
   * keeps the checks of live nodes. Default: an id of its own (a process that is no cluster node).
   */
  readonly nodeId?: string;
}

export interface ConfigurationRuntime {
  readonly checker: Checker;
  /** The checks' records, as this node writes them (the web UI lists a server's recent ones). */
  readonly collections: CollectionsRepository;
  readonly remediation: RemediationService;
  readonly status: StatusService;
  /** Restart rule for checks, then routine checks (the job runner starts on its own); again after stop(). */
  start(): Promise<void>;
  /** Stops what start() scheduled; checks asked for still run (another node leads the schedules). */
  stop(): Promise<void>;
  /** For good, as the app closes: running checks are aborted (Checker.close). */
  close(): Promise<void>;
}

export function createConfigurationRuntime(deps: ConfigurationRuntimeDeps): ConfigurationRuntime {
  const { db, clock, config, infrastructure } = deps;
  const nodeId = deps.nodeId ?? defaultNodeId();
  const collections = byDatabase(db, createCollectionsRepository, (postgres) =>
    createPostgresCollectionsRepository(postgres, nodeId),
  );
  const remediations = byDatabase(db, createRemediationRepository, createPostgresRemediationRepository);
  const transports = createExecutorTransports(
    {
      config,
      packages: deps.packages,
      credentials: deps.credentials,
      tempDir: dataPaths(config.dataDir).tmp,
    },
    deps.agentTransport,
  );
  const transportOf = transports.of;
  const checker = createChecker({
    db,
    clock,
    config,
    infrastructure,
    collections,
    transportOf,
    log: deps.log,
    onDrift: async (server) => {
      await remediation.remediateAutomatically(server);
    },
  });
  const remediation = createRemediationService({
    clock,
    jobs: deps.jobs,
    concurrency: config.configCheckConcurrency,
    infrastructure,
    remediations,
    checker,
    transportOf,
    deployments: deps.deployments,
  });
  const status = createStatusService({
    db,
    clock,
    config,
    infrastructure,
    collections,
    remediations,
    watch: cacheVersionOf(db),
  });
  return {
    checker,
    collections,
    remediation,
    status,
    start: () => checker.start(),
    stop: () => checker.stop(),
    close: () => checker.close(),
  };
}
