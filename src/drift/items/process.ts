import type { DesiredItem } from "../model.js";
import { type ItemHandler, type ItemRun, ItemUnknownError } from "./handler.js";
import type { ProcessProperties } from "./schema.js";

/**
 * `process` items: a process whose command line matches the pattern is running. The pattern is
 * a substring of the command line (arguments joined by spaces), or, when it holds `*`, a wildcard
 * over the whole command line. Check only: Wharf does not start processes, so remediation changes
 * nothing and says so.
 */
interface DesiredProcess {
  readonly pattern: string;
  readonly matches: (command: string) => boolean;
}
interface ActualProcess {
  readonly running: boolean;
}

export const processHandler: ItemHandler<DesiredProcess, ActualProcess> = {
  prepare(item: DesiredItem): DesiredProcess {
    const { pattern } = item.properties as unknown as ProcessProperties;
    return { pattern, matches: matcher(pattern) };
  },

  async collect(desired, run: ItemRun) {
    const processes = await run.processes();
    if (processes === undefined) throw new ItemUnknownError("this transport cannot list the target's processes");
    return { running: processes.some((process) => desired.matches(process.command)) };
  },

  compare(_desired, actual) {
    return actual.running ? [] : [{ property: "running", desired: true, actual: false }];
  },

  apply(desired) {
    return Promise.reject(
      new ItemUnknownError(
        `no process matching '${desired.pattern}' is running; process items are check only, Wharf does not start processes`,
      ),
    );
  },

  describe(desired) {
    return `change nothing: no process matching '${desired.pattern}' is running, and process items are check only`;
  },
};

/** Substring, or `*` wildcards matched segment by segment (linear: no regular expression to backtrack). */
function matcher(pattern: string): (command: string) => boolean {
  if (!pattern.includes("*")) return (command) => command.includes(pattern);
  const parts = pattern.split("*");
  const first = parts[0] ?? "";
  const last = parts[parts.length - 1] ?? "";
  const middle = parts.slice(1, -1).filter((part) => part !== "");
  return (command) => {
    if (command.length < first.length + last.length || !command.startsWith(first) || !command.endsWith(last))
      return false;
    let at = first.length;
    const end = command.length - last.length;
    for (const part of middle) {
      const found = command.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}
