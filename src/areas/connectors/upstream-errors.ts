import { STATUS_CODES } from "node:http";
import { DomainError, type ErrorKind } from "../../domain/errors.js";
import type { Admission } from "./circuit.js";
import type { Connector } from "./model.js";

/**
 * The errors of requests to a connector's upstream (upstream.ts): every one a 502 or 504 naming
 * the connector, so that a client (and the administrator reading its log) knows which upstream
 * failed. Never a 500: upstream trouble is not Wharf's.
 */

const MAX_MESSAGE_LENGTH = 500;

/** Errors made here, with the connector they name: connectorError passes them on unwrapped. */
const naming = new WeakMap<DomainError, string>();

function named(connector: Connector, kind: ErrorKind, code: string, message: string, cause?: unknown): DomainError {
  const error = new DomainError(kind, code, message, { cause });
  naming.set(error, connector.name);
  return error;
}

export function timedOut(connector: Connector, ms: number): DomainError {
  return named(
    connector,
    "gateway_timeout",
    "CONNECTOR_TIMEOUT",
    `Connector '${connector.name}' did not answer within ${ms / 1000} s.`,
  );
}

export function circuitOpen(connector: Connector, admission: Admission & { admitted: false }): DomainError {
  const seconds = Math.max(1, Math.ceil(admission.retryInMs / 1000));
  return named(
    connector,
    "bad_gateway",
    "CONNECTOR_UNAVAILABLE",
    `Connector '${connector.name}' is unavailable: its last ${admission.failures} requests failed; ` +
      `it is asked again in ${seconds} s at the earliest.`,
  );
}

export function httpError(connector: Connector, status: number): DomainError {
  const reason = STATUS_CODES[status] ?? "";
  return named(
    connector,
    "bad_gateway",
    "CONNECTOR_HTTP_ERROR",
    `Connector '${connector.name}': the upstream answered HTTP ${status} ${reason}`.trim() + ".",
  );
}

export function invalidAnswer(connector: Connector, what: string): DomainError {
  return named(
    connector,
    "bad_gateway",
    "CONNECTOR_INVALID_ANSWER",
    `Connector '${connector.name}': the answer ${what}.`,
  );
}

/**
 * The connector's stored password does not decrypt with the configured secret keys: nothing is sent
 * to the upstream. The operator's to fix, hence 503, and never counted against the upstream's circuit.
 */
export function secretUnreadable(connector: Connector, reason: string): DomainError {
  return named(
    connector,
    "unavailable",
    "CONNECTOR_SECRET_UNREADABLE",
    `Connector '${connector.name}': its stored password cannot be decrypted (${reason}). Start Wharf with the ` +
      "key it was stored with in WHARF_SECRET_KEY_PREVIOUS, or set the connector's password again.",
  );
}

/**
 * Any failure of a request to the upstream as a 502 or 504 naming the connector. The guard's
 * messages (a refused address, a timeout, a connection error) are kept: they say what went wrong.
 */
export function connectorError(connector: Connector, error: unknown): DomainError {
  if (error instanceof DomainError && naming.get(error) === connector.name) return error;
  const kind = error instanceof DomainError && error.kind === "gateway_timeout" ? "gateway_timeout" : "bad_gateway";
  const code = error instanceof DomainError ? error.code : "CONNECTOR_FAILED";
  const detail = error instanceof DomainError ? error.message : "the request to the upstream failed.";
  const text = detail.length > MAX_MESSAGE_LENGTH ? `${detail.slice(0, MAX_MESSAGE_LENGTH)}...` : detail;
  return named(connector, kind, code, `Connector '${connector.name}': ${text}`, error);
}
