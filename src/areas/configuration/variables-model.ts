import { invalid } from "../../domain/errors.js";
import type { SecretBox } from "../../storage/secrets.js";
import { isVariableName } from "../releases/params.js";

/**
 * Variables of servers, roles, environments and global (docs/compat.md 8.4). Columns hold Otter's
 * object: `{ "Name": "value" }`, or `{ "Name": { "value": "...", "sensitive": true } }` for a
 * sensitive one. Names keep the letter case they were given and match case-insensitively.
 * A sensitive value is stored sealed with the data directory's secret key (storage/secrets.ts),
 * opened only for templates, and never answered: the API shows it as `null` (see presentVariables).
 */
export interface Variable {
  readonly value: string;
  readonly sensitive: boolean;
}
export type Variables = ReadonlyMap<string, Variable>;

export const MAX_VARIABLE_BYTES = 64 * 1024;

export function checkVariableName(name: string): void {
  // The releases area's rule: environments' variables are shared with it, and one rule is easier to live with.
  if (!isVariableName(name)) {
    throw invalid(
      "INVALID_VARIABLE_NAME",
      `Invalid variable name '${name}': use up to 50 letters, digits, '-', '_' or spaces, starting with a letter.`,
    );
  }
}

function checkValue(name: string, value: string): void {
  if (Buffer.byteLength(value) > MAX_VARIABLE_BYTES) {
    throw invalid("VARIABLE_TOO_LARGE", `The variable '${name}' is over ${MAX_VARIABLE_BYTES} bytes.`);
  }
}

/** Parses a variables object as a client sends it (400 naming the variable when malformed). */
export function parseVariables(input: unknown, field = "variables", previous?: Variables): Map<string, Variable> {
  if (input === null || input === undefined) return new Map();
  if (typeof input !== "object" || Array.isArray(input)) {
    throw invalid("INVALID_VARIABLES", `'${field}' must be an object of name: value.`);
  }
  const result = new Map<string, Variable>();
  const seen = new Set<string>();
  for (const [name, raw] of Object.entries(input)) {
    checkVariableName(name);
    if (seen.has(name.toLowerCase())) {
      throw invalid("DUPLICATE_VARIABLE", `The variable '${name}' is given twice (names are case-insensitive).`);
    }
    seen.add(name.toLowerCase());
    const kept = keptSensitive(raw, name, previous);
    const variable = kept ?? parseVariable(name, raw, field);
    checkValue(name, variable.value);
    result.set(name, variable);
  }
  return result;
}

/**
 * A sensitive variable sent back as the API shows it (`{ value: null, sensitive: true }`, after a
 * GET) keeps its stored value: a round trip must not erase what it could not see.
 */
function keptSensitive(raw: unknown, name: string, previous: Variables | undefined): Variable | undefined {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return undefined;
  const { value, sensitive } = raw as { value?: unknown; sensitive?: unknown };
  if (value !== null || sensitive !== true) return undefined;
  const stored = previous && findVariable(previous, name)?.[1];
  if (!stored?.sensitive) throw invalid("INVALID_VARIABLES", `The sensitive variable '${name}' needs a value.`);
  return stored;
}

function parseVariable(name: string, raw: unknown, field: string): Variable {
  if (typeof raw === "string") return { value: raw, sensitive: false };
  if (typeof raw === "number" || typeof raw === "boolean") return { value: String(raw), sensitive: false };
  if (raw && typeof raw === "object" && !Array.isArray(raw)) {
    const { value, sensitive } = raw as { value?: unknown; sensitive?: unknown };
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw invalid("INVALID_VARIABLES", `'${field}.${name}.value' must be a string.`);
    }
    if (sensitive !== undefined && typeof sensitive !== "boolean") {
      throw invalid("INVALID_VARIABLES", `'${field}.${name}.sensitive' must be true or false.`);
    }
    return { value: String(value), sensitive: sensitive === true };
  }
  throw invalid("INVALID_VARIABLES", `'${field}.${name}' must be a string or { value, sensitive }.`);
}

const PURPOSE = "variable";

/** A sensitive value as stored (sealed), and back. */
export const sealVariable = (value: string, secrets: SecretBox) => secrets.seal(value, PURPOSE);
export const openVariable = (stored: string, secrets: SecretBox) => secrets.open(stored, PURPOSE);

/** A stored column (trusted JSON) as variables, sensitive values opened. */
export function readVariableColumn(text: string, secrets: SecretBox): Map<string, Variable> {
  const parsed = JSON.parse(text) as Record<string, string | { value: string; sensitive?: boolean }>;
  const result = new Map<string, Variable>();
  for (const [name, raw] of Object.entries(parsed)) {
    result.set(
      name,
      typeof raw === "string"
        ? { value: raw, sensitive: false }
        : raw.sensitive === true
          ? { value: openVariable(raw.value, secrets), sensitive: true }
          : { value: raw.value, sensitive: false },
    );
  }
  return result;
}

export function writeVariableColumn(variables: Variables, secrets: SecretBox): string {
  const out: Record<string, string | { value: string; sensitive: true }> = {};
  for (const [name, { value, sensitive }] of variables) {
    out[name] = sensitive ? { value: sealVariable(value, secrets), sensitive: true } : value;
  }
  return JSON.stringify(out);
}

/** What the API answers: plain values as strings, sensitive ones as `{ value: null, sensitive: true }`. */
export function presentVariables(variables: Variables): Record<string, string | { value: null; sensitive: true }> {
  const out: Record<string, string | { value: null; sensitive: true }> = {};
  for (const [name, { value, sensitive }] of variables)
    out[name] = sensitive ? { value: null, sensitive: true } : value;
  return out;
}

/** The entry named `name`, any letter case. */
export function findVariable(variables: Variables, name: string): [string, Variable] | undefined {
  const wanted = name.toLowerCase();
  for (const entry of variables) if (entry[0].toLowerCase() === wanted) return entry;
  return undefined;
}

/** For templates: name lowercased -> value, sensitive values included (never answered). */
export function valuesByLowerName(variables: Variables): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, { value }] of variables) out.set(name.toLowerCase(), value);
  return out;
}
