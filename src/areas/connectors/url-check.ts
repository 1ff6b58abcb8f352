import { DomainError } from "../../domain/errors.js";
import type { ResolveHost } from "../../net/fetch-guard.js";
import { resolveWithSystemDns, vetFetchTarget } from "../../net/fetch-target.js";

/**
 * Refuses (400 CONNECTOR_URL_REFUSED) a connector URL the fetch guard would refuse to fetch from:
 * a literal private, loopback, link-local or metadata address, or a name whose addresses include
 * one, under the same policy (WHARF_FETCH_ALLOW_PRIVATE; docs/PRODUCT.md security baseline). The
 * administrator learns it, and the setting that would change it, when the connector is created
 * or its URL changed, rather than from a feed's first failing request. Resolves when accepted.
 */
export type ConnectorUrlCheck = (url: string) => Promise<void>;

export interface ConnectorUrlCheckOptions {
  readonly allowPrivate: boolean;
  /** Replaces system DNS (tests). */
  readonly resolve?: ResolveHost;
}

/** DNS at creation is advice, not a gate: a slow resolver must not hold up the request. */
const RESOLVE_TIMEOUT_MS = 5_000;

export function createConnectorUrlCheck(options: ConnectorUrlCheckOptions): ConnectorUrlCheck {
  const policy = { allowPrivate: options.allowPrivate, allowLoopback: options.allowPrivate };
  const resolve = options.resolve ?? resolveWithSystemDns;
  return async (url) => {
    try {
      await vetFetchTarget(new URL(url), "connector", policy, resolve, AbortSignal.timeout(RESOLVE_TIMEOUT_MS));
    } catch (error) {
      if (error instanceof DomainError && error.code === "FETCH_ADDRESS_REFUSED") {
        throw new DomainError("invalid", "CONNECTOR_URL_REFUSED", error.message);
      }
      // A name that does not resolve now (unknown, DNS down or slow) is accepted: connectors are
      // often set up before the upstream exists, or on a machine that is offline, and a name can
      // only be judged by what it resolves to when it is used. Every request to the upstream is
      // checked again by the fetch guard then, so accepting it here opens nothing.
    }
  };
}
