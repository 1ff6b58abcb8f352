import { createHash } from "node:crypto";
import path from "node:path";
import { expandVariables } from "../../domain/variables.js";
import { ExecutorError, type FileStat } from "../executor.js";
import type { DesiredItem, Difference } from "../model.js";
import { type Applied, type ItemHandler, type ItemRun, ItemUnknownError, shortHash } from "./handler.js";
import { formatMode } from "./modes.js";
import type { FileProperties } from "./schema.js";

/**
 * `file` items: a file exists with these bytes (text, base64 or a template over the run's
 * variables) and, when declared, this mode; or it does not exist. Compared by SHA-256, size and
 * mode. A sensitive file's differences and descriptions carry hashes only (not even its size),
 * and a new sensitive file is created 0600 unless a mode is declared.
 */
interface DesiredFile {
  readonly path: string;
  readonly exists: boolean;
  readonly sensitive: boolean;
  readonly bytes?: Buffer;
  readonly sha256?: string;
  readonly mode?: number;
}

type ActualFile =
  | { readonly kind: "none" }
  | { readonly kind: "file"; readonly size: number; readonly mode: number; readonly sha256: string }
  | { readonly kind: Exclude<FileStat["kind"], "file">; readonly mode: number };

const DEFAULT_MODE = 0o644;
const SENSITIVE_DEFAULT_MODE = 0o600;

export const fileHandler: ItemHandler<DesiredFile, ActualFile> = {
  prepare(item: DesiredItem, run: ItemRun): DesiredFile {
    const properties = item.properties as unknown as FileProperties;
    const base = { path: properties.path, exists: properties.exists, sensitive: item.sensitive };
    if (!properties.exists) return base;
    const bytes = desiredBytes(properties, run);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    return { ...base, bytes, sha256, ...(properties.mode !== undefined ? { mode: properties.mode } : {}) };
  },

  async collect(desired, run) {
    const stat = await run.executor.stat(desired.path);
    if (stat === undefined) return { kind: "none" };
    if (stat.kind !== "file") return { kind: stat.kind, mode: stat.mode };
    // Only an existing file the item wants to exist needs hashing.
    const sha256 = desired.exists ? await run.executor.hashFile(desired.path) : "";
    return { kind: "file", size: stat.size, mode: stat.mode, sha256 };
  },

  compare(desired, actual) {
    if (!desired.exists) return actual.kind === "none" ? [] : [{ property: "exists", desired: false, actual: true }];
    if (actual.kind === "none") return [{ property: "exists", desired: true, actual: false }];
    if (actual.kind !== "file") return [{ property: "kind", desired: "file", actual: actual.kind }];
    const differences: Difference[] = [];
    if (actual.sha256 !== desired.sha256) {
      differences.push({ property: "sha256", desired: desired.sha256 ?? null, actual: actual.sha256 });
      if (!desired.sensitive && actual.size !== desired.bytes?.length) {
        differences.push({ property: "size", desired: desired.bytes?.length ?? null, actual: actual.size });
      }
    }
    if (desired.mode !== undefined && actual.mode !== desired.mode) {
      differences.push({ property: "mode", desired: formatMode(desired.mode), actual: formatMode(actual.mode) });
    }
    return differences;
  },

  async apply(desired, actual, run): Promise<Applied> {
    const { executor } = run;
    if (!desired.exists) {
      if (actual.kind === "directory") throw directoryInTheWay(desired.path);
      await executor.remove(desired.path);
      return { description: phrase(desired, actual, "past") };
    }
    if (actual.kind === "directory") throw directoryInTheWay(desired.path);
    const contentDiffers = actual.kind !== "file" || actual.sha256 !== desired.sha256;
    if (contentDiffers) {
      if (actual.kind === "none") await run.ensureDirectory(path.posix.dirname(desired.path));
      await executor.writeFileAtomic(desired.path, desired.bytes ?? Buffer.alloc(0), targetMode(desired, actual));
    } else if (desired.mode !== undefined) {
      await executor.chmod(desired.path, desired.mode);
    }
    return { description: phrase(desired, actual, "past") };
  },

  describe(desired, actual) {
    return phrase(desired, actual, "present");
  },

  independent: true,
};

function desiredBytes(properties: FileProperties, run: ItemRun): Buffer {
  if (properties.contentBase64 !== undefined) return Buffer.from(properties.contentBase64, "base64");
  if (properties.template !== undefined) {
    const text = expandVariables(
      properties.template,
      run.ctx.variables,
      (reference) => new ItemUnknownError(`the template uses ${reference}, which is not defined`),
    );
    return Buffer.from(text, "utf8");
  }
  return Buffer.from(properties.content ?? "", "utf8");
}

/** The mode a write leaves: the declared one, else the existing file's, else the default. */
function targetMode(desired: DesiredFile, actual: ActualFile): number {
  if (desired.mode !== undefined) return desired.mode;
  if (actual.kind === "file") return actual.mode;
  return desired.sensitive ? SENSITIVE_DEFAULT_MODE : DEFAULT_MODE;
}

function directoryInTheWay(itemPath: string): ExecutorError {
  return new ExecutorError("FAILED", `${itemPath} is a directory; a directory item with exists: false can remove it.`);
}

/** "write /etc/app.conf (sha256 ab12.. -> cd34.., mode 0644 -> 0600)", or its past tense. */
function phrase(desired: DesiredFile, actual: ActualFile, tense: "present" | "past"): string {
  const verb = (present: string, past: string) => (tense === "present" ? present : past);
  if (!desired.exists) return `${verb("delete", "deleted")} ${desired.path}`;
  const mode = targetMode(desired, actual);
  if (actual.kind === "none") {
    return `${verb("create", "created")} ${desired.path} (sha256 ${shortHash(desired.sha256)}, mode ${formatMode(mode)})`;
  }
  if (actual.kind !== "file") {
    return `${verb("replace", "replaced")} the ${actual.kind} at ${desired.path} with a file (sha256 ${shortHash(desired.sha256)}, mode ${formatMode(mode)})`;
  }
  const modeChange = actual.mode !== mode ? `${formatMode(actual.mode)} -> ${formatMode(mode)}` : undefined;
  if (actual.sha256 === desired.sha256) {
    return `${verb("change", "changed")} the mode of ${desired.path} (${modeChange ?? formatMode(mode)})`;
  }
  const parts = [
    `sha256 ${shortHash(actual.sha256)} -> ${shortHash(desired.sha256)}`,
    ...(modeChange ? [modeChange] : []),
  ];
  return `${verb("write", "wrote")} ${desired.path} (${parts.join(", ")})`;
}
