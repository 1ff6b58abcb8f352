import { createHash } from "node:crypto";
import path from "node:path";
import type { DesiredItem, Difference } from "../model.js";
import { ConfigFormatError, type Lookup, readKey, writeKey } from "./config-formats.js";
import { type Applied, type ItemHandler, type ItemRun, ItemUnknownError, shortHash } from "./handler.js";
import { MAX_CONTENT_BYTES } from "./modes.js";
import type { ConfigKeyProperties, ConfigKeyValue } from "./schema.js";

/**
 * `config-key` items: one key of a JSON, INI or `.env` file has this value (or is absent), the
 * rest of the file kept (config-formats.ts). A missing file is created when the key should exist.
 * Values show in differences when short and not sensitive; otherwise as SHA-256 hashes.
 */
interface DesiredKey {
  readonly properties: ConfigKeyProperties;
  readonly sensitive: boolean;
}
interface ActualKey {
  /** The file's text; undefined when there is no file. */
  readonly text: string | undefined;
  readonly lookup: Lookup;
}

/** Files larger than this are not edited: config files are small, and the whole text is kept in memory. */
const MAX_FILE_BYTES = MAX_CONTENT_BYTES;
const SHOWN_VALUE_LENGTH = 100;

export const configKeyHandler: ItemHandler<DesiredKey, ActualKey> = {
  prepare(item: DesiredItem): DesiredKey {
    return { properties: item.properties as unknown as ConfigKeyProperties, sensitive: item.sensitive };
  },

  async collect(desired, run: ItemRun) {
    const { path: file, format, key } = desired.properties;
    const stat = await run.executor.stat(file);
    if (stat === undefined) return { text: undefined, lookup: { found: false } };
    if (stat.kind !== "file") throw new ItemUnknownError(`${file} is a ${stat.kind}, not a file`);
    const text = (await run.executor.readFile(file, MAX_FILE_BYTES)).toString("utf8");
    try {
      return { text, lookup: readKey(format, text, key) };
    } catch (error) {
      if (error instanceof ConfigFormatError) throw new ItemUnknownError(`${file} ${error.message}`);
      throw error;
    }
  },

  compare(desired, actual) {
    const { exists, value } = desired.properties;
    if (!exists) return actual.lookup.found ? [{ property: "exists", desired: false, actual: true }] : [];
    if (!actual.lookup.found) return [{ property: "exists", desired: true, actual: false }];
    if (sameValue(value, actual.lookup.value)) return [];
    return [
      {
        property: "value",
        desired: shown(value ?? null, desired.sensitive),
        actual: shown(actual.lookup.value, desired.sensitive),
      },
    ];
  },

  async apply(desired, collected, run): Promise<Applied> {
    const { path: file, format, key, exists, value } = desired.properties;
    // Read again: an earlier item of this remediation may have changed the same file.
    const actual = await configKeyHandler.collect(desired, run);
    let text: string;
    try {
      text = writeKey(format, actual.text ?? "", key, exists ? value : undefined);
    } catch (error) {
      if (error instanceof ConfigFormatError) throw new ItemUnknownError(`${file} ${error.message}`);
      throw error;
    }
    if (actual.text === undefined) {
      await run.ensureDirectory(path.posix.dirname(file));
    }
    const mode = actual.text === undefined ? (desired.sensitive ? 0o600 : 0o644) : undefined;
    await run.executor.writeFileAtomic(file, Buffer.from(text, "utf8"), mode);
    return { description: phrase(desired, collected, "past") };
  },

  describe(desired, actual) {
    return phrase(desired, actual, "present");
  },
};

function sameValue(desired: ConfigKeyValue | undefined, actual: unknown): boolean {
  return desired === actual;
}

/** A value for a Difference: itself when short and not sensitive, else its SHA-256 (objects: "(object)"). */
function shown(value: unknown, sensitive: boolean): Difference["actual"] {
  if (value !== null && typeof value === "object") return Array.isArray(value) ? "(array)" : "(object)";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (sensitive || text.length > SHOWN_VALUE_LENGTH) return `sha256:${hash(text)}`;
  return value as string | number | boolean | null;
}

function hash(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

function phrase(desired: DesiredKey, actual: ActualKey, tense: "present" | "past"): string {
  const verb = (present: string, past: string) => (tense === "present" ? present : past);
  const { path: file, key, exists, value } = desired.properties;
  if (!exists) return `${verb("remove", "removed")} ${key} from ${file}`;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const what =
    desired.sensitive || text.length > SHOWN_VALUE_LENGTH
      ? `(sha256 ${shortHash(hash(text))})`
      : `to ${JSON.stringify(value)}`;
  if (actual.text === undefined) return `${verb("create", "created")} ${file} with ${key} set ${what}`;
  return `${verb("set", "set")} ${key} in ${file} ${what}`;
}
