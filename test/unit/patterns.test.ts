import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { compilePatterns } from "../../src/domain/patterns.js";

describe("compilePatterns: matching", () => {
  const cases: [patterns: string[], value: string, expected: boolean][] = [
    // the spec's example: include A.* and B.*, exclude C.*
    [["A.*", "B.*", "!C.*"], "A.Core", true],
    [["A.*", "B.*", "!C.*"], "B.Utils", true],
    [["A.*", "B.*", "!C.*"], "C.Core", false],
    [["A.*", "B.*", "!C.*"], "D.Core", false],
    [["A.*", "B.*", "!C.*"], "A", false],
    // empty list matches everything
    [[], "anything", true],
    [[], "", true],
    // only negations: everything not excluded
    [["!C.*"], "A.Core", true],
    [["!C.*"], "C.Core", false],
    [["!C.*", "!*.Test"], "A.Test", false],
    [["!*"], "x", false],
    // negation wins over a positive match
    [["A.*", "!A.Internal*"], "A.InternalTools", false],
    [["A.*", "!A.Internal*"], "A.Public", true],
    // literal patterns match whole values only
    [["jquery"], "jquery", true],
    [["jquery"], "jquery-ui", false],
    [["jquery"], "my-jquery", false],
    // case-insensitive
    [["newtonsoft.*"], "Newtonsoft.Json", true],
    [["NEWTONSOFT.JSON"], "newtonsoft.json", true],
    [["!system.*"], "System.Text", false],
    // * matches any run, including empty and characters like / and newlines
    [["*"], "", true],
    [["*"], "a/b", true],
    [["a*"], "a", true],
    [["*a"], "a", true],
    [["a*b"], "ab", true],
    [["a*b"], "a-x-b", true],
    [["a*b"], "a-x-b-c", false],
    [["a*b*c"], "abc", true],
    [["a*b*c"], "a1b2c", true],
    [["a*b*c"], "acb", false],
    [["*.json"], "file.json", true],
    [["a**b"], "ab", true],
    [["*x*"], "abcxdef", true],
    [["*x*"], "abcdef", false],
    [["a*a"], "a", false],
    [["ab*ba"], "aba", false],
    [["ab*ba"], "abba", true],
    [["*ab*ab*"], "xabyab", true],
    [["*ab*ab*"], "xaby", false],
    [["a\nb*"], "a\nbc", true],
    [["x*"], "x\ny", true],
    // regex metacharacters are literal
    [["a.b"], "axb", false],
    [["a.b"], "a.b", true],
    [["a+b"], "aab", false],
    [["a+b"], "a+b", true],
    [["(a|b)"], "a", false],
    [["(a|b)"], "(a|b)", true],
    [["[abc]"], "a", false],
    [["[abc]"], "[abc]", true],
    [["a?"], "ab", false],
    [["a?"], "a?", true],
    [["^a$"], "^a$", true],
    [["a\\d"], "a\\d", true],
    [["a\\d"], "a1", false],
    [["{1}"], "{1}", true],
    [["a-b"], "a-b", true],
    // patterns are trimmed
    [["  A.*  "], "A.Core", true],
    [["A.*\r"], "A.Core", true],
    // a leading ! after the first is literal
    [["!!a"], "!a", false],
    [["!!a"], "a", true],
  ];

  it.each(cases)("%j matches %j -> %s", (patterns, value, expected) => {
    expect(compilePatterns(patterns).matches(value)).toBe(expected);
  });

  it("keeps the trimmed patterns", () => {
    expect(compilePatterns([" A.* ", "!C.*"]).patterns).toEqual(["A.*", "!C.*"]);
  });

  it("stays fast on patterns that make a backtracking regex explode", () => {
    const list = compilePatterns(["*a*a*a*a*a*a*a*a*a*a*a*a*b"]);
    const started = performance.now();
    expect(list.matches("a".repeat(5000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });
});

describe("compilePatterns: invalid input", () => {
  const cases: [patterns: unknown[], options: { allowNegation?: boolean } | undefined, message: RegExp][] = [
    [[""], undefined, /must not be empty/],
    [["   "], undefined, /must not be empty/],
    [["A.*", ""], undefined, /must not be empty/],
    [["!"], undefined, /pattern '!' has nothing after '!'/],
    [[" ! "], undefined, /pattern '!'/],
    [["!C.*"], { allowNegation: false }, /pattern '!C\.\*' is a negation/],
    [["A.*", "!C.*"], { allowNegation: false }, /'!C\.\*'/],
    [[42], undefined, /must be strings/],
  ];

  it.each(cases)("%j (%j) -> %s", (patterns, options, message) => {
    const attempt = () => compilePatterns(patterns as string[], options);
    expect(attempt).toThrow(DomainError);
    expect(attempt).toThrow(message);
    try {
      attempt();
    } catch (error) {
      expect(error).toMatchObject({ kind: "invalid", code: "INVALID_PATTERN" });
    }
  });

  it("allows negations by default and when asked", () => {
    expect(compilePatterns(["!C.*"]).matches("C.x")).toBe(false);
    expect(compilePatterns(["!C.*"], { allowNegation: true }).matches("C.x")).toBe(false);
  });

  it("accepts positive patterns when negations are not allowed", () => {
    expect(compilePatterns(["A.*"], { allowNegation: false }).matches("a.b")).toBe(true);
  });
});
