import { invalid } from "./errors.js";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "./json-depth.js";
import {
  clientSafeDependency,
  groupProblem,
  nameProblem,
  parseDependency,
  type UpackDependency,
} from "./upack-range.js";
import { formatVersion, parseVersion, type UpackVersion, versionProblem } from "./upack-version.js";

/**
 * The `upack.json` manifest (docs/compat.md 1.2, 1.5): the rules of the published specification, which
 * the upack CLI enforces before it pushes, applied on upload so that nothing a client cannot read
 * back gets stored. Unknown properties are kept verbatim: the feed API echoes them (docs/seed-api.md A).
 */
export interface UpackManifest {
  /** "" is the empty group, which is what an absent, null or empty `group` means. */
  readonly group: string;
  readonly name: string;
  readonly version: UpackVersion;
  readonly title?: string;
  readonly description?: string;
  readonly shortDescription?: string;
  /** An absolute http(s) URL or `package://<path inside the package>`. */
  readonly icon?: string;
  readonly projectUrl?: string;
  readonly tags: readonly string[];
  readonly dependencies: readonly UpackDependency[];
  /** Kept as written: upack writes `2024-01-02 03:04:05Z`, other tools ISO 8601 (docs/compat.md 1.2). */
  readonly createdDate?: string;
  readonly createdReason?: string;
  readonly createdUsing?: string;
  readonly createdBy?: string;
  /** Identification strings or `{ id, date, reason, using, by, url, _... }` objects, verbatim. */
  readonly repackageHistory?: readonly unknown[];
  /**
   * The manifest has `contents` or `metaContents` (they stay in `extra`): it describes a virtual
   * package, and only parseVirtualManifest (vpack.ts) checks those entries, so an upload must be
   * routed there when this is true.
   */
  readonly isVirtual: boolean;
  /** Every other property, verbatim, including `_`-prefixed custom ones. */
  readonly extra: Readonly<Record<string, unknown>>;
  /** Property names in the order they were read, so that manifestToJson can keep that order. */
  readonly keyOrder?: readonly string[];
}

export interface ValidateManifestOptions {
  /** Prefix of every error message; "upack.json" unless the manifest came from elsewhere (".vpack"). */
  label?: string;
}

const TAG = /^[A-Za-z\-._][0-9A-Za-z\-._]{0,49}$/;
const IDENTITY_KEYS = ["group", "name", "version"] as const;
const LIST_KEYS = ["tags", "dependencies", "repackageHistory"] as const;
const atMost = (max: number) => (value: string) =>
  value.length > max ? `must be at most ${max} characters` : undefined;
const anything = () => undefined;

/** The optional string properties, each with what is wrong with a value (undefined: nothing). */
const TEXT_RULES = {
  title: atMost(50),
  description: anything,
  shortDescription: atMost(1000),
  icon: (value: string) =>
    isHttpUrl(value) || isPackageIconPath(value) ? undefined : "must be an absolute http(s) URL or a package:// path",
  projectUrl: (value: string) => (isHttpUrl(value) ? undefined : "must be an absolute http(s) URL"),
  // Not parsed: Inedo's own tools write two different formats and the library ignores bad dates.
  createdDate: anything,
  createdReason: anything,
  createdUsing: anything,
  createdBy: anything,
} satisfies Record<string, (value: string) => string | undefined>;
type TextKey = keyof typeof TEXT_RULES;
const TEXT_KEYS = Object.keys(TEXT_RULES) as TextKey[];
const KNOWN = [...IDENTITY_KEYS, ...TEXT_KEYS, ...LIST_KEYS];
type KnownKey = (typeof KNOWN)[number];
const KNOWN_SET: ReadonlySet<string> = new Set(KNOWN);

