import { RateLimiterMemory } from "rate-limiter-flexible";
import { addressKey } from "../../net/address-key.js";

/**
 * Failed credentials per client address: after `failures` within `windowSeconds`, the address is
 * refused for a while, twice as long at each new block within a day, up to `maxBlockSeconds`.
 * Successes are never counted. Counting is rate-limiter-flexible's (in memory, per process); the
 * blocks themselves are kept here, because the replay path (http/hot-responses.ts) must ask
 * synchronously. Both read the system time: the library has no clock to inject.
 */
export interface AddressThrottle {
  /** Milliseconds for which the address is refused; 0 when it may try. */
  blockedForMs(address: string | undefined): number;
  /** Whether any address may be blocked now: when not, the hot path asks nothing else. */
  anyBlocked(): boolean;
  /** Counts one failure; returns the block it started, in milliseconds (0: none). */
  failed(address: string | undefined): Promise<number>;
}

export interface AddressThrottleOptions {
  readonly failures: number;
  readonly windowSeconds: number;
  readonly maxBlockSeconds: number;
}

/** Blocked addresses kept at most: an attacker with many addresses makes the oldest go first. */
const MAX_BLOCKED = 10_000;
const LEVEL_MEMORY_SECONDS = 24 * 3600;

export function createAddressThrottle({
  failures,
  windowSeconds,
  maxBlockSeconds,
}: AddressThrottleOptions): AddressThrottle {
  const recentFailures = new RateLimiterMemory({ keyPrefix: "failures", points: failures, duration: windowSeconds });
  const blocksToday = new RateLimiterMemory({ keyPrefix: "blocks", points: 64, duration: LEVEL_MEMORY_SECONDS });
  const blockedUntil = new Map<string, number>();

  function forgetExpired(now: number): void {
    for (const [key, until] of blockedUntil) if (until <= now) blockedUntil.delete(key);
    for (const key of blockedUntil.keys()) {
      if (blockedUntil.size < MAX_BLOCKED) break;
      blockedUntil.delete(key);
    }
  }

  return {
    blockedForMs(address) {
      if (blockedUntil.size === 0) return 0;
      const key = addressKey(address);
      const until = blockedUntil.get(key);
      if (until === undefined) return 0;
      const left = until - Date.now();
      if (left > 0) return left;
      blockedUntil.delete(key);
      return 0;
    },

    anyBlocked: () => blockedUntil.size > 0,

    async failed(address) {
      const key = addressKey(address);
      const counted = await recentFailures.penalty(key);
      if (counted.consumedPoints < failures) return 0;
      // The count starts again after the block, so that each block is earned anew.
      await recentFailures.delete(key);
      const level = (await blocksToday.penalty(key)).consumedPoints - 1;
      const blockMs = Math.min(windowSeconds * 2 ** Math.min(level, 30), maxBlockSeconds) * 1000;
      const now = Date.now();
      if (blockedUntil.size >= MAX_BLOCKED) forgetExpired(now);
      blockedUntil.delete(key); // re-inserted last: the oldest blocks are the first to go
      blockedUntil.set(key, now + blockMs);
      return blockMs;
    },
  };
}
