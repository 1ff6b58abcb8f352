import { invalid } from "../../../domain/errors.js";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../../../domain/json-depth.js";
import { isPlainObject, parsePackagePath, quote } from "../../../domain/upack-manifest.js";
import { canonicalVersion, formatVersion, parseVersion } from "../../../domain/upack-version.js";

/**
 * The parameters of an upload (docs/compat.md 2.7), gathered from the three places a client may put
 * them: the path (`upload/<group...>/<name>[/<version>]`), the query string and a JSON or form
 * body. The same parameter given twice with different values is refused (docs/seed-api.md A errors),
 * whatever the two places; names match case-insensitively (docs/compat.md 0.1).
 */
export interface UploadParams {
  /** Present when the request names the group, "" included (a path always does). */
  readonly group?: string;
  readonly name?: string;
  /** As given; checked against upack.json or used to build one. */
  readonly version?: string;
  /** Every parameter except credentials and content sources, for building a plain package's upack.json. */
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly contentB64?: string;
  readonly contentUrl?: string;
}

export interface UploadParamsInput {
  /** What follows `upload/`, undefined for `upload` and the bare feed URL. */
  readonly pathTail: string | undefined;
  readonly query: unknown;
  /** A parsed JSON object or form body; undefined for a raw body. */
  readonly body: Record<string, unknown> | undefined;
  readonly bodyKind: "json" | "form" | "raw";
}

type Source = "path" | "query" | "body";
interface Occurrence {
  readonly source: Source;
  readonly value: unknown;
}

// Credentials are never data; auth already took the body's key out, the query's stays.
const RESERVED = new Set(["key", "api_key"]);
const IDENTITY = new Set(["group", "name", "version"]);
const LISTS = new Set(["tags", "dependencies"]);
/** upack.json property names (docs/compat.md 1.2) in their spelling, so `Title=` in a query is `title`. */
const KNOWN = [
  "group",
  "name",
  "version",
  "title",
  "description",
  "shortDescription",
  "icon",
  "projectUrl",
  "tags",
  "dependencies",
  "createdDate",
  "createdReason",
  "createdUsing",
  "createdBy",
  "repackageHistory",
  "content-b64",
  "content-url",
];
const SPELLING = new Map(KNOWN.map((name) => [name.toLowerCase(), name]));

export function collectUploadParams(input: UploadParamsInput): UploadParams {
  const found = new Map<string, { name: string; occurrences: Occurrence[] }>();
  const add = (source: Source, rawName: string, value: unknown) => {
    const lower = rawName.toLowerCase();
    if (RESERVED.has(lower) || value === undefined || value === null || value === "") return;
    const name = SPELLING.get(lower) ?? rawName;
    // A JSON body can nest without bound; later steps compare and stringify values recursively.
    if (exceedsJsonDepth(value)) {
      throw invalid(
        "INVALID_UPLOAD_PARAMETER",
        `The parameter ${quote(name)} is nested more than ${MAX_JSON_DEPTH} levels deep.`,
      );
    }
    const entry = found.get(name.toLowerCase()) ?? { name, occurrences: [] };
    entry.occurrences.push({ source, value });
    found.set(name.toLowerCase(), entry);
  };

  if (input.pathTail !== undefined && input.pathTail !== "") {
    const path = parseUploadPath(input.pathTail);
    add("path", "group", path.group === "" ? undefined : path.group);
    add("path", "name", path.name);
    add("path", "version", path.version);
  }
  const addAll = (source: Source, record: unknown, splitArrays: boolean) => {
    if (!isPlainObject(record)) return;
    for (const [name, value] of Object.entries(record)) {
      if (splitArrays && Array.isArray(value)) for (const item of value as unknown[]) add(source, name, item);
      else add(source, name, value);
    }
  };
  addAll("query", input.query, true);
  // A form repeats a field for several values; a JSON array is one value (tags, dependencies).
  if (input.body !== undefined) addAll("body", input.body, input.bodyKind === "form");

  const metadata: Record<string, unknown> = {};
  for (const { name, occurrences } of found.values()) metadata[name] = settle(name, occurrences);
  const text = (name: string): string | undefined => {
    const value = metadata[name];
    if (value === undefined) return undefined;
    if (typeof value !== "string")
      throw invalid("INVALID_UPLOAD_PARAMETER", `The parameter '${name}' must be a string.`);
    return value;
  };
  const group = text("group");
  const name = text("name");
  const version = text("version");
  const contentB64 = text("content-b64");
  const contentUrl = text("content-url");
  delete metadata["content-b64"];
  delete metadata["content-url"];
  // A path always names the group, possibly the empty one: `upload/name/1.0.0` is in no group.
  const pathGiven = input.pathTail !== undefined && input.pathTail !== "";
  return {
    ...(group !== undefined || pathGiven ? { group: group ?? "" } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(version !== undefined ? { version } : {}),
    metadata,
    ...(contentB64 !== undefined ? { contentB64 } : {}),
    ...(contentUrl !== undefined ? { contentUrl } : {}),
  };
}

/**
 * `<group...>/<name>/<version>` when there are at least two segments and the last one is a
 * version, else `<group...>/<name>` (the version then comes from the query or body). `%2F` is a
 * group separator (Go upack escapes it).
 */
function parseUploadPath(tail: string): { group: string; name: string; version?: string } {
  const segments = tail.replace(/%2f/gi, "/").split("/").filter(Boolean);
  const last = segments[segments.length - 1] ?? "";
  const withVersion = segments.length >= 2 && parseVersion(last) !== undefined;
  const { group, name, version } = parsePackagePath(segments, { versionExpected: withVersion });
  return version === undefined ? { group, name } : { group, name, version: formatVersion(version) };
}

/** One value per parameter: lists from query and form concatenate within a place; all must agree. */
function settle(name: string, occurrences: readonly Occurrence[]): unknown {
  const values: Occurrence[] = [];
  for (const occurrence of occurrences) {
    const joinWith = LISTS.has(name)
      ? values.findIndex((o) => o.source === occurrence.source && typeof o.value === "string")
      : -1;
    const before = values[joinWith];
    if (before !== undefined && typeof occurrence.value === "string") {
      values[joinWith] = { source: before.source, value: `${String(before.value)},${occurrence.value}` };
    } else {
      values.push(occurrence);
    }
  }
  const first = values[0] as Occurrence;
  if (values.length === 1) return first.value;
  const differing = values.find((other) => compareForm(name, other.value) !== compareForm(name, first.value));
  if (differing) {
    throw invalid(
      "CONFLICTING_PARAMETERS",
      `The parameter '${name}' was given more than once with different values ` +
        `(${show(first)} and ${show(differing)}).`,
    );
  }
  return first.value;
}

/** Identity compares the way packages match (case-insensitively, versions canonically); lists as text. */
function compareForm(name: string, value: unknown): string {
  if (typeof value !== "string") {
    if (LISTS.has(name) && Array.isArray(value)) return value.map(String).join(",");
    return JSON.stringify(value) ?? "";
  }
  if (name === "version") return (canonicalVersion(value) ?? value).toLowerCase();
  if (IDENTITY.has(name)) return value.toLowerCase();
  return value;
}

function show({ source, value }: Occurrence): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? "");
  return `${quote(text)} in the ${source}`;
}
