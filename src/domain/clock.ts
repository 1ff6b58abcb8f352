/** Time source, injected so that tests can control expiry and timestamps. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** ProGet-area date format: `yyyy-MM-ddTHH:mm:ss.fffZ` (docs/PRODUCT.md "Decisions"). */
export function formatProGetDate(date: Date): string {
  return date.toISOString();
}
