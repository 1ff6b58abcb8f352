/**
 * An execution's log as `/executions/logs` serves it (docs/compat.md 7.5 step 7): the stored text,
 * one line per entry (`<ISO time> <LEVEL> <message>`, deployment-runner.ts), filtered by
 * BuildMaster's log levels.
 */
export const LOG_LEVELS = { debug: 0, info: 10, warn: 20, error: 30 } as const;

const ENTRY = /^\d{4}-\d\d-\d\dT\S+ (DEBUG|INFO|WARN|ERROR)\b/;

/**
 * The lines of `log` at `minimum` or above. A line without a level (a message's continuation line,
 * or text a runner wrote without one) belongs to the entry before it, and counts as info at the start.
 */
export function filterLogByLevel(log: string, minimum: number): string {
  if (minimum <= 0) return log;
  let level: number = LOG_LEVELS.info;
  const kept: string[] = [];
  for (const line of log.split(/(?<=\n)/)) {
    const match = ENTRY.exec(line);
    if (match) level = LOG_LEVELS[(match[1] as string).toLowerCase() as keyof typeof LOG_LEVELS];
    if (level >= minimum) kept.push(line);
  }
  return kept.join("");
}
