/**
 * Desired configuration items as clients send them (API bodies, CLI JSON files) and as they are
 * stored and shipped to agents (issue 13 section 2). One zod schema per type; `parseItems` turns a
 * list into DesiredItems with their keys, or refuses it with a message naming the field
 * (`items[2].mode: must be an octal mode such as 0644`).
 *
 * Wire format: `{ "type": "file", "path": "/etc/app.conf", "content": "...", "mode": "0640" }` and so
 * on (docs in /tmp plan; see ItemInput below). Properties kept on the DesiredItem are the
 * validated ones, with defaults filled in and `mode` as a number (permission bits).
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { groupProblem, nameProblem } from "../../domain/upack-range.js";
import { parseVersion } from "../../domain/upack-version.js";
import { strictTemplateProblem } from "../../domain/variables.js";
import type { DesiredItem, ItemType } from "../model.js";
import { formatMode, MAX_CONTENT_BYTES, parseMode } from "./modes.js";

export { formatMode, MAX_CONTENT_BYTES, parseMode };

/** Per role or per server; a longer list is refused (400 CONFIG_TOO_MANY_ITEMS). */
export const MAX_ITEMS = 10_000;
export const MAX_PATH_LENGTH = 4096;
const MAX_PATTERN_LENGTH = 500;
const MAX_KEY_LENGTH = 500;

/** Properties of a `file` item after validation. */
export interface FileProperties {
  readonly path: string;
  readonly exists: boolean;
  readonly content?: string;
  readonly contentBase64?: string;
  readonly template?: string;
  readonly mode?: number;
}
export interface DirectoryProperties {
  readonly path: string;
  readonly exists: boolean;
  readonly mode?: number;
}
export interface PackageProperties {
  readonly feed: string;
  /** "" when the package has no group. */
  readonly group: string;
  readonly name: string;
  /** An exact version or `latest`. */
  readonly version: string;
  readonly target: string;
}
export type ConfigKeyValue = string | number | boolean | null;
export interface ConfigKeyProperties {
  readonly path: string;
  readonly format: "json" | "ini" | "env";
  readonly key: string;
  /** Absent when exists is false. JSON keys may hold a number, boolean or null; ini/env values are text. */
  readonly value?: ConfigKeyValue;
  readonly exists: boolean;
}
export interface ProcessProperties {
  readonly pattern: string;
}

/** Why `value` is not an item path, or undefined: absolute POSIX, normalised, no `..`, NUL, backslash or control characters. */
export function itemPathProblem(value: string): string | undefined {
  if (value.length === 0) return "is required";
  if (value.length > MAX_PATH_LENGTH) return `must be at most ${MAX_PATH_LENGTH} characters`;
  if (value.includes("\\")) return "must use '/' separators (no backslash)";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) return "must not contain NUL or control characters";
  if (!value.startsWith("/")) return "must be an absolute path such as /etc/app.conf";
  if (value.split("/").includes("..")) return "must not contain '..'";
  if (path.posix.normalize(value) !== value || (value.length > 1 && value.endsWith("/"))) {
    return `must be normalised (no '.', '//' or trailing '/'): ${path.posix.normalize(value).replace(/(.)\/$/, "$1")}`;
  }
  return undefined;
}

const itemPath = (options: { allowRoot: boolean }) =>
  z.string({ error: typeError("a path") }).superRefine((value, context) => {
    const problem =
      itemPathProblem(value) ?? (!options.allowRoot && value === "/" ? "must not be / itself" : undefined);
    if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
  });

const mode = z.unknown().transform((value, context) => {
  const parsed = parseMode(value);
  if (parsed === undefined) {
    context.addIssue({ code: "custom", message: "must be an octal mode such as 0644" });
    return z.NEVER;
  }
  return parsed;
});

function typeError(what: string) {
  return (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : `must be ${what}`);
}

const bool = z.boolean({ error: typeError("true or false") });
const text = (max: number) =>
  z
    .string({ error: typeError("a string") })
    .refine((value) => Buffer.byteLength(value) <= max, { message: `must be at most ${max} bytes` });
const base64 = text(Math.ceil((MAX_CONTENT_BYTES * 4) / 3) + 4).refine(
  (value) => /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(value.replace(/\s+/g, "")),
  { message: "must be base64" },
);
const template = text(MAX_CONTENT_BYTES).superRefine((value, context) => {
  const problem = strictTemplateProblem(value);
  if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
});
const sensitive = bool.default(false);

