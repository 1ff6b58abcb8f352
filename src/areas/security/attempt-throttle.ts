import type { IncomingMessage } from "node:http";
import type { FastifyBaseLogger } from "fastify";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import { DomainError } from "../../domain/errors.js";
import type { Authenticator } from "../../http/auth.js";
import type { Credentials } from "../../http/credentials.js";
import { type AddressThrottleOptions, createAddressThrottle } from "./address-throttle.js";
import type { AuthMetrics } from "./auth-metrics.js";
import { type AuthenticatorDeps, createAuthenticator } from "./authenticator.js";
import { createPasswordVerifier } from "./password-verifier.js";
import { createUserBackoff, type UserBackoffOptions } from "./user-backoff.js";

export interface AttemptThrottleOptions {
  readonly address: AddressThrottleOptions;
  readonly user: Omit<UserBackoffOptions, "clock">;
  readonly clock: Clock;
  readonly metrics: AuthMetrics;
  /** Whether `request.ip` is taken from X-Forwarded-For (WHARF_TRUST_PROXY). */
  readonly trustProxy: boolean;
}

/** Sign-ins that may wait for a hash per one computed at once: about a second's wait at most. */
const PASSWORD_QUEUE_PER_CHECK = 8;
/** Longest user name written to the log: a name is as long as the header that carries it. */
const LOGGED_NAME_MAX = 256;

/**
 * The authenticator, slowed for guessers: a client address with too many recent failures, or a
 * user name in a backoff wait, is answered 429 with Retry-After before any key lookup or password
 * hash. Only failures count (a wrong or expired key, a wrong password, an unknown user); a busy
 * database or a full hashing queue are not the client's failures.
 */
export function withAttemptThrottle(inner: Authenticator, options: AttemptThrottleOptions): Authenticator {
  const { metrics, trustProxy } = options;
  const addresses = createAddressThrottle(options.address);
  const users = createUserBackoff({ ...options.user, clock: options.clock });

  function refuseUnchecked(credentials: Credentials, address: string | undefined): void {
    const blockedMs = addresses.blockedForMs(address);
    if (blockedMs > 0) {
      metrics.throttled.inc({ scope: "address" });
      throw tooMany("from this address", blockedMs, ADDRESS_SETTINGS);
    }
    const user = userOf(credentials);
    const waitMs = user === undefined ? 0 : users.waitMs(user, address);
    if (waitMs > 0) {
      metrics.throttled.inc({ scope: "user" });
      throw tooMany("for this user name", waitMs, USER_SETTINGS);
    }
  }

  async function countFailure(credentials: Credentials, address: string | undefined, log: Logger) {
    const method = credentials.kind === "api-key" ? "api_key" : "password";
    metrics.failures.inc({ method });
    const user = userOf(credentials);
    const userWaitMs = user === undefined ? 0 : users.failed(user);
    const addressBlockMs = await addresses.failed(address);
    // Never the password or the key: who tried, from where, and what it cost them.
    log.warn(
      { method, user: user?.slice(0, LOGGED_NAME_MAX), ip: address, userWaitMs, addressBlockMs },
      "failed sign-in",
    );
  }

  /** Whether a replay (which has no Fastify request) might be refusing someone the full path would refuse. */
  function mightRefuse(credentials: Credentials, request: IncomingMessage): boolean {
    const user = userOf(credentials);
    if (user !== undefined && users.isWaiting(user)) return true;
    if (!addresses.anyBlocked()) return false; // the usual case: no address list to work out
    return addressesOf(request, trustProxy).some((address) => addresses.blockedForMs(address) > 0);
  }

  return {
    ...inner,
    async authenticate(credentials, request) {
      const address = request?.ip;
      refuseUnchecked(credentials, address);
      try {
        const principal = await inner.authenticate(credentials);
        const user = userOf(credentials);
        if (user !== undefined && principal.type === "user" && principal.via === "password") {
          users.succeeded(user, address);
        }
        return principal;
      } catch (error) {
        if (error instanceof DomainError && error.kind === "forbidden") {
          await countFailure(credentials, address, request?.log ?? silent);
        }
        throw error;
      }
    },

    allowsFromMemory(credentials, need, request) {
      if (credentials !== undefined && request !== undefined && mightRefuse(credentials, request)) return false;
      return inner.allowsFromMemory(credentials, need, request);
    },
  };
}

function userOf(credentials: Credentials): string | undefined {
  return credentials.kind === "api-key" ? undefined : credentials.user;
}

/**
 * Every address a raw request could be counted under: behind a trusted proxy, request.ip is one
 * of the X-Forwarded-For entries, and working out which one is Fastify's job; any will do here.
 */
function addressesOf(request: IncomingMessage, trustProxy: boolean): string[] {
  const own = request.socket.remoteAddress;
  const forwarded = trustProxy ? request.headers["x-forwarded-for"] : undefined;
  const named = typeof forwarded === "string" ? forwarded.split(",").map((entry) => entry.trim()) : [];
  return own === undefined ? named : [own, ...named];
}

// Refusals name the settings that shape them, for the operator reading a user's report (README "Configuration").
const ADDRESS_SETTINGS = "WHARF_AUTH_ADDRESS_FAILURES failures per WHARF_AUTH_FAILURE_WINDOW_SECONDS";
const USER_SETTINGS = "waits double after WHARF_AUTH_USER_FREE_FAILURES failures, up to WHARF_AUTH_MAX_WAIT_SECONDS";

function tooMany(whose: string, waitMs: number, settings: string): DomainError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new DomainError(
    "too_many_requests",
    "TOO_MANY_FAILED_SIGN_INS",
    `Too many failed sign-ins ${whose}; try again in ${seconds} second${seconds === 1 ? "" : "s"} (${settings}).`,
    seconds,
  );
}

type Logger = Pick<FastifyBaseLogger, "warn">;
const silent: Logger = { warn: () => undefined };

/** The app's authenticator: password checks bounded as configured, failures slowed as configured. */
export function createThrottledAuthenticator(
  config: Pick<Config, "signIn" | "trustProxy">,
  metrics: AuthMetrics,
  deps: Omit<AuthenticatorDeps, "passwords">,
): Authenticator {
  const { signIn } = config;
  const passwords = createPasswordVerifier({
    concurrency: signIn.passwordChecks,
    queueLimit: PASSWORD_QUEUE_PER_CHECK * signIn.passwordChecks,
    metrics,
  });
  return withAttemptThrottle(createAuthenticator({ ...deps, passwords }), {
    address: {
      failures: signIn.addressFailures,
      windowSeconds: signIn.failureWindowSeconds,
      maxBlockSeconds: signIn.maxWaitSeconds,
    },
    user: { freeFailures: signIn.userFreeFailures, maxDelaySeconds: signIn.maxWaitSeconds },
    clock: deps.clock,
    metrics,
    trustProxy: config.trustProxy !== undefined,
  });
}
