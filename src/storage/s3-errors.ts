import { DomainError } from "../domain/errors.js";
import { refusedStoreAddress } from "./store-lookup.js";

interface S3Failure {
  name?: string;
  Code?: string;
  /** A Node network error's code (ECONNREFUSED, ECONNRESET...): the server never answered. */
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** HEAD answers a bare 404 (no body, so no code); GET answers NoSuchKey. */
export function isMissingObject(error: unknown): boolean {
  const failure = error as S3Failure | undefined;
  return failure?.name === "NotFound" || failure?.name === "NoSuchKey" || failure?.$metadata?.httpStatusCode === 404;
}

const REFUSED_CREDENTIALS = new Set(["SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied"]);

/** No answer at all (refused, reset, timed out, unknown host): the store is down, which may pass. */
function networkFailure(failure: S3Failure | undefined): string | undefined {
  if (failure?.$metadata?.httpStatusCode !== undefined) return undefined;
  if (typeof failure?.code === "string" && /^E[A-Z_]+$/.test(failure.code)) return failure.code;
  return failure?.name === "TimeoutError" ? "timed out" : undefined;
}

/**
 * A DomainError for an object-store failure that says what was tried and where, and the server's
 * error code; never the SDK's message verbatim (it may echo request details) nor any credential.
 * A DomainError or an abort passes through unchanged.
 */
export function objectStoreError(what: string, where: string, error: unknown): unknown {
  const refused = refusedStoreAddress(error, `Wharf did not ${what} in ${where}`);
  if (refused !== undefined) return refused;
  if (error instanceof DomainError) return error;
  const failure = error as S3Failure | undefined;
  if (failure?.name === "AbortError") return error;
  const unreachable = networkFailure(failure);
  if (unreachable !== undefined) {
    // 503, not 502: nothing answered, so trying again later is the remedy (issue 15 section 3).
    return new DomainError(
      "unavailable",
      "OBJECT_STORE_UNREACHABLE",
      `The object store did not answer when trying to ${what} in ${where} (${unreachable}); try again later.`,
      { cause: error },
    );
  }
  const code = failure?.Code ?? failure?.name ?? "unknown error";
  const status = failure?.$metadata?.httpStatusCode;
  if (REFUSED_CREDENTIALS.has(code) || status === 403) {
    return new DomainError(
      "bad_gateway",
      "OBJECT_STORE_ACCESS_DENIED",
      `The object store refused the configured credentials (${code}) when trying to ${what} in ${where}: check AccessKey and SecretAccessKey.`,
      { cause: error },
    );
  }
  return new DomainError(
    "bad_gateway",
    "OBJECT_STORE_FAILED",
    `The object store failed to ${what} in ${where}: ${code}${status ? ` (HTTP ${status})` : ""}.`,
    { cause: error },
  );
}
