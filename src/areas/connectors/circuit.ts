/**
 * A circuit breaker per upstream, in memory: after FAILURES_TO_OPEN consecutive failures the
 * upstream is not asked at all for a backoff (BASE_BACKOFF_MS, doubling with every reopening up to
 * MAX_BACKOFF_MS); then one request is let through to probe it. A success closes the circuit and
 * forgets the failures, a failed probe reopens it for the next, longer backoff. While it is open
 * or a probe is under way, callers answer from their caches or fail at once, instead of making
 * every client wait for a timeout that is sure to come.
 *
 * State lives in the process only: a restart gives every upstream a fresh chance, which is what
 * an operator restarting after fixing a network problem expects.
 */
export interface CircuitBreaker {
  /** Whether a request may go to the upstream now; when not, how long until one may. */
  admit(key: string, nowMs: number): Admission;
  /** The upstream answered (any status that is not its failure). */
  succeeded(key: string): void;
  /** The upstream failed: no answer, a timeout, or a 5xx. */
  failed(key: string, nowMs: number): void;
}

export type Admission =
  { readonly admitted: true } | { readonly admitted: false; readonly retryInMs: number; readonly failures: number };

export interface CircuitOptions {
  readonly failuresToOpen?: number;
  readonly baseBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

const FAILURES_TO_OPEN = 3;
const BASE_BACKOFF_MS = 5_000;
const MAX_BACKOFF_MS = 5 * 60_000;

interface State {
  failures: number;
  /** How often the circuit opened since it was last closed: decides the backoff. */
  opens: number;
  /** 0 while closed. */
  openUntil: number;
  probing: boolean;
}

export function createCircuitBreaker(options: CircuitOptions = {}): CircuitBreaker {
  const failuresToOpen = options.failuresToOpen ?? FAILURES_TO_OPEN;
  const base = options.baseBackoffMs ?? BASE_BACKOFF_MS;
  const cap = options.maxBackoffMs ?? MAX_BACKOFF_MS;
  const states = new Map<string, State>();

  return {
    admit(key, nowMs) {
      const state = states.get(key);
      if (state === undefined || state.openUntil === 0) return { admitted: true };
      if (nowMs < state.openUntil || state.probing) {
        return { admitted: false, retryInMs: Math.max(0, state.openUntil - nowMs), failures: state.failures };
      }
      state.probing = true;
      return { admitted: true };
    },
    succeeded(key) {
      states.delete(key);
    },
    failed(key, nowMs) {
      const state = states.get(key) ?? { failures: 0, opens: 0, openUntil: 0, probing: false };
      state.probing = false;
      state.failures += 1;
      if (state.failures >= failuresToOpen) {
        state.opens += 1;
        state.openUntil = nowMs + Math.min(cap, base * 2 ** Math.min(state.opens - 1, 30));
      }
      states.set(key, state);
    },
  };
}
