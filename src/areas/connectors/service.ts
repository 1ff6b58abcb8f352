import type { Clock } from "../../domain/clock.js";
import { eachConcurrently } from "../../domain/concurrently.js";
import { conflict } from "../../domain/errors.js";
import type { SecretBox } from "../../storage/secrets.js";
import type { Feed } from "../management/index.js";
import type { HealthProbe } from "./health.js";
import { basicAuthorization, type ResealResult, resealPasswords, sealPassword } from "./credentials.js";
import { mergeConnectorInput } from "./merge.js";
import { type Connector, type ConnectorHealth, connectorNotFound } from "./model.js";
import type { ConnectorRepository } from "./repository.js";
import type { ConnectorHealthJson, ConnectorInput, ConnectorJson } from "./schemas.js";
import type { ConnectorUrlCheck } from "./url-check.js";

/** Connector management (docs/compat.md 5.3) and health (docs/seed-api.md area D). Throws DomainError; knows no HTTP. */
export interface ConnectorService {
  /** By name, case-insensitively (for other areas: a feed's `connectors` entries). */
  findConnector(name: string): Promise<Connector | undefined>;
  /** Like findConnector; throws not_found. */
  getConnector(name: string): Promise<Connector>;
  findConnectorById(id: number): Promise<Connector | undefined>;
  /** Ordered by name, case-insensitively. */
  listConnectors(): Promise<Connector[]>;
  /**
   * Validates (400; a URL the fetch guard would refuse is CONNECTOR_URL_REFUSED, url-check.ts), then
   * stores with health `unknown`; 409 when the name is taken.
   */
  createConnector(input: ConnectorInput): Promise<Connector>;
  /**
   * Partial update (docs/compat.md 5.1 conventions); a different `input.name` renames, and feeds using
   * the connector keep it (they are bound to its id). Changing the upstream resets health to `unknown`;
   * a new URL is checked as on create.
   */
  updateConnector(name: string, input: ConnectorInput): Promise<Connector>;
  /** Refused (409, naming them) while feeds name the connector in their `connectors`. */
  deleteConnector(name: string): Promise<void>;
  /** Checks the upstream now and stores the result; returns the connector as stored then. */
  checkHealth(name: string): Promise<Connector>;
  /**
   * Checks, a few at a time, every connector never checked or last checked `maxAgeMs` ago or
   * more; stops early when `signal` aborts (nothing is stored for an aborted check).
   */
  checkDue(maxAgeMs: number, signal?: AbortSignal): Promise<HealthChange[]>;
  /**
   * The connector's Basic credentials for its upstream, password decrypted (credentials.ts);
   * throws unavailable CONNECTOR_SECRET_UNREADABLE when it does not decrypt with the configured keys.
   */
  authorization(connector: Connector): Record<string, string>;
  /** Seals every stored password that is not under the current secret key (at start-up: rotation). */
  resealPasswords(): Promise<ResealResult>;
  /** The Connector JSON of docs/compat.md 5.3: never the password. */
  present(connector: Connector): ConnectorJson;
  /** The Connector health object of docs/seed-api.md area D. */
  presentHealth(connector: Connector): ConnectorHealthJson;
}

/** One check of the schedule: the connector before and after, for whoever logs changes. */
export interface HealthChange {
  readonly before: ConnectorHealth;
  readonly after: Connector;
}

export interface ConnectorServiceDeps {
  readonly repository: ConnectorRepository;
  readonly clock: Clock;
  readonly probe: HealthProbe;
  /** Refuses a URL the fetch guard would refuse, when one is set (url-check.ts). */
  readonly checkUrl: ConnectorUrlCheck;
  /** Seals passwords as they arrive, opens them to send them (storage/secrets.ts). */
  readonly secrets: SecretBox;
  /** Feeds, to find those naming a connector (through their service: their rows are not ours). */
  readonly feeds: { listFeeds(): Promise<Feed[]> };
}

/** Upstreams checked at once by the schedule: a few slow ones must not hold up the rest. */
const CHECK_CONCURRENCY = 4;