/** Throws an `invalid` DomainError (INVALID_MANIFEST) whose message names the offending field. */
export function validateManifest(json: unknown, options: ValidateManifestOptions = {}): UpackManifest {
  const label = options.label ?? "upack.json";
  const fail = (message: string) => invalid("INVALID_MANIFEST", `${label}: ${message}`);
  if (!isPlainObject(json)) throw fail("the manifest must be a JSON object");
  // First, before anything walks the values: stringifying a deep one later would overflow the stack.
  for (const [key, value] of Object.entries(json)) {
    if (exceedsJsonDepth(value)) throw fail(`${quote(key)} is nested more than ${MAX_JSON_DEPTH} levels deep`);
  }
  const text = (key: string): string | undefined => {
    const value = json[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") throw fail(`'${key}' must be a string`);
    return value;
  };

  const group = text("group") ?? "";
  const badGroup = groupProblem(group);
  if (badGroup) throw fail(`'group' ${quote(group)} ${badGroup}`);
  const name = text("name");
  if (name === undefined || name === "") throw fail("'name' is required");
  const badName = nameProblem(name);
  if (badName) throw fail(`'name' ${quote(name)} ${badName}`);
  const versionText = text("version");
  if (versionText === undefined || versionText === "") throw fail("'version' is required");
  const version = parseVersion(versionText);
  if (!version) throw fail(`'version' ${quote(versionText)} ${versionProblem(versionText)}`);

  const manifest: { -readonly [K in keyof UpackManifest]: UpackManifest[K] } = {
    group,
    name,
    version,
    tags: parseTags(json.tags, fail),
    dependencies: parseDependencies(json.dependencies, `${label}: `),
    isVirtual: "contents" in json || "metaContents" in json,
    extra: Object.fromEntries(Object.entries(json).filter(([key]) => !KNOWN_SET.has(key))),
    keyOrder: Object.keys(json),
  };
  for (const key of TEXT_KEYS) {
    const value = text(key);
    if (value === undefined) continue;
    const problem = TEXT_RULES[key](value);
    if (problem) throw fail(`'${key}' ${quote(value)} ${problem}`);
    manifest[key] = value;
  }
  const history = parseRepackageHistory(json.repackageHistory, fail);
  if (history) manifest.repackageHistory = history;
  return manifest;
}

/**
 * Dependencies as an upload gives them (docs/seed-api.md A): a JSON array of strings, or one string of
 * comma-separated identifiers from a query string or form. Commas inside a range (`[1.0.0,2.0.0)`)
 * do not split. Absent or null is no dependencies.
 */
export function parseDependencyList(input: unknown): UpackDependency[] {
  return parseDependencies(input, "");
}

function parseDependencies(input: unknown, prefix: string): UpackDependency[] {
  if (input === undefined || input === null) return [];
  const items = typeof input === "string" ? splitOutsideBrackets(input) : input;
  if (!Array.isArray(items)) {
    throw invalid("INVALID_MANIFEST", `${prefix}'dependencies' must be an array or a comma-separated string`);
  }
  const dependencies: UpackDependency[] = [];
  for (const item of items) {
    if (typeof item !== "string") throw invalid("INVALID_MANIFEST", `${prefix}'dependencies' entries must be strings`);
    const trimmed = item.trim();
    if (trimmed === "" && typeof input === "string") continue;
    const dependency = parseDependency(trimmed);
    if (!dependency) {
      throw invalid("INVALID_MANIFEST", `${prefix}'dependencies' entry ${quote(item)} is not a valid dependency`);
    }
    dependencies.push(dependency);
  }
  return dependencies;
}

// Inedo.UPack also reads a single string as a one-tag list (docs/compat.md 1.2).
function parseTags(input: unknown, fail: (message: string) => Error): string[] {
  if (input === undefined || input === null) return [];
  const items = typeof input === "string" ? [input] : input;
  if (!Array.isArray(items)) throw fail("'tags' must be an array of strings");
  const seen = new Set<string>();
  return items.map((tag: unknown) => {
    if (typeof tag !== "string") throw fail("'tags' entries must be strings");
    if (!TAG.test(tag)) {
      throw fail(
        `'tags' entry ${quote(tag)} must be 1 to 50 letters, digits, '-', '.' or '_', not starting with a digit`,
      );
    }
    // Unique ignoring case, like every other name match on the feed.
    if (seen.has(tag.toLowerCase())) throw fail(`'tags' entry ${quote(tag)} is repeated`);
    seen.add(tag.toLowerCase());
    return tag;
  });
}

function parseRepackageHistory(input: unknown, fail: (message: string) => Error): unknown[] | undefined {
  if (input === undefined || input === null) return undefined;
  if (!Array.isArray(input)) throw fail("'repackageHistory' must be an array");
  for (const entry of input as unknown[]) {
    const ok =
      typeof entry === "string"
        ? entry !== ""
        : isPlainObject(entry) && typeof entry.id === "string" && entry.id !== "";
    if (!ok) throw fail("'repackageHistory' entries must be identification strings or objects with an 'id'");
  }
  return input;
}

/**
 * The manifest as JSON for upack.json or the feed API: properties in the order they were read (then
 * any others), empty group, tags and dependencies left out, the version in canonical form, and each
 * dependency as written when Inedo.UPack can parse it, else in its own format (docs/compat.md 1.3).
 */
export function manifestToJson(manifest: UpackManifest): Record<string, unknown> {
  const known = (key: KnownKey): unknown => {
    switch (key) {
      case "group":
        return manifest.group === "" ? undefined : manifest.group;
      case "version":
        return formatVersion(manifest.version);
      case "tags":
        return manifest.tags.length === 0 ? undefined : [...manifest.tags];
      case "dependencies":
        return manifest.dependencies.length === 0 ? undefined : manifest.dependencies.map(clientSafeDependency);
      default:
        return manifest[key];
    }
  };
  const order = [...(manifest.keyOrder ?? []), ...KNOWN, ...Object.keys(manifest.extra)];
  const entries: [string, unknown][] = [];
  const done = new Set<string>();
  for (const key of order) {
    if (done.has(key)) continue;
    done.add(key);
    const value = KNOWN_SET.has(key)
      ? known(key as KnownKey)
      : Object.hasOwn(manifest.extra, key)
        ? manifest.extra[key]
        : undefined;
    if (value !== undefined) entries.push([key, value]);
  }
  // fromEntries defines own properties, so a `__proto__` key stays data instead of a prototype.
  return Object.fromEntries(entries);
}

/** `group=` absent or null is the empty group, as in upload and list parameters (docs/seed-api.md A). */
export function normalizeGroup(group: string | null | undefined): string {
  return group ?? "";
}

/**
 * A key under which a package is found: group and name compare ignoring case (docs/compat.md 1.4). Group
 * and name characters are ASCII, so lower-casing is exactly .NET's OrdinalIgnoreCase; ':' can appear
 * in neither, so keys of different packages never collide.
 */
export function packageIdentity(group: string | null | undefined, name: string): string {
  return `${normalizeGroup(group).toLowerCase()}:${name.toLowerCase()}`;
}

/** A package reference as list and download parameters give it: group null or absent is the empty group. */
export type PackageRef = { readonly group?: string | null; readonly name: string };

export function samePackage(a: PackageRef, b: PackageRef): boolean {
  return packageIdentity(a.group, a.name) === packageIdentity(b.group, b.name);
}

export interface PackagePath {
  readonly group: string;
  readonly name: string;
  /** Present exactly when `versionExpected` was true. */
  readonly version?: UpackVersion;
}

/**
 * Group, name and version from the path segments after `download/`, `download-file/`,
 * `download-vpack/` or `delete/` (docs/compat.md 2.12): the last segment is the version when one is
 * expected (no `latest`), the one before it the name, everything before that the group, which may
 * itself contain '/' or arrive as `%2F` (the Go client). A trailing slash is ignored.
 */
export function parsePackagePath(segments: readonly string[], options: { versionExpected: boolean }): PackagePath {
  const fail = (message: string) => invalid("INVALID_PACKAGE_PATH", message);
  const parts = segments.flatMap((segment) => segment.replace(/%2f/gi, "/").split("/"));
  while (parts[0] === "") parts.shift();
  while (parts[parts.length - 1] === "") parts.pop();
  let version: UpackVersion | undefined;
  if (options.versionExpected) {
    if (parts.length < 2) throw fail("the path names no version; give one or add the 'latest' query argument");
    const text = parts.pop() ?? "";
    version = parseVersion(text);
    if (!version) throw fail(`version ${quote(text)} ${versionProblem(text)}; give one or add 'latest'`);
  }
  const name = parts.pop();
  if (name === undefined) throw fail("the path names no package");
  const badName = nameProblem(name);
  if (badName) throw fail(`package name ${quote(name)} ${badName}`);
  const group = parts.join("/");
  const badGroup = groupProblem(group);
  if (badGroup) throw fail(`group ${quote(group)} ${badGroup}`);
  return version ? { group, name, version } : { group, name };
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function isHttpUrl(text: string): boolean {
  if (!/^https?:\/\//i.test(text)) return false;
  try {
    return new URL(text).host !== "";
  } catch {
    return false;
  }
}

// `package://images/icon.png`: a relative path inside the package, without '..' or backslashes.
function isPackageIconPath(text: string): boolean {
  if (!/^package:\/\//i.test(text)) return false;
  const path = text.slice("package://".length);
  return path !== "" && !path.includes("\\") && !/\p{Cc}/u.test(path) && !path.split("/").includes("..");
}

/** A value for an error message: quoted, and shortened so that a huge value cannot flood a log. */
export function quote(value: string): string {
  return `'${value.length > 100 ? `${value.slice(0, 100)}...` : value}'`;
}

/** A name echoed in a message (names come from URLs): bounded, and without control characters. */
export function printable(name: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  const text = name.replace(/[\u0000-\u001f\u007f]/g, "?");
  return text.length > 100 ? `${text.slice(0, 100)}...` : text;
}

function splitOutsideBrackets(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === "[" || char === "(") depth++;
    else if ((char === "]" || char === ")") && depth > 0) depth--;
    else if (char === "," && depth === 0) {
      parts.push(text.slice(start, index));
      start = index + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
