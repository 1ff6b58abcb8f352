import { invalid } from "./errors.js";
import { quote } from "./upack-manifest.js";

/**
 * User metadata of an asset item (docs/compat.md 4.1, 4.4): name -> text, each entry optionally sent
 * as a response header when the file is downloaded. How ProGet names that header is not
 * documented (docs/compat.md 12); Wharf uses the metadata name itself, which must then be a valid
 * header name and may not be one that would let an uploader change how the response is framed,
 * cached, authenticated or sandboxed (RESERVED_HEADERS).
 */
export interface MetadataEntry {
  readonly value: string;
  readonly header: boolean;
}
export type UserMetadata = Readonly<Record<string, MetadataEntry>>;

const MAX_METADATA_ENTRIES = 100;
const MAX_NAME_LENGTH = 200;
const MAX_VALUE_LENGTH = 8 * 1024;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const RESERVED_HEADERS = new Set([
  "accept-ranges",
  "age",
  "cache-control",
  "connection",
  "content-encoding",
  "content-length",
  "content-location",
  "content-range",
  "content-security-policy",
  "content-security-policy-report-only",
  "content-type",
  "date",
  "etag",
  "expires",
  "keep-alive",
  "last-modified",
  "link",
  "location",
  "proxy-authenticate",
  "refresh",
  "server",
  "set-cookie",
  "strict-transport-security",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "vary",
  "www-authenticate",
  "x-content-type-options",
  "x-frame-options",
  "x-request-id",
]);
const RESERVED_PREFIXES = ["access-control-", "x-proget-", "x-wharf-", "cross-origin-", "proxy-"];

function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** Parses the `userMetadata` object of a MetadataUpdate: values as text or `{value, includeInResponseHeader}`. */
export function parseUserMetadata(input: unknown): UserMetadata {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw invalid("INVALID_USER_METADATA", "'userMetadata' must be an object of names and values.");
  }
  const entries = Object.entries(input);
  if (entries.length > MAX_METADATA_ENTRIES) {
    throw invalid("INVALID_USER_METADATA", `'userMetadata' may hold at most ${MAX_METADATA_ENTRIES} entries.`);
  }
  const result: Record<string, MetadataEntry> = {};
  for (const [name, raw] of entries) {
    if (name.trim() === "" || name.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(name)) {
      throw invalid(
        "INVALID_USER_METADATA",
        `Metadata name ${quote(name)} must be 1 to ${MAX_NAME_LENGTH} characters without control characters.`,
      );
    }
    const entry = entryOf(name, raw);
    if (entry.header) checkHeader(name, entry.value);
    result[name] = entry;
  }
  return result;
}

function entryOf(name: string, raw: unknown): MetadataEntry {
  if (typeof raw === "string" || typeof raw === "number" || typeof raw === "boolean") {
    return withValue(name, String(raw), false);
  }
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw)) {
    const fields = new Map(Object.entries(raw).map(([key, value]) => [key.toLowerCase(), value]));
    const value = fields.get("value");
    const header = fields.get("includeinresponseheader");
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      return withValue(name, String(value), header === true || String(header).toLowerCase() === "true");
    }
  }
  throw invalid(
    "INVALID_USER_METADATA",
    `Metadata ${quote(name)} must be a text value or {"value": ..., "includeInResponseHeader": true}.`,
  );
}

function withValue(name: string, value: string, header: boolean): MetadataEntry {
  if (value.length > MAX_VALUE_LENGTH) {
    throw invalid("INVALID_USER_METADATA", `Metadata ${quote(name)} is longer than ${MAX_VALUE_LENGTH} characters.`);
  }
  return { value, header };
}

function checkHeader(name: string, value: string): void {
  if (!HEADER_NAME.test(name)) {
    throw invalid("INVALID_USER_METADATA", `Metadata ${quote(name)} cannot be a response header: not a header name.`);
  }
  if (isReservedHeader(name)) {
    throw invalid("INVALID_USER_METADATA", `Metadata ${quote(name)} cannot be a response header: Wharf sets it.`);
  }
  // Visible ASCII, spaces and tabs only: anything else could split or forge headers.
  if (!/^[\t\x20-\x7e]*$/.test(value)) {
    throw invalid(
      "INVALID_USER_METADATA",
      `Metadata ${quote(name)} cannot be a response header: its value must be printable ASCII.`,
    );
  }
}

/** `update` writes the given entries and keeps the others; `replace` keeps only the given ones. */
export function mergeUserMetadata(
  current: UserMetadata,
  given: UserMetadata,
  mode: "update" | "replace",
): UserMetadata {
  const merged: Record<string, MetadataEntry> = mode === "replace" ? {} : { ...current };
  for (const [name, entry] of Object.entries(given)) {
    // Names compare case-insensitively, as header names do: the new spelling replaces the old.
    for (const existing of Object.keys(merged)) {
      if (existing.toLowerCase() === name.toLowerCase()) delete merged[existing];
    }
    merged[name] = entry;
  }
  if (Object.keys(merged).length > MAX_METADATA_ENTRIES) {
    throw invalid("INVALID_USER_METADATA", `An item may hold at most ${MAX_METADATA_ENTRIES} metadata entries.`);
  }
  return merged;
}

/** The JSON form (docs/compat.md 4.1): text, or the object form only for entries sent as headers. */
export function userMetadataJson(
  metadata: UserMetadata,
): Record<string, string | { value: string; includeInResponseHeader: true }> {
  return Object.fromEntries(
    Object.entries(metadata).map(([name, entry]) => [
      name,
      entry.header ? { value: entry.value, includeInResponseHeader: true as const } : entry.value,
    ]),
  );
}

/** The response headers a download carries for this metadata. */
export function metadataHeaders(metadata: UserMetadata): [string, string][] {
  return Object.entries(metadata)
    .filter(([name, entry]) => entry.header && !isReservedHeader(name))
    .map(([name, entry]) => [name, entry.value]);
}
