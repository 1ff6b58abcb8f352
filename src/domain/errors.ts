/**
 * The one error type services throw. `kind` decides the HTTP status (see http/errors.ts, the only
 * place that knows status codes); `code` is a stable SCREAMING_SNAKE name for logs, the
 * `X-Wharf-Error` header and tests; `message` is the plain-text body a client shows its user.
 */
export type ErrorKind =
  | "invalid"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "unprocessable"
  | "too_large"
  | "unsupported"
  | "unavailable"
  /** Too many attempts from one client or at one account (failed sign-ins): 429. */
  | "too_many_requests"
  /** An upstream (content URL, connector) failed or answered badly: 502. */
  | "bad_gateway"
  /** An upstream did not answer in time: 504. */
  | "gateway_timeout"
  /** The server's disk is full or below its configured free-space minimum: 507. */
  | "insufficient_storage";

export interface DomainErrorOptions {
  /**
   * The error this one was made from (a driver's, the network's, another DomainError): kept as the
   * standard ES2022 `cause`, so that logs show what really happened. Never sent to the client.
   */
  readonly cause?: unknown;
  /** Sent as `Retry-After` (seconds): when the client may try again (429, 503). */
  readonly retryAfterSeconds?: number;
}

export class DomainError extends Error {
  override readonly name = "DomainError";
  /** Sent as `Retry-After` (seconds): when the client may try again (429, 503). */
  readonly retryAfterSeconds?: number;

  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    message: string,
    /** Options, or (the older shorthand) the Retry-After seconds alone. */
    options: DomainErrorOptions | number = {},
  ) {
    const { cause, retryAfterSeconds } = typeof options === "number" ? { retryAfterSeconds: options } : options;
    super(message, cause === undefined ? undefined : { cause });
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

export const invalid = (code: string, message: string, options?: DomainErrorOptions) =>
  new DomainError("invalid", code, message, options);
export const notFound = (code: string, message: string, options?: DomainErrorOptions) =>
  new DomainError("not_found", code, message, options);
export const conflict = (code: string, message: string, options?: DomainErrorOptions) =>
  new DomainError("conflict", code, message, options);

/** The sentence Inedo clients and tests look for on a bad or insufficient key (docs/compat.md 0.1). */
export const PERMISSION_DENIED_MESSAGE =
  "The specified API key does not have the proper permissions to perform this action.";

export const forbidden = () => new DomainError("forbidden", "PERMISSION_DENIED", PERMISSION_DENIED_MESSAGE);
export const unauthenticated = () =>
  new DomainError("unauthenticated", "AUTHENTICATION_REQUIRED", "Authentication is required.");
