import { invalid } from "./errors.js";

/**
 * Wildcard pattern lists (docs/seed-api.md "Feed (area I)"): feed package filters, connector filters,
 * retention rules. `*` matches any run of characters, everything else is literal, matching ignores
 * case. A pattern prefixed with `!` excludes.
 */
export interface PatternList {
  /** The trimmed patterns as given, negations still prefixed with `!`. */
  readonly patterns: readonly string[];
  /**
   * Empty list: everything. Only negations: everything not excluded. Otherwise: at least one
   * positive pattern matches and no negation does (["A.*", "B.*", "!C.*"]).
   */
  matches(value: string): boolean;
}

export interface CompilePatternsOptions {
  /** Defaults to true; retention rules take wildcards without negations (docs/compat.md 5.2). */
  allowNegation?: boolean;
}

type Matcher = (lowerCaseValue: string) => boolean;

export function compilePatterns(patterns: readonly string[], options: CompilePatternsOptions = {}): PatternList {
  const allowNegation = options.allowNegation ?? true;
  const normalized: string[] = [];
  const include: Matcher[] = [];
  const exclude: Matcher[] = [];

  for (const raw of patterns) {
    // Lists arrive from JSON bodies; a non-string would otherwise fail obscurely later.
    if (typeof raw !== "string") throw invalid("INVALID_PATTERN", "patterns must be strings");
    // Trimmed because lists are often pasted from text areas with stray spaces or CRs.
    const pattern = raw.trim();
    if (pattern === "") throw invalid("INVALID_PATTERN", "a pattern must not be empty");
    const negated = pattern.startsWith("!");
    if (negated && !allowNegation) {
      throw invalid("INVALID_PATTERN", `pattern '${pattern}' is a negation, which is not allowed here`);
    }
    const body = negated ? pattern.slice(1) : pattern;
    if (body === "") throw invalid("INVALID_PATTERN", `pattern '${pattern}' has nothing after '!'`);
    normalized.push(pattern);
    (negated ? exclude : include).push(compileWildcard(body));
  }

  return {
    patterns: normalized,
    matches(value: string): boolean {
      const lower = value.toLowerCase();
      if (exclude.some((m) => m(lower))) return false;
      return include.length === 0 || include.some((m) => m(lower));
    },
  };
}

/**
 * Splits on `*` and matches the pieces left to right instead of building a RegExp: greedy
 * leftmost search is exact for `*`-only globs and, unlike a backtracking `.*a.*a.*` regex,
 * stays O(value x pattern) for whatever an administrator types.
 */
function compileWildcard(pattern: string): Matcher {
  const parts = pattern.toLowerCase().split("*");
  const first = parts[0] ?? "";
  if (parts.length === 1) return (value) => value === first;
  const last = parts[parts.length - 1] ?? "";
  const middle = parts.slice(1, -1).filter((part) => part !== "");

  return (value) => {
    if (value.length < first.length + last.length) return false;
    if (!value.startsWith(first) || !value.endsWith(last)) return false;
    const end = value.length - last.length;
    let position = first.length;
    for (const part of middle) {
      const found = value.indexOf(part, position);
      if (found < 0 || found + part.length > end) return false;
      position = found + part.length;
    }
    return true;
  };
}
