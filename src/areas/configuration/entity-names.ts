import { invalid } from "../../domain/errors.js";

/** docs/compat.md 8.2: ≤ 50 letters, digits, `-`, `_`; starts with a letter; not ending in `-`/`_`. */
const ENTITY_NAME = /^[A-Za-z]([A-Za-z0-9_-]{0,48}[A-Za-z0-9])?$/;

/** 400 INVALID_NAME naming the rule, for server and role names (environments: the releases area). */
export function checkEntityName(what: "server" | "role", name: string): void {
  if (!ENTITY_NAME.test(name)) {
    throw invalid(
      "INVALID_NAME",
      `Invalid ${what} name '${name}': use up to 50 letters, digits, '-' or '_', starting with a letter and not ending in '-' or '_'.`,
    );
  }
}

/** Names as a list answers them: each once (any letter case), in the order given. */
export function distinctNames(names: readonly string[]): string[] {
  const seen = new Set<string>();
  return names.filter((name) => {
    const key = name.toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
