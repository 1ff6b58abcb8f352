import { invalid } from "./errors.js";

/**
 * The cache setting of an asset item or folder (docs/seed-api.md "MetadataUpdate"; docs/compat.md 4.4).
 * `Inherit` takes the parent folder's setting, up to the asset directory's own default.
 */
export type CacheHeader =
  | { readonly type: "Inherit" }
  | { readonly type: "NoCache" }
  | { readonly type: "TTL"; readonly value: number }
  | { readonly type: "Custom"; readonly value: string };

export const INHERIT: CacheHeader = { type: "Inherit" };

/** What a directory whose default is Inherit sends: docs/compat.md 4.2 "Cache-Control (default `public`)". */
const DEFAULT_CACHE_CONTROL = "public";

const TYPES: ReadonlyMap<string, CacheHeader["type"]> = new Map(
  (["Inherit", "NoCache", "TTL", "Custom"] as const).map((type) => [type.toLowerCase(), type]),
);
/** A year: the longest max-age caches honour (RFC 9111 5.2.2.1 "no more than one year"). */
const MAX_TTL_SECONDS = 31_536_000;
const MAX_CUSTOM_LENGTH = 1000;

/**
 * Parses `{type, value}` as clients send it: the type case-insensitively (pgutil sends `ttl`,
 * `nocache`), the value as a number or a string (pgutil sends `"60"`).
 */
export function parseCacheHeader(input: unknown): CacheHeader {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw invalid("INVALID_CACHE_HEADER", "'cacheHeader' must be an object with a 'type'.");
  }
  const fields = new Map(Object.entries(input).map(([name, value]) => [name.toLowerCase(), value]));
  const rawType = fields.get("type");
  const type = typeof rawType === "string" ? TYPES.get(rawType.trim().toLowerCase()) : undefined;
  if (type === undefined) {
    throw invalid("INVALID_CACHE_HEADER", "'cacheHeader.type' must be Inherit, NoCache, TTL or Custom.");
  }
  const value = fields.get("value");
  switch (type) {
    case "Inherit":
    case "NoCache":
      return { type };
    case "TTL": {
      const seconds = typeof value === "string" && value.trim() !== "" ? Number(value.trim()) : value;
      if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < 0 || seconds > MAX_TTL_SECONDS) {
        throw invalid(
          "INVALID_CACHE_HEADER",
          `A TTL cache header needs 'value': whole seconds from 0 to ${MAX_TTL_SECONDS}.`,
        );
      }
      return { type, value: seconds };
    }
    case "Custom": {
      const text = typeof value === "number" ? String(value) : value;
      // Printable ASCII only: the value goes into a response header as it is.
      if (typeof text !== "string" || !/^[\x20-\x7e]+$/.test(text.trim()) || text.length > MAX_CUSTOM_LENGTH) {
        throw invalid(
          "INVALID_CACHE_HEADER",
          "A Custom cache header needs 'value': the Cache-Control text, printable ASCII, at most 1000 characters.",
        );
      }
      return { type, value: text.trim() };
    }
  }
}

/**
 * The Cache-Control header an item gets: the first setting that is not Inherit, from the item
 * through its folders (innermost first) to the directory's default.
 */
export function effectiveCacheControl(settings: readonly CacheHeader[]): string {
  for (const setting of settings) {
    switch (setting.type) {
      case "Inherit":
        continue;
      case "NoCache":
        return "no-cache";
      case "TTL":
        return setting.value === 0 ? "no-cache" : `public, max-age=${setting.value}`;
      case "Custom":
        return setting.value;
    }
  }
  return DEFAULT_CACHE_CONTROL;
}

/** The JSON form (docs/compat.md 4.1): `{type}` or `{type, value}`. */
export function cacheHeaderJson(setting: CacheHeader): { type: string; value?: number | string } {
  return "value" in setting ? { type: setting.type, value: setting.value } : { type: setting.type };
}
