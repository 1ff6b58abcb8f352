import { compareVersions, formatVersion, parseVersion, versionsEqual, type UpackVersion } from "./upack-version.js";

/**
 * Package groups and names, version ranges, dependency strings and package identification strings
 * (docs/compat.md 1.2, 1.3). Parsing accepts every form the documentation and real manifests use, and is
 * stricter than Inedo.UPack only where the library accepts nonsense (an empty name, a group that
 * starts with `/`). Formatting only ever produces strings Inedo.UPack parses back to the same value:
 * a client that reads a dependency it cannot parse throws (docs/compat.md 1.3).
 */

const GROUP_CHARS = /^[0-9A-Za-z\-./_]*$/;
const NAME_CHARS = /^[0-9A-Za-z\-._]*$/;
const SHA1 = /^[0-9A-Fa-f]{40}$/;
export const MAX_GROUP_LENGTH = 250;
export const MAX_NAME_LENGTH = 50;

/** Why a group is invalid, as a phrase to follow the quoted group, or undefined when it is valid. */
export function groupProblem(group: string): string | undefined {
  if (group.length > MAX_GROUP_LENGTH) return `must be at most ${MAX_GROUP_LENGTH} characters`;
  if (!GROUP_CHARS.test(group)) return "may only contain letters, digits, '-', '.', '_' and '/'";
  if (group.startsWith("/") || group.endsWith("/")) return "must not start or end with '/'";
  if (group.includes("//")) return "must not contain '//'";
  return undefined;
}

/** Why a name is invalid, as a phrase to follow the quoted name, or undefined when it is valid. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return "must not be empty";
  if (name.length > MAX_NAME_LENGTH) return `must be at most ${MAX_NAME_LENGTH} characters`;
  if (!NAME_CHARS.test(name)) return "may only contain letters, digits, '-', '.' and '_'";
  return undefined;
}

/** The empty group ("") means "no group". */
export const isValidGroup = (group: string): boolean => groupProblem(group) === undefined;
export const isValidName = (name: string): boolean => nameProblem(name) === undefined;

/** An interval of versions; an absent bound is unbounded. Exclusivity of an absent bound is moot. */
export interface VersionRange {
  readonly lower?: UpackVersion;
  readonly lowerExclusive: boolean;
  readonly upper?: UpackVersion;
  readonly upperExclusive: boolean;
}

export const ANY_RANGE: VersionRange = Object.freeze({ lowerExclusive: false, upperExclusive: false });

export function exactRange(version: UpackVersion): VersionRange {
  return { lower: version, lowerExclusive: false, upper: version, upperExclusive: false };
}

export function isAnyRange(range: VersionRange): boolean {
  return range.lower === undefined && range.upper === undefined;
}

/**
 * `*`, a single version (exact match), or interval notation `[a,b)`, `(a,b]`, `[a,]`, `(,b)`, as
 * UniversalPackageVersionRange.TryParse: the whole text is trimmed, the bounds are not (so
 * `[1.0.0, 2.0.0)` is invalid) except that a blank bound is unbounded. `[1.0.0]` and two-part
 * versions such as `1.0` are not ranges there, so not here either.
 */
export function parseRange(text: string): VersionRange | undefined {
  const trimmed = text.trim();
  if (trimmed === "") return undefined;
  if (trimmed === "*") return ANY_RANGE;
  const exact = parseVersion(trimmed);
  if (exact) return exactRange(exact);

  const open = trimmed[0];
  const close = trimmed[trimmed.length - 1];
  if ((open !== "[" && open !== "(") || (close !== "]" && close !== ")") || trimmed.length < 2) return undefined;
  const inner = trimmed.slice(1, -1);
  const comma = inner.indexOf(",");
  if (comma < 0) return undefined;
  const lower = parseBound(inner.slice(0, comma));
  const upper = parseBound(inner.slice(comma + 1));
  if (lower === null || upper === null) return undefined;
  return { lower, lowerExclusive: open === "(", upper, upperExclusive: close === ")" };
}

// undefined = unbounded, null = invalid.
function parseBound(text: string): UpackVersion | undefined | null {
  if (text.trim() === "") return undefined;
  return parseVersion(text) ?? null;
}

/** `*`, a bare version for an exact match, else interval notation; always parseable by parseRange. */
export function formatRange(range: VersionRange): string {
  const { lower, upper } = range;
  if (lower === undefined && upper === undefined) return "*";
  if (lower && upper && versionsEqual(lower, upper) && !range.lowerExclusive && !range.upperExclusive) {
    return formatVersion(lower);
  }
  const lowerText = lower ? formatVersion(lower) : "";
  const upperText = upper ? formatVersion(upper) : "";
  return `${range.lowerExclusive ? "(" : "["}${lowerText},${upperText}${range.upperExclusive ? ")" : "]"}`;
}

/** Plain compareVersions against the bounds: there is no special treatment of prereleases. */
export function rangeIncludes(range: VersionRange, version: UpackVersion): boolean {
  if (range.lower) {
    const diff = compareVersions(version, range.lower);
    if (diff < 0 || (diff === 0 && range.lowerExclusive)) return false;
  }
  if (range.upper) {
    const diff = compareVersions(version, range.upper);
    if (diff > 0 || (diff === 0 && range.upperExclusive)) return false;
  }
  return true;
}

export interface UpackDependency {
  /** "" for the empty group. */
  readonly group: string;
  readonly name: string;
  readonly range: VersionRange;
  /** Lower-case SHA-1 of the referenced package file, from the 4-part documented form. */
  readonly sha1?: string;
  /** The string this was parsed from (or would be formatted to), echoed to clients when they can parse it. */
  readonly text: string;
}

interface Reading {
  group: string;
  name: string;
  range: VersionRange;
  sha1?: string;
}

