import { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { invalid } from "../../domain/errors.js";
import { parseBoolean } from "../../http/params.js";

/**
 * The lenient inputs of `/api/releases/...` (docs/compat.md 7.1, 0.2): key/value pairs from the query
 * string and/or a form or JSON body. Names match case-insensitively; empty values are absent; the
 * same name given twice (query and body, or twice in one of them) is 400; `$Name` pairs are
 * variables. The API key was already taken out of bodies by the auth hook; in the query it is
 * skipped here.
 */
export interface Inputs {
  /** The first of `names` given, trimmed. */
  get(...names: string[]): string | undefined;
  /** Like get(), but 400 when absent. */
  require(name: string, ...aliases: string[]): string;
  /** An integer id, 400 when not one. */
  id(...names: string[]): number | undefined;
  flag(name: string): boolean;
  has(name: string): boolean;
  /** `$Name` inputs, by name as spelled (without the `$`). */
  readonly variables: ReadonlyMap<string, string>;
}

const KEY_NAMES = new Set(["key", "api_key"]);
/** docs/compat.md 7.1: ≤ 50 letters, digits, `-`, `_` or spaces, starting with a letter. */
const VARIABLE_NAME = /^[A-Za-z][A-Za-z0-9_\- ]{0,49}$/;

export function isVariableName(name: string): boolean {
  return VARIABLE_NAME.test(name);
}

/**
 * An id or count as text: digits only, and at most 15 of them so that every value is a safe
 * integer (Number.MAX_SAFE_INTEGER has 16 digits). Exported for zod path schemas; code parses
 * with parseWholeNumber().
 */
export const WHOLE_NUMBER = /^\d{1,15}$/;

/** The number `text` spells (WHOLE_NUMBER), or undefined when it is not one. */
export function parseWholeNumber(text: string): number | undefined {
  return WHOLE_NUMBER.test(text) ? Number(text) : undefined;
}

/** One input as given: its name as spelled and its trimmed, non-empty value. */
export interface RawPair {
  readonly name: string;
  readonly value: string;
}

/**
 * The pairs of the query string and of a form or JSON body, by lower-cased name. The key (`key`,
 * `api_key`) is skipped, empty and null values are absent, and a name given twice, in one place
 * or in both, is 400. Shared with the native API's JSON transport (native/arguments.ts).
 */
export function collectPairs(request: FastifyRequest): Map<string, RawPair> {
  const pairs = new Map<string, RawPair>();
  const add = (name: string, raw: unknown) => {
    const lower = name.toLowerCase();
    if (KEY_NAMES.has(lower)) return;
    if (Array.isArray(raw)) throw repeated(name);
    const value = scalar(name, raw);
    if (value === undefined) return;
    if (pairs.has(lower)) throw repeated(name);
    pairs.set(lower, { name, value });
  };
  for (const [name, value] of Object.entries(asRecord(request.query))) add(name, value);
  const body: unknown = request.body;
  // BuildMaster.Net PUTs an empty text/plain body with everything in the query string (docs/compat.md 0.2);
  // a body of another type (or none) has nothing to read, so drain it.
  if (body instanceof Readable) body.resume();
  else if (body !== undefined && body !== null) {
    if (typeof body !== "object" || Array.isArray(body)) {
      throw invalid("INVALID_BODY", "The body must be a JSON object or form fields.");
    }
    for (const [name, value] of Object.entries(body)) add(name, value);
  }
  return pairs;
}

export function readInputs(request: FastifyRequest, aliases: Readonly<Record<string, string>> = {}): Inputs {
  const values = new Map<string, string>();
  const seen = new Set<string>();
  const variables = new Map<string, string>();
  for (const [lower, { name: rawName, value }] of collectPairs(request)) {
    const name = aliases[lower] ?? lower;
    if (seen.has(name)) throw repeated(rawName);
    seen.add(name);
    if (name.startsWith("$")) {
      const variable = rawName.slice(1);
      if (!isVariableName(variable)) {
        throw invalid(
          "INVALID_VARIABLE_NAME",
          `Invalid variable name '${variable}': use up to 50 letters, digits, '-', '_' or spaces, starting with a letter.`,
        );
      }
      variables.set(variable, value);
    } else {
      values.set(name, value);
    }
  }

  const get = (...names: string[]) => {
    for (const name of names) {
      const value = values.get(name.toLowerCase());
      if (value !== undefined) return value;
    }
    return undefined;
  };
  return {
    get,
    require(name, ...more) {
      const value = get(name, ...more);
      if (value === undefined) throw invalid("MISSING_PARAMETER", `The parameter '${name}' is required.`);
      return value;
    },
    id(...names) {
      const value = get(...names);
      if (value === undefined) return undefined;
      const id = parseWholeNumber(value);
      if (id === undefined) throw invalid("INVALID_ID", `'${names[0]}' must be a whole number.`);
      return id;
    },
    flag: (name) => parseBoolean(get(name), false),
    has: (name) => get(name) !== undefined,
    variables,
  };
}

function scalar(name: string, raw: unknown): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
  if (typeof raw !== "string") throw invalid("INVALID_PARAMETER", `The parameter '${name}' must be a single value.`);
  const trimmed = raw.trim();
  return trimmed === "" ? undefined : trimmed;
}

function repeated(name: string) {
  return invalid("DUPLICATE_PARAMETER", `The parameter '${name}' is given more than once.`);
}

function asRecord(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" ? (value as Record<string, unknown>) : {};
}

/** BuildMaster 5 names (docs/compat.md 7.2 legacy `/api/releases/packages/...`). */
export const LEGACY_PACKAGE_ALIASES: Readonly<Record<string, string>> = {
  packageid: "buildid",
  packagenumber: "buildnumber",
};
