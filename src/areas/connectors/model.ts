import { type DomainError, notFound } from "../../domain/errors.js";
import { printable } from "../../domain/upack-manifest.js";

/**
 * A connector to a remote universal feed (docs/compat.md 5.3) as Wharf keeps it (migration 0007).
 * The password is kept because it is sent to the upstream, sealed (credentials.ts); the management
 * API never returns it.
 */
export interface Connector {
  readonly id: number;
  readonly name: string;
  /** The remote feed's URL, e.g. `https://proget.example.com/upack/internal` (no trailing '/'). */
  readonly url: string;
  /** As ProGet spells it in output, e.g. `universal` (docs/compat.md 5.2 feed types). */
  readonly feedType: string;
  /** Bound on one upstream request, in seconds. */
  readonly timeoutSeconds: number;
  readonly metadataCacheEnabled: boolean;
  /** How long a cached metadata answer is served without asking the upstream again. */
  readonly metadataCacheMinutes: number;
  /** How many metadata answers are kept for this connector (oldest out first). */
  readonly metadataCacheCount: number;
  readonly username: string | undefined;
  /** Sealed (storage/secrets.ts), never the plain text: only credentials.ts opens it, to send it. */
  readonly password: string | undefined;
  /** Shared wildcard patterns (domain/patterns.ts): which remote packages are visible; `!` blocks. */
  readonly filters: readonly string[];
  /**
   * Whether this upstream may add versions to a package the feed publishes itself. Off by default:
   * a local package shadows the connector's package of the same name (upack/remote/shadow.ts).
   */
  readonly mergeWithLocalPackages: boolean;
  readonly health: ConnectorHealth;
  readonly createdAt: string;
  readonly modifiedAt: string;
}

/** The editable part of a connector: what create and update produce (health and times are not). */
export type ConnectorDraft = Omit<Connector, "id" | "health" | "createdAt" | "modifiedAt">;

/** Connector health (docs/seed-api.md area D). */
export interface ConnectorHealth {
  readonly state: "healthy" | "error" | "unknown";
  /** Set when the state is `error`. */
  readonly errorMessage: string | undefined;
  /** yyyy-MM-ddTHH:mm:ss.fffZ of the last check; undefined while unknown. */
  readonly lastChecked: string | undefined;
}

export const CONNECTOR_DEFAULTS = {
  timeoutSeconds: 30,
  metadataCacheEnabled: true,
  metadataCacheMinutes: 30,
  metadataCacheCount: 100,
  mergeWithLocalPackages: false,
} as const;

/**
 * The connector addressed does not exist (404 CONNECTOR_NOT_FOUND), by its name or, without one,
 * the connector a repository was asked to change by id (deleted meanwhile; both databases). A
 * feed's `connectors` naming no connector is another error, unprocessable (management/feed-connectors.ts).
 */
export function connectorNotFound(name?: string): DomainError {
  return name === undefined
    ? notFound("CONNECTOR_NOT_FOUND", "The specified connector was not found.")
    : notFound("CONNECTOR_NOT_FOUND", `The connector '${printable(name)}' was not found.`);
}
