import type { FileStat } from "../executor.js";
import { ExecutorError } from "../executor.js";
import type { DesiredItem, Difference } from "../model.js";
import type { Applied, ItemHandler, ItemRun } from "./handler.js";
import { formatMode } from "./modes.js";
import type { DirectoryProperties } from "./schema.js";

/** `directory` items: a directory exists (with this mode, when declared), or nothing is at the path. */
interface DesiredDirectory {
  readonly path: string;
  readonly exists: boolean;
  readonly mode?: number;
}
type ActualDirectory = { readonly kind: "none" } | { readonly kind: FileStat["kind"]; readonly mode: number };

const DEFAULT_MODE = 0o755;

export const directoryHandler: ItemHandler<DesiredDirectory, ActualDirectory> = {
  prepare(item: DesiredItem): DesiredDirectory {
    const { path, exists, mode } = item.properties as unknown as DirectoryProperties;
    return { path, exists, ...(mode !== undefined ? { mode } : {}) };
  },

  async collect(desired, run: ItemRun) {
    const stat = await run.executor.stat(desired.path);
    return stat === undefined ? { kind: "none" } : { kind: stat.kind, mode: stat.mode };
  },

  compare(desired, actual) {
    if (!desired.exists) return actual.kind === "none" ? [] : [{ property: "exists", desired: false, actual: true }];
    if (actual.kind === "none") return [{ property: "exists", desired: true, actual: false }];
    if (actual.kind !== "directory") return [{ property: "kind", desired: "directory", actual: actual.kind }];
    const differences: Difference[] = [];
    if (desired.mode !== undefined && "mode" in actual && actual.mode !== desired.mode) {
      differences.push({ property: "mode", desired: formatMode(desired.mode), actual: formatMode(actual.mode) });
    }
    return differences;
  },

  async apply(desired, actual, run): Promise<Applied> {
    const { executor } = run;
    if (!desired.exists) {
      await executor.remove(desired.path, { recursive: actual.kind === "directory" });
    } else if (actual.kind === "none") {
      await executor.mkdir(desired.path, desired.mode ?? DEFAULT_MODE);
    } else if (actual.kind !== "directory") {
      throw new ExecutorError("FAILED", `${desired.path} is a ${actual.kind}, not a directory; it is left as it is.`);
    } else if (desired.mode !== undefined) {
      await executor.chmod(desired.path, desired.mode);
    }
    return { description: phrase(desired, actual, "past") };
  },

  describe(desired, actual) {
    return phrase(desired, actual, "present");
  },
};

function phrase(desired: DesiredDirectory, actual: ActualDirectory, tense: "present" | "past"): string {
  const verb = (present: string, past: string) => (tense === "present" ? present : past);
  if (!desired.exists) {
    return actual.kind === "directory"
      ? `${verb("delete", "deleted")} the directory ${desired.path} and everything in it`
      : `${verb("delete", "deleted")} the ${actual.kind} at ${desired.path}`;
  }
  if (actual.kind === "none") {
    return `${verb("create", "created")} the directory ${desired.path} (mode ${formatMode(desired.mode ?? DEFAULT_MODE)})`;
  }
  if (actual.kind !== "directory") return `leave the ${actual.kind} at ${desired.path} (not a directory, not replaced)`;
  const from = "mode" in actual ? formatMode(actual.mode) : "?";
  return `${verb("change", "changed")} the mode of ${desired.path} (${from} -> ${formatMode(desired.mode ?? DEFAULT_MODE)})`;
}
