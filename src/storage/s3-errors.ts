import { DomainError } from "../domain/errors.js";

interface S3Failure {
  name?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** HEAD answers a bare 404 (no body, so no code); GET answers NoSuchKey. */
export function isMissingObject(error: unknown): boolean {
  const failure = error as S3Failure | undefined;
  return failure?.name === "NotFound" || failure?.name === "NoSuchKey" || failure?.$metadata?.httpStatusCode === 404;
}

const REFUSED_CREDENTIALS = new Set(["SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied"]);

/**
 * A DomainError for an object-store failure that says what was tried and where, and the server's
 * error code; never the SDK's message verbatim (it may echo request details) nor any credential.
 * A DomainError or an abort passes through unchanged.
 */
export function objectStoreError(what: string, where: string, error: unknown): unknown {
  if (error instanceof DomainError) return error;
  const failure = error as S3Failure | undefined;
  if (failure?.name === "AbortError") return error;
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
