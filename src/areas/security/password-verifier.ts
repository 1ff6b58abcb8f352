import { DomainError } from "../../domain/errors.js";
import type { AuthMetrics } from "./auth-metrics.js";
import { UNMATCHABLE_HASH, verifyPassword } from "./passwords.js";

/** Checks sign-in passwords, a bounded number at once. */
export interface PasswordVerifier {
  /**
   * Whether `password` matches `stored`. Without a stored hash (an unknown user, or one without a
   * password) the answer is false after the same work, so that timing cannot list user names.
   * Throws unavailable (503 with Retry-After) when too many checks are already waiting.
   */
  verify(password: string, stored: string | undefined): Promise<boolean>;
}

export interface PasswordVerifierOptions {
  /** scrypt runs at once: each holds a libuv pool thread (four by default, shared with file I/O) and 32 MiB. */
  readonly concurrency: number;
  /** Checks waiting for a turn; beyond them a sign-in is refused at once rather than queued without end. */
  readonly queueLimit: number;
  readonly metrics?: AuthMetrics;
  /** The check itself; tests replace it to watch how many run at once. */
  readonly check?: (password: string, stored: string) => Promise<boolean>;
}

/** Seconds a client is told to wait when every turn is taken: a queue's worth of checks takes about that. */
const BUSY_RETRY_SECONDS = 1;

export function createPasswordVerifier({
  concurrency,
  queueLimit,
  metrics,
  check = verifyPassword,
}: PasswordVerifierOptions): PasswordVerifier {
  let running = 0;
  const waiting: (() => void)[] = [];

  async function takeTurn(): Promise<void> {
    if (running < concurrency) {
      running++;
      return;
    }
    if (waiting.length >= queueLimit) {
      metrics?.throttled.inc({ scope: "hashing" });
      throw new DomainError(
        "unavailable",
        "SIGN_IN_BUSY",
        "Too many sign-ins are being checked at once (WHARF_AUTH_PASSWORD_CHECKS at a time); try again shortly.",
        BUSY_RETRY_SECONDS,
      );
    }
    // The turn is handed over by release(): `running` stays counted for the waiter.
    await new Promise<void>((resolve) => waiting.push(resolve));
  }

  function release(): void {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }

  return {
    async verify(password, stored) {
      await takeTurn();
      metrics?.passwordChecks.inc();
      metrics?.passwordChecksRunning.inc();
      try {
        const matches = await check(password, stored ?? UNMATCHABLE_HASH);
        return stored !== undefined && matches;
      } finally {
        metrics?.passwordChecksRunning.dec();
        release();
      }
    },
  };
}
