import { invalid } from "./errors.js";

/**
 * `$Name`, `${Name}` and `$$` in text (deployment plans, configuration file templates): a name is
 * replaced by its variable's value, names match case-insensitively (the map's keys are lowercase),
 * `$$` is a literal `$`. A `$` followed by anything else stays as it is. An unknown name fails
 * rather than passing through: `/srv/$Aplication` must not deploy to a literal directory.
 *
 * Expansion only ever reads the map: there is no syntax that reads a file, the environment or runs
 * anything, so a template is as safe as the variables it names.
 */
const REFERENCE = /\$\$|\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)/g;
const STICKY_REFERENCE = new RegExp(REFERENCE.source, "y");

/** Every `$` of the text, as this syntax reads it. */
type Reference =
  | { readonly kind: "dollar"; readonly index: number }
  | { readonly kind: "name"; readonly index: number; readonly name: string; readonly text: string }
  | { readonly kind: "literal"; readonly index: number };

/** The variable names `input` refers to, in order of first use, lowercase. */
export function variableReferences(input: string): string[] {
  const names = new Set<string>();
  for (const reference of references(input)) if (reference.kind === "name") names.add(reference.name.toLowerCase());
  return [...names];
}

/**
 * Where `input` uses `$` in a way this syntax does not read (`${file:/etc/passwd}`, `$(cat x)`, a
 * lone `$` at the end): a message for the first such place, or undefined. Templates are refused
 * with it, so that what looks like an expression is never written out literally by surprise.
 */
export function strictTemplateProblem(input: string): string | undefined {
  for (const reference of references(input)) {
    if (reference.kind !== "literal") continue;
    const shown = JSON.stringify(input.slice(reference.index, reference.index + 12));
    return `'$' at offset ${reference.index} (${shown}) must start $Name, \${Name} or $$ (a literal $); templates only read variables`;
  }
  return undefined;
}

/** Replaces `$Name`, `${Name}` and `$$`; an unknown name throws `onUnknown(reference)` (default: invalid PLAN_VARIABLE_UNKNOWN). */
export function expandVariables(
  input: string,
  variables: ReadonlyMap<string, string>,
  onUnknown: (reference: string, name: string) => Error = (reference) =>
    invalid("PLAN_VARIABLE_UNKNOWN", `The variable ${reference} is not defined.`),
): string {
  return input.replace(REFERENCE, (whole, braced?: string, bare?: string) => {
    const name = braced ?? bare;
    if (name === undefined) return "$";
    const value = variables.get(name.toLowerCase());
    if (value === undefined) throw onUnknown(whole, name);
    return value;
  });
}

function* references(input: string): Generator<Reference> {
  let from = 0;
  for (let index = input.indexOf("$", from); index !== -1; index = input.indexOf("$", from)) {
    STICKY_REFERENCE.lastIndex = index;
    const found = STICKY_REFERENCE.exec(input);
    if (found === null) {
      yield { kind: "literal", index };
      from = index + 1;
    } else if (found[0] === "$$") {
      yield { kind: "dollar", index };
      from = index + 2;
    } else {
      yield { kind: "name", index, name: found[1] ?? found[2] ?? "", text: found[0] };
      from = index + found[0].length;
    }
  }
}
