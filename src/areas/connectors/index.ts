import type { FastifyBaseLogger, FastifyPluginAsync } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { byDatabase, type MetadataDb } from "../../storage/metadata-db.js";
import type { SecretBox } from "../../storage/secrets.js";
import type { ConnectorReference, FeedService } from "../management/index.js";
import { basicAuthorization } from "./credentials.js";
import { createHealthProbe, createHealthScheduler, type HealthScheduler } from "./health.js";
import { connectorHealthRoutes } from "./health-routes.js";
import { createConnectorRepository } from "./repository.js";
import { createPostgresConnectorRepository } from "./repository-postgres.js";
import { connectorRoutes } from "./routes.js";
import { createConnectorService, type ConnectorService } from "./service.js";
import { createConnectorUrlCheck } from "./url-check.js";

export type { Connector, ConnectorDraft, ConnectorHealth } from "./model.js";
export type { ConnectorService, HealthChange } from "./service.js";
export type { HealthScheduler } from "./health.js";
export type { ConnectorHealthJson, ConnectorInput, ConnectorJson } from "./schemas.js";
export {
  createConnectorUpstreams,
  type ConnectorUpstreams,
  type MetadataAnswer,
  type MetadataRequest,
  type UpstreamDownload,
  type UpstreamVersionId,
} from "./upstream.js";

export interface ConnectorsDeps {
  /** The node's metadata store: the connectors' repository is its database's (storage/metadata-db.ts). */
  readonly db: MetadataDb;
  readonly clock: Clock;
  readonly config: Config;
  /** Feeds name connectors; the service reads them before deleting or renaming one. */
  readonly feeds: Pick<FeedService, "listFeeds">;
  /** Encrypts connector passwords at rest (storage/secret-keys.ts). */
  readonly secrets: SecretBox;
  /** The app's connector service (app.ts builds it once, the universal feed reads it too); built here when absent. */
  readonly connectors?: ConnectorService;
  /**
   * Who starts the scheduled health checks. Absent: the area, from ready to close (one node).
   * Given: the area hands its scheduler here and never starts it itself, so that app.ts can run it
   * only while the node leads (cluster mode: start on gaining the lease, stop on losing it); the
   * area still stops it at close.
   */
  readonly takeHealthScheduler?: (scheduler: HealthScheduler) => void;
}

/** Wires repository -> probe -> service; for app.ts, should another area need connectors too. */
export function createConnectors(deps: ConnectorsDeps): ConnectorService {
  const authorization = basicAuthorization(deps.secrets);
  return createConnectorService({
    repository: connectorRepositoryOf(deps.db),
    clock: deps.clock,
    probe: createHealthProbe({
      allowPrivate: deps.config.fetchAllowPrivate,
      proxy: deps.config.outboundProxy,
      authorization,
    }),
    checkUrl: createConnectorUrlCheck({ allowPrivate: deps.config.fetchAllowPrivate }),
    feeds: deps.feeds,
    secrets: deps.secrets,
  });
}

/**
 * The connector with this name (case-insensitively), as a feed needs to know it: the
 * FeedService's `findConnector`. Built on the database alone because the feed service exists
 * before this area's service does.
 */
export function findConnectorReference(db: MetadataDb): (name: string) => Promise<ConnectorReference | undefined> {
  const repository = connectorRepositoryOf(db);
  return async (name) => {
    const connector = await repository.findByName(name);
    // Either one is sent upstream as Basic credentials (health.ts, upstream.ts).
    const hasCredentials = connector?.username !== undefined || connector?.password !== undefined;
    return connector && { name: connector.name, hasCredentials };
  };
}

const connectorRepositoryOf = (db: MetadataDb) =>
  byDatabase(db, createConnectorRepository, createPostgresConnectorRepository);

/**
 * Connectors (`/api/management/connectors/...`, docs/compat.md 5.3) and connector health
 * (`/api/connector-health`, docs/seed-api.md area D), with the scheduled health checks running from
 * ready to close (WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES), or whenever `takeHealthScheduler`'s
 * taker says. On PostgreSQL every node could run them safely (each check is a probe and a
 * conditional record, ConnectorRepository.recordHealth: two nodes checking one connector only
 * probe it twice), but one leader is what cluster mode means for them (docs/cluster-mode.md).
 */
export const connectorsArea: FastifyPluginAsync<ConnectorsDeps> = async (app, deps) => {
  const connectors = deps.connectors ?? createConnectors(deps);
  await resealAtStart(app.log, connectors);
  await app.register(connectorRoutes, { connectors });
  await app.register(connectorHealthRoutes, { connectors });

  const intervalMs = deps.config.connectorHealthIntervalMs;
  const scheduler = createHealthScheduler({
    intervalMs,
    tick: async (signal) => {
      for (const { before, after } of await connectors.checkDue(intervalMs, signal)) {
        const { state, errorMessage } = after.health;
        if (state === before.state && errorMessage === before.errorMessage) continue;
        const fields = { connector: after.name, state, ...(errorMessage ? { error: errorMessage } : {}) };
        if (state === "error") app.log.warn(fields, "connector is unhealthy");
        else app.log.info(fields, "connector health changed");
      }
    },
    onError: (error) => app.log.warn({ err: error }, "scheduled connector health checks failed"),
  });
  if (deps.takeHealthScheduler) deps.takeHealthScheduler(scheduler);
  else app.addHook("onReady", async () => scheduler.start());
  app.addHook("onClose", async () => scheduler.stop());
};

/**
 * Passwords stored in plain text by an older Wharf, or under a previous secret key, are sealed
 * under the current one before anything is served (README: rotating the secret key). Neither a
 * password no key decrypts nor a busy database stops the start: the first is reported (and its
 * connector fails until fixed), the second is retried at the next start.
 */
async function resealAtStart(log: FastifyBaseLogger, connectors: ConnectorService): Promise<void> {
  try {
    const { resealed, unreadable } = await connectors.resealPasswords();
    if (resealed > 0) log.info({ resealed }, "connector passwords encrypted with the current secret key");
    for (const { connector, reason } of unreadable) {
      log.warn({ connector }, `the password of connector '${connector}' cannot be decrypted: ${reason}`);
    }
  } catch (error) {
    log.warn({ err: error }, "connector passwords were not re-encrypted; they will be at the next start");
  }
}