const fileSchema = z
  .strictObject({
    type: z.literal("file"),
    path: itemPath({ allowRoot: false }),
    exists: bool.default(true),
    content: text(MAX_CONTENT_BYTES).optional(),
    contentBase64: base64.optional(),
    template: template.optional(),
    mode: mode.optional(),
    sensitive,
  })
  .superRefine((item, context) => {
    const given = (["content", "contentBase64", "template"] as const).filter((name) => item[name] !== undefined);
    if (item.exists && given.length !== 1) {
      context.addIssue({
        code: "custom",
        path: given.length === 0 ? [] : [given[1] ?? given[0] ?? ""],
        message:
          given.length === 0
            ? "a file that exists needs one of content, contentBase64 or template"
            : "give only one of content, contentBase64 or template",
      });
    }
    if (!item.exists) {
      for (const name of [...given, ...(item.mode !== undefined ? ["mode"] : [])]) {
        context.addIssue({ code: "custom", path: [name], message: "is not allowed with exists: false" });
      }
    }
    if (item.contentBase64 !== undefined && Buffer.from(item.contentBase64, "base64").length > MAX_CONTENT_BYTES) {
      context.addIssue({
        code: "custom",
        path: ["contentBase64"],
        message: `must decode to at most ${MAX_CONTENT_BYTES} bytes`,
      });
    }
  });

const directorySchema = z
  .strictObject({
    type: z.literal("directory"),
    path: itemPath({ allowRoot: false }),
    exists: bool.default(true),
    mode: mode.optional(),
    sensitive,
  })
  .superRefine((item, context) => {
    if (!item.exists && item.mode !== undefined) {
      context.addIssue({ code: "custom", path: ["mode"], message: "is not allowed with exists: false" });
    }
  });

const feedName = z
  .string({ error: typeError("a feed name") })
  .regex(/^[A-Za-z0-9._~-]{1,100}$/, "must be a feed name (letters, digits, '.', '_', '-', '~')")
  .refine((value) => value !== "." && value !== "..", { message: "must be a feed name" });
/** The upack rules for groups and names (domain/upack-range.ts), with their own wording. */
const problemCheck = (problem: (value: string) => string | undefined) =>
  function (value: string, context: z.RefinementCtx) {
    const found = problem(value);
    if (found !== undefined) context.addIssue({ code: "custom", message: found });
  };
const packageSchema = z.strictObject({
  type: z.literal("package"),
  feed: feedName,
  group: z
    .string({ error: typeError("a string") })
    .superRefine(problemCheck(groupProblem))
    .default(""),
  name: z.string({ error: typeError("a package name") }).superRefine(problemCheck(nameProblem)),
  version: z
    .string({ error: typeError("a version") })
    .refine((value) => value === "latest" || parseVersion(value) !== undefined, {
      message: "must be an exact version such as 1.2.0, or latest",
    }),
  target: itemPath({ allowRoot: true }),
  sensitive,
});

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const configKeySchema = z
  .strictObject({
    type: z.literal("config-key"),
    path: itemPath({ allowRoot: false }),
    format: z.enum(["json", "ini", "env"], { error: "must be json, ini or env" }),
    key: z
      .string({ error: typeError("a key") })
      .min(1, "is required")
      .max(MAX_KEY_LENGTH, `must be at most ${MAX_KEY_LENGTH} characters`)
      // eslint-disable-next-line no-control-regex
      .refine((value) => !/[\u0000-\u001f\u007f]/.test(value), { message: "must not contain control characters" }),
    value: z
      .union([text(MAX_CONTENT_BYTES), z.number(), z.boolean(), z.null()], {
        error: "must be a string, number, boolean or null",
      })
      .optional(),
    exists: bool.default(true),
    sensitive,
  })
  .superRefine((item, context) => {
    const keyProblem = configKeyProblem(item.format, item.key);
    if (keyProblem !== undefined) context.addIssue({ code: "custom", path: ["key"], message: keyProblem });
    if (item.exists && item.value === undefined) {
      context.addIssue({ code: "custom", path: ["value"], message: "is required unless exists is false" });
    }
    if (!item.exists && item.value !== undefined) {
      context.addIssue({ code: "custom", path: ["value"], message: "is not allowed with exists: false" });
    }
    if (item.format !== "json" && item.value !== undefined && typeof item.value !== "string") {
      context.addIssue({ code: "custom", path: ["value"], message: `must be a string in an ${item.format} file` });
    }
    if (item.format !== "json" && typeof item.value === "string" && /[\r\n]/.test(item.value)) {
      context.addIssue({ code: "custom", path: ["value"], message: "must be one line" });
    }
  });

