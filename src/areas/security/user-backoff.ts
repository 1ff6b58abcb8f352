import { createHash } from "node:crypto";
import type { Clock } from "../../domain/clock.js";
import { addressKey } from "../../net/address-key.js";
import { NAME_MAX } from "./validation.js";

/**
 * Failed sign-ins per user name, known or not (treating both alike keeps the answer from telling
 * which names exist). After `freeFailures`, each failure makes the name wait before its next
 * check: 1 s, 2 s, 4 s, ... up to `maxDelaySeconds`. Failures are forgotten a while after the
 * last one; a success does not reset them, or a client signing in every few seconds would hand an
 * attacker fresh free failures each time.
 *
 * Never a lockout: each wait ends, and the first correct password after it is accepted. But an
 * attacker who fails again the moment each wait ends could keep a name waiting for as long as the
 * attack lasts. So an address from which the name has signed in before (remembered 30 days, in
 * memory) is never made to wait for it: the owner keeps working from where they work, while only
 * that address's own limit (address-throttle.ts) applies to whoever shares it. Someone signing in
 * from a new place during such an attack waits; a stranger cannot make an address known without
 * the password.
 */
export interface UserBackoff {
  /** Milliseconds before `user` may be checked from `address`; 0: now. */
  waitMs(user: string, address: string | undefined): number;
  /** Whether `user` is waiting for addresses it does not know (for callers without an address). */
  isWaiting(user: string): boolean;
  /** Counts a failure; returns the wait it started, in milliseconds (0: none). */
  failed(user: string): number;
  succeeded(user: string, address: string | undefined): void;
}

export interface UserBackoffOptions {
  readonly freeFailures: number;
  readonly maxDelaySeconds: number;
  readonly clock: Clock;
}

interface Failures {
  count: number;
  lastMs: number;
  waitUntilMs: number;
}

/** Names followed at most, and addresses remembered per name: memory stays bounded whatever is sent. */
const MAX_NAMES = 10_000;
const MAX_ADDRESSES_PER_NAME = 8;
const KNOWN_ADDRESS_MS = 30 * 24 * 3600_000;
const FIRST_DELAY_MS = 1000;

export function createUserBackoff({ freeFailures, maxDelaySeconds, clock }: UserBackoffOptions): UserBackoff {
  const maxDelayMs = maxDelaySeconds * 1000;
  // Long enough that the longest wait never outlives the failures that led to it.
  const forgetAfterMs = Math.max(15 * 60_000, 2 * maxDelayMs);
  const failures = new Map<string, Failures>();
  const knownAddresses = new Map<string, Map<string, number>>();

  function current(key: string, now: number): Failures | undefined {
    const entry = failures.get(key);
    if (entry !== undefined && now - entry.lastMs > forgetAfterMs) failures.delete(key);
    return failures.get(key);
  }

  function isKnown(key: string, address: string | undefined, now: number): boolean {
    const seen = knownAddresses.get(key)?.get(addressKey(address));
    return seen !== undefined && now - seen < KNOWN_ADDRESS_MS;
  }

  function waitingMs(key: string, now: number): number {
    const entry = current(key, now);
    return entry === undefined ? 0 : Math.max(0, entry.waitUntilMs - now);
  }

  return {
    waitMs(user, address) {
      const key = nameKey(user);
      const now = clock.now().getTime();
      return isKnown(key, address, now) ? 0 : waitingMs(key, now);
    },

    isWaiting: (user) => waitingMs(nameKey(user), clock.now().getTime()) > 0,

    failed(user) {
      const key = nameKey(user);
      const now = clock.now().getTime();
      const entry = current(key, now) ?? { count: 0, lastMs: now, waitUntilMs: 0 };
      entry.count++;
      entry.lastMs = now;
      const over = entry.count - freeFailures;
      const delayMs = over <= 0 ? 0 : Math.min(FIRST_DELAY_MS * 2 ** Math.min(over - 1, 30), maxDelayMs);
      entry.waitUntilMs = now + delayMs;
      remember(failures, key, entry, MAX_NAMES);
      return delayMs;
    },

    succeeded(user, address) {
      const key = nameKey(user);
      const addresses = knownAddresses.get(key) ?? new Map<string, number>();
      remember(addresses, addressKey(address), clock.now().getTime(), MAX_ADDRESSES_PER_NAME);
      remember(knownAddresses, key, addresses, MAX_NAMES);
    },
  };
}

/** Sets `key` as the newest entry, dropping the oldest beyond `max` (Maps iterate in insertion order). */
function remember<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  map.set(key, value);
  for (const oldest of map.keys()) {
    if (map.size <= max) break;
    map.delete(oldest);
  }
}

/** Names compare case-insensitively; one longer than any real name is kept as a digest, not as sent. */
function nameKey(user: string): string {
  const lower = user.toLowerCase();
  return lower.length <= NAME_MAX ? lower : `#${createHash("sha256").update(lower).digest("hex")}`;
}
