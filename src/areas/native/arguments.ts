import { invalid } from "../../domain/errors.js";
import { parseWholeNumber, type RawPair } from "../releases/params.js";
import type { NativeArguments, NativeMethod, NativeParameter, NativeType } from "./registry.js";

/**
 * Arguments of native methods, in two steps so that every transport shares the second:
 * a transport collects raw text values by lower-cased name (HTTP: collectPairs() of
 * releases/params.ts; SOAP later: the elements of the call), then bindArguments() matches them to
 * the method's parameters and converts them. Unknown names are ignored, as ASP.NET's binder does.
 */
export type RawArguments = ReadonlyMap<string, RawPair>;

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
    integer: parseWholeNumber,
    indicator: parseIndicator,
  };
  const value = converters[parameter.type](text);
  if (value === undefined) {
    const expected = parameter.type === "integer" ? "a whole number" : "Y or N (true or false)";
    throw invalid("INVALID_PARAMETER", `The parameter '${parameter.name}' must be ${expected}.`);
  }
  return value;
}

/** Native indicators are Y/N; .NET and Gson clients also send True/False (docs/compat.md 0.2). */
function parseIndicator(text: string): boolean | undefined {
  const value = text.toLowerCase();
  if (["y", "yes", "1"].includes(value) || value.startsWith("true")) return true;
  if (["n", "no", "0"].includes(value) || value.startsWith("false")) return false;
  return undefined;
}

function repeated(name: string) {
  return invalid("DUPLICATE_PARAMETER", `The parameter '${name}' is given more than once.`);
}
