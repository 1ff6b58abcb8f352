import type { Clock } from "../../src/domain/clock.js";

/** A clock the tests move by hand. */
export function manualClock(start = Date.parse("2030-01-01T00:00:00.000Z")) {
  let now = start;
  const clock: Clock = { now: () => new Date(now) };
  return { clock, advance: (ms: number) => (now += ms), at: () => new Date(now).toISOString() };
}
