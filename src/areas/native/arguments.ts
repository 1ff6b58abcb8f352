import { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { invalid } from "../../domain/errors.js";
import type { NativeArguments, NativeMethod, NativeParameter, NativeType } from "./registry.js";

/**
 * Arguments of native methods, in two steps so that every transport shares the second:
 * a transport collects raw text values by lower-cased name (HTTP: query string and form or JSON
 * body; SOAP later: the elements of the call), then bindArguments() matches them to the method's
 * parameters and converts them. Unknown names are ignored, as ASP.NET's binder does.
 */
export type RawArguments = ReadonlyMap<string, { readonly name: string; readonly value: string }>;

/** The key travels with the arguments (compat.md 5.5, 7.7) but is the auth hook's business. */
const KEY_NAMES = new Set(["key", "api_key"]);

/**
 * Query string and body of a JSON call. Names match case-insensitively (compat.md 0.1); empty and
 * null values are absent (0.2); a name given twice, in one place or in both, is 400.
 */
export function collectHttpArguments(request: FastifyRequest): RawArguments {
  const raw = new Map<string, { name: string; value: string }>();
  const add = (name: string, value: unknown) => {
    const lower = name.toLowerCase();
    if (KEY_NAMES.has(lower)) return;
    if (Array.isArray(value)) throw repeated(name);
    const text = textOf(name, value);
    if (text === undefined) return;
    if (raw.has(lower)) throw repeated(name);
    raw.set(lower, { name, value: text });
  };
  for (const [name, value] of Object.entries(asRecord(request.query))) add(name, value);
  const body: unknown = request.body;
  if (body instanceof Readable) {
    // A body of another type (or none, as .NET clients post): nothing to read, so drain it.
    body.resume();
  } else if (body !== undefined && body !== null) {
    if (typeof body !== "object" || Array.isArray(body)) {
      throw invalid("INVALID_BODY", "The body must be a JSON object or form fields.");
    }
    for (const [name, value] of Object.entries(body)) add(name, value);
  }
  return raw;
}

/** Matches raw values to the method's parameters (any letter case, or an alias) and converts them. */
export function bindArguments(method: NativeMethod, raw: RawArguments): NativeArguments {
  const bound: Record<string, string | number | boolean | undefined> = {};
  for (const parameter of method.parameters) {
    const given = [parameter.name, ...(parameter.aliases ?? [])].flatMap((n) => raw.get(n.toLowerCase()) ?? []);
    if (given.length > 1) throw repeated(parameter.name);
    const [first] = given;
    if (first === undefined) {
      if (parameter.required) {
        throw invalid("MISSING_PARAMETER", `The parameter '${parameter.name}' is required.`);
      }
      bound[parameter.name] = undefined;
      continue;
    }
    bound[parameter.name] = convert(parameter, first.value);
  }
  return bound;
}

function convert(parameter: NativeParameter, text: string): string | number | boolean {
  const converters: Record<NativeType, (value: string) => string | number | boolean | undefined> = {
    string: (value) => value,
    integer: (value) => (/^\d{1,15}$/.test(value) ? Number(value) : undefined),
    indicator: parseIndicator,
  };
  const value = converters[parameter.type](text);
  if (value === undefined) {
    const expected = parameter.type === "integer" ? "a whole number" : "Y or N (true or false)";
    throw invalid("INVALID_PARAMETER", `The parameter '${parameter.name}' must be ${expected}.`);
  }
  return value;
}

/** Native indicators are Y/N; .NET and Gson clients also send True/False (compat.md 0.2). */
function parseIndicator(text: string): boolean | undefined {
  const value = text.toLowerCase();
  if (["y", "yes", "1"].includes(value) || value.startsWith("true")) return true;
  if (["n", "no", "0"].includes(value) || value.startsWith("false")) return false;
  return undefined;
}

function textOf(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (typeof value !== "string") {
    throw invalid("INVALID_PARAMETER", `The parameter '${name}' must be a single value.`);
  }
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

function repeated(name: string) {
  return invalid("DUPLICATE_PARAMETER", `The parameter '${name}' is given more than once.`);
}

function asRecord(value: unknown): Record<string, unknown> {
  return value && typeof value === "object" ? (value as Record<string, unknown>) : {};
}