/**
 * Every documented dependency form (docs/compat.md 1.3): `name`, `group/name`, `group:name`,
 * `group/name:range`, `group:name:range`, `group:name:range:sha1`, and the identification form
 * `group/name:version:sha1` that upack repack writes. Undefined when the text is none of these or the
 * group or name is invalid.
 */
export function parseDependency(text: string): UpackDependency | undefined {
  if (typeof text !== "string" || text.trim() === "") return undefined;
  // Inedo.UPack's own reading wins whenever it succeeds, so that clients and server always agree;
  // the extra forms are only tried on strings the library fails to parse.
  const reading = upackReading(text) ?? extendedReading(text);
  if (!reading || groupProblem(reading.group) !== undefined || nameProblem(reading.name) !== undefined) {
    return undefined;
  }
  return { ...reading, text };
}

/** `group/name` then `:range` unless any version goes: Inedo.UPack's own ToString form, never a hash. */
export function formatDependency(dependency: Omit<UpackDependency, "text">): string {
  const id = formatPackageId(dependency.group, dependency.name);
  return isAnyRange(dependency.range) ? id : `${id}:${formatRange(dependency.range)}`;
}

/** The original text when Inedo.UPack can parse it (ProGet echoes what was uploaded), else formatDependency. */
export function clientSafeDependency(dependency: UpackDependency): string {
  return upackCanParseDependency(dependency.text) ? dependency.text : formatDependency(dependency);
}

/** Whether UniversalPackageDependency.Parse succeeds on the text (it throws otherwise). */
export function upackCanParseDependency(text: string): boolean {
  const reading = typeof text === "string" && text.trim() !== "" ? upackReading(text) : undefined;
  if (!reading) return false;
  // The library's own id checks: no length limits, an empty name passes, a leading '/' passes.
  const groupOk = reading.group === "" || (GROUP_CHARS.test(reading.group) && !reading.group.includes("//"));
  return groupOk && NAME_CHARS.test(reading.name);
}

// UniversalPackageDependency.Parse: split on ':' into at most three parts (the third keeps any
// further colons); with two parts the second is a range if it parses as one, else it is a name.
function upackReading(text: string): Reading | undefined {
  const [first = "", second, third] = splitLimit(text, ":", 3);
  if (second === undefined) return { ...splitGroup(first), range: ANY_RANGE };
  if (third === undefined) {
    const range = parseRange(second);
    return range ? { ...splitGroup(first), range } : { group: first, name: second, range: ANY_RANGE };
  }
  const range = parseRange(third);
  return range ? { group: first, name: second, range } : undefined;
}

function extendedReading(text: string): Reading | undefined {
  const parts = text.split(":");
  const hash = parts[parts.length - 1] ?? "";
  if (!SHA1.test(hash)) return undefined;
  const range = parseRange(parts[parts.length - 2] ?? "");
  if (!range) return undefined;
  if (parts.length === 4) return { group: parts[0] ?? "", name: parts[1] ?? "", range, sha1: hash.toLowerCase() };
  if (parts.length === 3) return { ...splitGroup(parts[0] ?? ""), range, sha1: hash.toLowerCase() };
  return undefined;
}

/** A package identification string: an exact version, optionally the package file's SHA-1. */
export interface PackageIdentification {
  readonly group: string;
  readonly name: string;
  readonly version: UpackVersion;
  readonly sha1?: string;
}

/**
 * `group/name:version[:sha1]` as documented, plus the colon form `group:name:version[:sha1]` found
 * in real manifests (`inedox:AWS:3.1.0-CI.2`, docs/compat.md 1.3). A 40-hex-digit last part after a
 * version is the hash: it can never be a version itself, so this reading is never ambiguous.
 */
export function parsePackageIdentification(text: string): PackageIdentification | undefined {
  if (typeof text !== "string") return undefined;
  const parts = text.split(":");
  let hash: string | undefined;
  const last = parts[parts.length - 1] ?? "";
  if (parts.length >= 3 && SHA1.test(last) && parseVersion(parts[parts.length - 2] ?? "")) {
    hash = last.toLowerCase();
    parts.pop();
  }
  const version = parseVersion(parts[parts.length - 1] ?? "");
  if (!version) return undefined;
  let id: { group: string; name: string };
  if (parts.length === 2) id = splitGroup(parts[0] ?? "");
  else if (parts.length === 3) id = { group: parts[0] ?? "", name: parts[1] ?? "" };
  else return undefined;
  if (groupProblem(id.group) !== undefined || nameProblem(id.name) !== undefined) return undefined;
  return hash === undefined ? { ...id, version } : { ...id, version, sha1: hash };
}

export function formatPackageIdentification(id: PackageIdentification): string {
  const text = `${formatPackageId(id.group, id.name)}:${formatVersion(id.version)}`;
  return id.sha1 === undefined ? text : `${text}:${id.sha1}`;
}

/** `group/name`, or the bare name in the empty group (UniversalPackageId.ToString). */
export function formatPackageId(group: string, name: string): string {
  return group === "" ? name : `${group}/${name}`;
}

// Group = text before the last '/', as Inedo.UPack's ExtractGroup and pgutil's --name.
function splitGroup(fullName: string): { group: string; name: string } {
  const slash = fullName.lastIndexOf("/");
  return slash < 0
    ? { group: "", name: fullName }
    : { group: fullName.slice(0, slash), name: fullName.slice(slash + 1) };
}

// .NET String.Split(separator, count): at most `count` parts, the last keeping the remainder.
function splitLimit(text: string, separator: string, count: number): string[] {
  const parts = text.split(separator);
  if (parts.length <= count) return parts;
  return [...parts.slice(0, count - 1), parts.slice(count - 1).join(separator)];
}
