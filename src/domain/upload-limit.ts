import { DomainError } from "./errors.js";

/**
 * An upload larger than the server accepts, naming the setting that would change it: every upload
 * bound (a declared length, a streamed body, a base64 field, the blob store's count) is
 * WHARF_MAX_UPLOAD_BYTES, also for files pulled from a connector (an upload by other means).
 */
export function uploadTooLarge(maxBytes: number): DomainError {
  return new DomainError(
    "too_large",
    "UPLOAD_TOO_LARGE",
    `The upload exceeds the limit of ${maxBytes} bytes (WHARF_MAX_UPLOAD_BYTES).`,
  );
}
