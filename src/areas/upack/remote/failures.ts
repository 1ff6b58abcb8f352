import type { FastifyReply } from "fastify";

/**
 * Which connectors could not be asked for an answer that was given anyway (remote/listings.ts,
 * remote/lookup.ts): the answer is what the feed and the other connectors had, and says so in a
 * header, rather than looking complete (README "Connectors").
 *
 * `Wharf-Connector-Failures: <connector>=<CODE>, ...` in the feed's connector order: the
 * connector's name (letters, digits, `-._~`, so never a separator) and the stable code of its
 * error (CONNECTOR_TIMEOUT, CONNECTOR_HTTP_ERROR, FETCH_FAILED, ...; the message, which may name
 * the upstream's host, stays in the server's log). Absent when every connector answered, or
 * answered from its metadata cache.
 */
export const CONNECTOR_FAILURES_HEADER = "Wharf-Connector-Failures";

export interface ConnectorFailure {
  readonly connector: string;
  readonly code: string;
}

/** Answers are built per request (never shared or cached), so an answer object can carry its failures. */
const failuresOf = new WeakMap<object, readonly ConnectorFailure[]>();

/** Marks `answer` as given without the connectors that failed; returns it. */
export function withFailures<T extends object>(answer: T, failures: readonly ConnectorFailure[]): T {
  if (failures.length > 0) failuresOf.set(answer, failures);
  return answer;
}

/** Sets the header when `answer` was given without some connector. */
export function reportFailures(reply: FastifyReply, answer: object): void {
  const failures = failuresOf.get(answer);
  if (failures === undefined) return;
  reply.header(CONNECTOR_FAILURES_HEADER, failures.map(({ connector, code }) => `${connector}=${code}`).join(", "));
}
