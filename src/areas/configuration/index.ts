import type { FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { Db } from "../../storage/database.js";
import type { SecretBox } from "../../storage/secrets.js";
import { createInfrastructureRepository, type InfrastructureRepository } from "./infrastructure-repository.js";

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
}

export interface ConfigurationServices {
  /** Pure SQL reads of servers, roles and environments for the runtime (checks, remediation, agents). */
  readonly infrastructure: InfrastructureRepository;
}

/** Wires repositories -> services; app.ts builds them once and hands them to configurationArea. */
export function createConfigurationServices(deps: ConfigurationDeps): ConfigurationServices {
  return {
    infrastructure: createInfrastructureRepository(deps.db, deps.secrets),
  };
}

export const configurationArea: FastifyPluginAsync<ConfigurationDeps & { services: ConfigurationServices }> = async (
  _app,
  _options,
) => {
  // Routes are registered here, one plugin per file (servers, roles, variables, credentials, ...).
};
