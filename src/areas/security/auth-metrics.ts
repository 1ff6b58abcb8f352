import { Counter, Gauge, type Metric } from "prom-client";

/**
 * What guessing looks like from the outside, for `/metrics`. Created unregistered: the app's one
 * registry (http/metrics.ts) takes them, so that each app built in a test process has its own.
 */
export interface AuthMetrics {
  /** Credentials refused: `method` is password or api_key; `reason` why. */
  readonly failures: Counter<"method" | "reason">;
  /** Attempts refused unchecked: `scope` is address, user, or hashing (too many checks at once). */
  readonly throttled: Counter<"scope">;
  /** Passwords put through scrypt for a sign-in, unknown users included. */
  readonly passwordChecks: Counter;
  readonly passwordChecksRunning: Gauge;
  readonly all: readonly Metric[];
}

export function createAuthMetrics(): AuthMetrics {
  const failures = new Counter({
    name: "wharf_auth_failures_total",
    help: "Failed sign-ins and API key checks",
    labelNames: ["method", "reason"] as const,
    registers: [],
  });
  const throttled = new Counter({
    name: "wharf_auth_throttled_total",
    help: "Sign-in attempts refused without checking them (429 or 503 with Retry-After)",
    labelNames: ["scope"] as const,
    registers: [],
  });
  const passwordChecks = new Counter({
    name: "wharf_auth_password_checks_total",
    help: "Passwords hashed to check a sign-in (unknown users included)",
    registers: [],
  });
  const passwordChecksRunning = new Gauge({
    name: "wharf_auth_password_checks_running",
    help: "Password hashes being computed now",
    registers: [],
  });
  return {
    failures,
    throttled,
    passwordChecks,
    passwordChecksRunning,
    all: [failures, throttled, passwordChecks, passwordChecksRunning],
  };
}
