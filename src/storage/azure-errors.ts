import { DomainError } from "../domain/errors.js";
import { refusedStoreAddress } from "./store-lookup.js";

/** What the SDK's RestError carries that is safe to repeat: never the request (its headers are signed). */
interface AzureFailure {
  readonly statusCode?: number;
  readonly code?: string;
  readonly name?: string;
}

/**
 * A DomainError for a failed Azure call, naming what was being done, the status and Azure's error
 * code. The SDK's error is not kept as the cause: it holds the request, whose headers and URL may
 * carry a signature or a SAS token, and logs show a cause in full.
 */
export function azureFailure(doing: string, error: unknown): DomainError {
  const refused = refusedStoreAddress(error, `Wharf did not contact Azure storage while ${doing}`);
  if (refused !== undefined) return refused;
  if (error instanceof DomainError) return error;
  const { statusCode, code, name } = (error ?? {}) as AzureFailure;
  const what = [statusCode, code].filter((part) => part !== undefined).join(" ");
  if (statusCode === 403) {
    return new DomainError(
      "bad_gateway",
      "AZURE_AUTHENTICATION_FAILED",
      `Azure refused to authenticate Wharf while ${doing} (${what}): check the AccountKey (or SAS) in the store's ConnectionString.`,
    );
  }
  if (statusCode === undefined) {
    // A network failure (refused, reset, DNS): the SDK's message names the host, not a secret.
    const detail = name === "AbortError" ? "aborted" : (code ?? name ?? "no answer");
    // 503, not 502: nothing answered, so trying again later is the remedy (issue 15 section 3).
    return new DomainError(
      "unavailable",
      "AZURE_UNREACHABLE",
      `Azure storage did not answer while ${doing} (${detail}).`,
    );
  }
  return new DomainError("bad_gateway", "AZURE_REQUEST_FAILED", `Azure storage failed while ${doing} (${what}).`);
}

/** True when the SDK error is a 404 (blob or container not found). */
export function isAzureNotFound(error: unknown) {
  return (error as AzureFailure | undefined)?.statusCode === 404;
}

/**
 * True when a write on condition that the blob is absent (If-None-Match: *) found it present: Put
 * Blob answers 409 BlobAlreadyExists, other writes 412.
 */
export function isAzureAlreadyExists(error: unknown) {
  const { statusCode, code } = (error ?? {}) as AzureFailure;
  return (statusCode === 409 && code === "BlobAlreadyExists") || statusCode === 412;
}