export function createConnectorService(deps: ConnectorServiceDeps): ConnectorService {
  const { repository, clock, probe, feeds, secrets } = deps;
  const seal = (password: string) => sealPassword(secrets, password);
  const authorization = basicAuthorization(secrets);
  const now = () => clock.now().toISOString();

  async function getConnector(name: string): Promise<Connector> {
    const connector = await repository.findByName(name);
    if (!connector) throw connectorNotFound(name);
    return connector;
  }

  /**
   * Feeds use connectors (by id: a rename carries them along). Deleting one in use would take it
   * from those feeds; the administrator decides which feeds lose it, not Wharf silently.
   */
  async function refuseWhileUsed(connector: Connector, action: string): Promise<void> {
    const key = connector.name.toLowerCase();
    const users = (await feeds.listFeeds())
      .filter((feed) => feed.settings.connectors.some((name) => name.toLowerCase() === key))
      .map((feed) => `'${feed.name}'`);
    if (users.length > 0) {
      throw conflict(
        "CONNECTOR_IN_USE",
        `connector '${connector.name}' cannot be ${action} while feeds use it (${users.join(", ")}); ` +
          "remove it from their connectors first",
      );
    }
  }

  /** undefined: the check was aborted or the connector deleted meanwhile. */
  async function check(connector: Connector, signal?: AbortSignal): Promise<Connector | undefined> {
    const result = await probe(connector, signal);
    if (signal?.aborted) return undefined;
    const health: ConnectorHealth = {
      state: result.state,
      errorMessage: result.state === "error" ? result.errorMessage : undefined,
      lastChecked: now(),
    };
    return repository.recordHealth(connector, health);
  }

  return {
    findConnector: (name) => repository.findByName(name),
    getConnector,
    findConnectorById: (id) => repository.findById(id),
    listConnectors: () => repository.list(),

    async createConnector(input) {
      const draft = mergeConnectorInput(undefined, input, seal);
      await deps.checkUrl(draft.url);
      return repository.insert(draft, now());
    },

    async updateConnector(name, input) {
      const current = await getConnector(name);
      // Validated first (400s), then the new URL alone is checked: a connector stored under a
      // more lenient setting keeps working for other changes, its requests refused as they are made.
      const { url } = mergeConnectorInput(current, input, seal);
      if (url !== current.url) await deps.checkUrl(url);
      return repository.update(current.id, (fresh) => mergeConnectorInput(fresh, input, seal), now());
    },

    async deleteConnector(name) {
      const connector = await getConnector(name);
      await refuseWhileUsed(connector, "deleted");
      if (!(await repository.deleteById(connector.id))) {
        throw connectorNotFound(name);
      }
    },

    async checkHealth(name) {
      const checked = await check(await getConnector(name));
      if (!checked) throw connectorNotFound(name);
      return checked;
    },

    async checkDue(maxAgeMs, signal) {
      const oldest = clock.now().getTime() - maxAgeMs;
      const due = (await repository.list()).filter(
        (c) => c.health.lastChecked === undefined || Date.parse(c.health.lastChecked) <= oldest,
      );
      const changes: HealthChange[] = [];
      await eachConcurrently(
        due,
        CHECK_CONCURRENCY,
        async (connector) => {
          const after = await check(connector, signal);
          if (after) changes.push({ before: connector.health, after });
        },
        () => signal?.aborted !== true,
      );
      return changes;
    },

    authorization,
    resealPasswords: () => resealPasswords(repository, secrets),

    present(connector) {
      return {
        name: connector.name,
        url: connector.url,
        feedType: connector.feedType,
        timeout: connector.timeoutSeconds,
        metadataCacheEnabled: connector.metadataCacheEnabled,
        metadataCacheMinutes: connector.metadataCacheMinutes,
        metadataCacheCount: connector.metadataCacheCount,
        ...(connector.username === undefined ? {} : { username: connector.username }),
        filters: [...connector.filters],
        mergeWithLocalPackages: connector.mergeWithLocalPackages,
      };
    },

    presentHealth(connector) {
      const { state, errorMessage, lastChecked } = connector.health;
      return {
        id: connector.id,
        name: connector.name,
        url: connector.url,
        state,
        errorMessage: state === "error" ? (errorMessage ?? "") : null,
        lastChecked: state === "unknown" ? null : (lastChecked ?? null),
      };
    },
  };
}
