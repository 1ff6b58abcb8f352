import { Cron } from "croner";
import { invalid } from "../../domain/errors.js";

/**
 * A feed's retention schedule: a five-field cron expression (minute hour day-of-month month
 * day-of-week, or a nickname such as `@daily`), read in UTC by croner. Seconds are not offered: a
 * run reads the whole feed, and once a minute is already more than any feed needs.
 */
export interface RetentionSchedule {
  readonly expression: string;
  /** The first firing strictly after `after`; undefined when the expression never fires again. */
  nextAfter(after: Date): Date | undefined;
}

export function parseRetentionSchedule(expression: string): RetentionSchedule {
  const text = expression.trim();
  let cron: Cron;
  try {
    cron = new Cron(text, { paused: true, timezone: "UTC", mode: "5-part" });
  } catch (error) {
    const detail = error instanceof Error ? error.message.replace(/^CronPattern: /, "") : String(error);
    throw invalid(
      "INVALID_RETENTION_SCHEDULE",
      `retentionSchedule: '${text.slice(0, 200)}' is not a cron expression of five fields (minute hour ` +
        `day-of-month month day-of-week, UTC), e.g. '0 3 * * *' for 03:00 every day: ${detail}`,
      { cause: error },
    );
  }
  return {
    expression: text,
    nextAfter: (after) => cron.nextRun(after) ?? undefined,
  };
}
