import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { createInfrastructureRepository, type InfrastructureRepository } from "./infrastructure-repository.js";
import { infrastructureRoutes } from "./infrastructure-routes.js";
import { createRolesRepository } from "./roles-repository.js";
import { createRolesService, type RolesService } from "./roles-service.js";
import { createServersRepository } from "./servers-repository.js";
import { createServersService, type HostKeyFetcher, type ServersService } from "./servers-service.js";
import { variablesRoutes } from "./variables-routes.js";
import { createVariablesService, type VariablesService } from "./variables-service.js";

/**
 * Configuration management (area B; issue 13): the infrastructure API (servers, roles, variables;
 * docs/compat.md 8.2, 8.4) and, registered beside it by their own files, credentials, the
 * configuration API (8.1) and the agent protocol. Environments stay the releases area's API.
 */
export interface ConfigurationDeps {
  readonly db: Db;
  readonly clock: Clock;
  readonly config: Config;
  /** Seals stored secrets: credentials, sensitive item content. */
  readonly secrets: SecretBox;
  /** Pins an ssh server's host key on creation; tests may replace it. Default: ssh-executor's fetchHostKeySha256. */
  readonly fetchHostKey?: HostKeyFetcher;
}

export interface ConfigurationServices {
  /** Pure SQL reads of servers, roles and environments for the runtime (checks, remediation, agents). */
  readonly infrastructure: InfrastructureRepository;
  readonly servers: ServersService;
  readonly roles: RolesService;
  readonly variables: VariablesService;
}

/** Loaded when first needed: ssh2 stays out of a server that manages no ssh server. */
const fetchHostKeySha256: HostKeyFetcher = async (host, port, timeoutMs) =>
  (await import("../../drift/ssh-executor.js")).fetchHostKeySha256(host, port, timeoutMs);

/** Wires repositories -> services; app.ts builds them once and hands them to configurationArea. */
export function createConfigurationServices(deps: ConfigurationDeps): ConfigurationServices {
  const infrastructure = createInfrastructureRepository(deps.db, deps.secrets);
  return {
    infrastructure,
    servers: createServersService({
      servers: createServersRepository(deps.db, deps.secrets),
      infrastructure,
      config: deps.config,
      clock: deps.clock,
      fetchHostKey: deps.fetchHostKey ?? fetchHostKeySha256,
    }),
    roles: createRolesService({
      roles: createRolesRepository(deps.db, deps.secrets),
      infrastructure,
      clock: deps.clock,
    }),
    variables: createVariablesService(deps.db),
  };
}

export const configurationArea: FastifyPluginAsync<ConfigurationDeps & { services: ConfigurationServices }> = async (
  app,
  { services },
) => {
  // Routes are registered here, one plugin per file (servers, roles, variables, credentials, ...).
  await app.register(infrastructureRoutes, { servers: services.servers, roles: services.roles });
  await app.register(variablesRoutes, { variables: services.variables });
};
