import { DomainError } from "../domain/errors.js";

/** What the filesystem (ENOSPC; EDQUOT past a quota) and SQLite say when nothing more fits. */
const FULL_CODES: ReadonlySet<string> = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL"]);
/** Wrapped errors are followed this deep, no further (a cause chain may be circular). */
const MAX_CAUSE_DEPTH = 5;

/** Whether the error, or an error it wraps as its `cause`, says the disk is full. */
export function isDiskFull(error: unknown): boolean {
  let current = error;
  for (let depth = 0; current instanceof Error && depth < MAX_CAUSE_DEPTH; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (code !== undefined && FULL_CODES.has(code)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * The answer to a write that found the disk full (507): says what happened and what the operator
 * can do, since a client can do nothing but retry later. `outcome` says what was not done.
 */
export function diskFull(outcome = "nothing was stored", cause?: unknown): DomainError {
  return new DomainError(
    "insufficient_storage",
    "DISK_FULL",
    `The server's disk is full: ${outcome}. Free space (delete old versions) or add storage, then retry.`,
    { cause },
  );
}

/** The answer to an upload refused up front because free space is below the configured minimum. */
export function diskSpaceLow(freeBytes: number, minimumBytes: number): DomainError {
  return new DomainError(
    "insufficient_storage",
    "DISK_SPACE_LOW",
    `The server's disk is nearly full (${freeBytes} bytes free, uploads need at least ${minimumBytes}, ` +
      "WHARF_MIN_FREE_DISK_BYTES): the upload was not accepted. Free space (delete old versions) or add " +
      "storage, then retry.",
  );
}

/** The answer to a deletion that found no room even after the space reserve was given up. */
export function diskFullEvenForDeletion(cause?: unknown): DomainError {
  return new DomainError(
    "insufficient_storage",
    "DISK_FULL",
    "The server's disk is so full that even this deletion could not be recorded. Free space on the disk by " +
      "other means or add storage, then retry.",
    { cause },
  );
}
