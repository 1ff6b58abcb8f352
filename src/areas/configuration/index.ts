import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { SecretBox } from "../../storage/secrets.js";
import type { PackageSource } from "../../drift/model.js";
import { type AgentHub, createAgentHub } from "./agent-hub.js";
import { agentRoutes } from "./agent-routes.js";
import {
  createCredentialsRepository,
  createCredentialsStore,
  type CredentialsStore,
} from "./credentials-repository.js";
import { createPostgresCredentialsRepository } from "./credentials-repository-postgres.js";
import { credentialsRoutes } from "./credentials-routes.js";
import { createCredentialsService, type CredentialsService } from "./credentials-service.js";
import { createInfrastructureRepository, type InfrastructureRepository } from "./infrastructure-repository.js";
import { createPostgresInfrastructureRepository } from "./infrastructure-repository-postgres.js";
import { infrastructureRoutes } from "./infrastructure-routes.js";
import { createRolesRepository } from "./roles-repository.js";
import { createPostgresRolesRepository } from "./roles-repository-postgres.js";
import { createRolesService, type RolesService } from "./roles-service.js";
import { createServersRepository } from "./servers-repository.js";
import { createPostgresServersRepository } from "./servers-repository-postgres.js";
import { createServersService, type HostKeyFetcher, type ServersService } from "./servers-service.js";
import { configurationRoutes } from "./configuration-routes.js";
import type { ConfigurationRuntime } from "./runtime.js";
import { variablesRoutes } from "./variables-routes.js";
import { createVariablesService, type VariablesService } from "./variables-service.js";

/**
 * Configuration management (area B; issue 13): the infrastructure API (servers, roles, variables;
 * docs/compat.md 8.2, 8.4) and, registered beside it by their own files, credentials, the
 * configuration API (8.1) and the agent protocol. Environments stay the releases area's API.
 */
export interface ConfigurationDeps {
  /** The metadata store: the data directory's SQLite or a cluster's PostgreSQL (repositories by byDatabase). */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Config;
  /** Seals stored secrets: credentials, sensitive item content. */
  readonly secrets: SecretBox;
  /** Pins an ssh server's host key on creation; tests may replace it. Default: ssh-executor's fetchHostKeySha256. */
  readonly fetchHostKey?: HostKeyFetcher;
  /** A cluster node's change feed: agents' work is routed between nodes through it (agent-hub-cluster.ts). */
  readonly onChange?: (listener: (table: string) => void) => () => void;
  /** This cluster node's id: recorded with the agent polls it holds (agent-hub-cluster.ts). */
  readonly nodeId?: string;
}

export interface ConfigurationServices {
  /** Pure SQL reads of servers, roles and environments for the runtime (checks, remediation, agents). */
  readonly infrastructure: InfrastructureRepository;
  readonly servers: ServersService;
  readonly roles: RolesService;
  readonly variables: VariablesService;
  /** The agent protocol's work queue; its `transport` reaches `agent` servers. */
  readonly agents: AgentHub;
  /** Stored SSH credentials: the API's service, and the store the ssh transport opens them from. */
  readonly credentials: CredentialsService;
  readonly credentialsStore: CredentialsStore;
}

/** Loaded when first needed: ssh2 stays out of a server that manages no ssh server. */
const fetchHostKeySha256: HostKeyFetcher = async (host, port, timeoutMs) =>
  (await import("../../drift/ssh-executor.js")).fetchHostKeySha256(host, port, timeoutMs);

/** Wires repositories -> services; app.ts builds them once and hands them to configurationArea. */
export function createConfigurationServices(deps: ConfigurationDeps): ConfigurationServices {
  const { db, secrets } = deps;
  const infrastructure = byDatabase(
    db,
    (sqlite) => createInfrastructureRepository(sqlite, secrets),
    (postgres) => createPostgresInfrastructureRepository(postgres, secrets),
  );
  const credentials = byDatabase(db, createCredentialsRepository, createPostgresCredentialsRepository);
  return {
    infrastructure,
    servers: createServersService({
      servers: byDatabase(
        db,
        (sqlite) => createServersRepository(sqlite, secrets),
        (postgres) => createPostgresServersRepository(postgres, secrets),
      ),
      infrastructure,
      config: deps.config,
      clock: deps.clock,
      fetchHostKey: deps.fetchHostKey ?? fetchHostKeySha256,
    }),
    roles: createRolesService({
      roles: byDatabase(
        db,
        (sqlite) => createRolesRepository(sqlite, secrets),
        (postgres) => createPostgresRolesRepository(postgres, secrets),
      ),
      infrastructure,
      clock: deps.clock,
    }),
    variables: createVariablesService(db, secrets),
    agents: createAgentHub({
      db,
      clock: deps.clock,
      config: deps.config,
      secrets,
      ...(deps.onChange === undefined ? {} : { onChange: deps.onChange }),
      ...(deps.nodeId === undefined ? {} : { nodeId: deps.nodeId }),
    }),
    credentials: createCredentialsService({ repository: credentials, secrets: deps.secrets, clock: deps.clock }),
    credentialsStore: createCredentialsStore(credentials, deps.secrets),
  };
}

export { createConfigurationRuntime, type ConfigurationRuntime } from "./runtime.js";
export { createFeedPackageSource } from "./feed-package-source.js";

export const configurationArea: FastifyPluginAsync<
  ConfigurationDeps & {
    services: ConfigurationServices;
    runtime?: ConfigurationRuntime;
    /** What agents may download for their package items (the runtime's package source): enables /api/agent/v1. */
    agentPackages?: PackageSource;
    /**
     * Takes over starting and stopping the checks' restart rule and routine checks (app.ts: on the
     * cluster's leading node, jobs/singletons.ts); without it they run from ready to close.
     */
    takeScheduling?: (work: Pick<ConfigurationRuntime, "start" | "stop">) => void;
  }
> = async (app, { services, runtime, agentPackages, takeScheduling }) => {
  // Routes are registered here, one plugin per file (servers, roles, variables, credentials, ...).
  await app.register(infrastructureRoutes, { servers: services.servers, roles: services.roles });
  await app.register(variablesRoutes, { variables: services.variables });
  if (agentPackages) {
    // Held polls are answered (and waiting work failed) before Fastify waits for connections to end.
    app.addHook("preClose", (done) => {
      services.agents.close();
      done();
    });
    await app.register(agentRoutes, { hub: services.agents, packages: agentPackages });
  }
  await app.register(credentialsRoutes, { credentials: services.credentials });
  if (runtime) {
    // The checks' restart rule and routine checks (remediation jobs run on app.ts's job runner).
    if (takeScheduling) takeScheduling(runtime);
    else app.addHook("onReady", () => runtime.start());
    // On every node, leading or not: checks asked for through the API run here until it closes.
    app.addHook("onClose", () => runtime.close());
    await app.register(configurationRoutes, { infrastructure: services.infrastructure, ...runtime });
  }
};