function configKeyProblem(format: "json" | "ini" | "env", key: string): string | undefined {
  if (format === "env") return ENV_NAME.test(key) ? undefined : "must be a variable name such as APP_PORT";
  const segments = key.split(".");
  if (segments.some((segment) => segment.trim() === "")) return "must not have an empty segment (a.b.c)";
  if (format === "json" && segments.length > 32) return "must have at most 32 segments";
  if (format === "ini") {
    const name = segments[segments.length - 1] ?? "";
    if (/[=[\]#;]/.test(name)) return "must be section.key (the key without '=', '[', ']', '#' or ';')";
    if (/[[\]]/.test(segments.slice(0, -1).join("."))) return "must be section.key (the section without '[' or ']')";
  }
  return undefined;
}

const processSchema = z.strictObject({
  type: z.literal("process"),
  pattern: z
    .string({ error: typeError("a string") })
    .min(1, "is required")
    .max(MAX_PATTERN_LENGTH, `must be at most ${MAX_PATTERN_LENGTH} characters`),
  sensitive,
});

const itemSchema = z.discriminatedUnion(
  "type",
  [fileSchema, directorySchema, packageSchema, configKeySchema, processSchema],
  {
    error: (issue) =>
      issue.code === "invalid_union" || issue.code === "invalid_type"
        ? "must be one of file, directory, package, config-key or process"
        : undefined,
  },
);
type ItemInput = z.infer<typeof itemSchema>;

/** The key of an item among the items of its type (see plan: a path, feed/group/name::target, path#key, a pattern). */
function keyOf(item: ItemInput): string {
  switch (item.type) {
    case "file":
    case "directory":
      return item.path;
    case "package":
      return `${item.feed}/${item.group === "" ? "" : `${item.group}/`}${item.name}::${item.target}`;
    case "config-key":
      return `${item.path}#${item.key}`;
    case "process":
      return item.pattern;
  }
}

function toDesired(item: ItemInput, role: string | null): DesiredItem {
  const { type, sensitive: isSensitive, ...properties } = item;
  const kept = Object.fromEntries(Object.entries(properties).filter(([, value]) => value !== undefined));
  return { type: type as ItemType, key: keyOf(item), role, sensitive: isSensitive, properties: kept };
}

/** Validates an API/CLI items array; throws DomainError invalid("CONFIG_ITEM_INVALID", "items[2].mode: ...") naming the field. */
export function parseItems(input: unknown, role: string | null): DesiredItem[] {
  if (!Array.isArray(input)) throw invalid("CONFIG_ITEM_INVALID", "items: must be an array of items.");
  if (input.length > MAX_ITEMS) {
    throw invalid("CONFIG_TOO_MANY_ITEMS", `items: at most ${MAX_ITEMS} items (${input.length} given).`);
  }
  const items: DesiredItem[] = [];
  const seen = new Map<string, number>();
  for (const [index, raw] of input.entries()) {
    const where = `items[${index}]`;
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
      throw invalid("CONFIG_ITEM_INVALID", `${where}: must be an object with a type.`);
    }
    const result = itemSchema.safeParse(raw);
    if (!result.success) throw invalid("CONFIG_ITEM_INVALID", `${describeIssues(where, result.error.issues)}.`);
    const item = toDesired(result.data, role);
    const identity = `${item.type}\u0000${item.key}`;
    const first = seen.get(identity);
    if (first !== undefined) {
      throw invalid("CONFIG_ITEM_INVALID", `${where}: duplicates items[${first}] (${item.type} ${item.key}).`);
    }
    seen.set(identity, index);
    items.push(item);
  }
  return items;
}

function describeIssues(where: string, issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 3)
    .map((issue) => {
      const field = issue.path.map((part) => (typeof part === "number" ? `[${part}]` : `.${String(part)}`)).join("");
      if (issue.code === "unrecognized_keys") {
        return `${where}${field}: unknown ${issue.keys.length === 1 ? "property" : "properties"} ${issue.keys.map((key) => `'${key}'`).join(", ")}`;
      }
      if (issue.code === "invalid_union" && field === ".type") {
        return `${where}.type: must be one of file, directory, package, config-key or process`;
      }
      return `${where}${field}: ${issue.message}`;
    })
    .join("; ");
}

const SECRET_PROPERTIES: Readonly<Record<string, string>> = {
  content: "contentSha256",
  contentBase64: "contentSha256",
  template: "templateSha256",
  value: "valueSha256",
};

/**
 * The item as an API answer shows it, in the wire format (`mode` as "0644"): a sensitive item's
 * content, contentBase64, template or value replaced by its SHA-256 (`contentSha256` of the file's
 * bytes, `templateSha256`, `valueSha256` of the value as text).
 */
export function presentItem(item: DesiredItem): Record<string, unknown> {
  const shown: Record<string, unknown> = { type: item.type };
  for (const [name, value] of Object.entries(item.properties)) {
    if (name === "mode" && typeof value === "number") shown.mode = formatMode(value);
    else if (item.sensitive && name in SECRET_PROPERTIES)
      shown[SECRET_PROPERTIES[name] ?? name] = secretHash(name, value);
    else shown[name] = value;
  }
  shown.sensitive = item.sensitive;
  return shown;
}

function secretHash(name: string, value: unknown): string {
  const bytes =
    name === "contentBase64"
      ? Buffer.from(String(value), "base64")
      : Buffer.from(typeof value === "string" ? value : JSON.stringify(value));
  return createHash("sha256").update(bytes).digest("hex");
}
