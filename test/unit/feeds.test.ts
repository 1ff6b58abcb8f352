import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import {
  canChangeFeedType,
  FEED_TYPES,
  type FeedType,
  normalizeFeedType,
  validateFeedName,
} from "../../src/domain/feeds.js";

function caught(action: () => unknown): DomainError {
  try {
    action();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected a DomainError");
}

describe("validateFeedName", () => {
  it.each(["a", "MyFeed", "nuget-approved", "feed_1.2~x", "A".repeat(100), "...", ".a", "a.."])(
    "accepts %j",
    (name) => {
      expect(validateFeedName(name)).toBe(name);
    },
  );

  it.each([undefined, null, "", "   "])("%j -> feed name is required", (name) => {
    const error = caught(() => validateFeedName(name));
    expect(error).toMatchObject({ kind: "invalid", code: "FEED_NAME_REQUIRED", message: "feed name is required" });
  });

  const bad: [unknown, RegExp][] = [
    [42, /must be a string/],
    [{ name: "x" }, /must be a string/],
    ["A".repeat(101), /at most 100 characters/],
    [".", /cannot be '\.'/],
    ["..", /cannot be '\.\.'/],
    ["my feed", /'my feed' may contain only letters, digits/],
    ["a/b", /'a\/b' may contain only/],
    ["a%20b", /may contain only/],
    ["a?b", /may contain only/],
    ["a#b", /may contain only/],
    ["a+b", /may contain only/],
    ["a:b", /may contain only/],
    ["a@b", /may contain only/],
    ["a\\b", /may contain only/],
    ["föö", /may contain only/],
    [" feed", /may contain only/],
    ["feed\n", /may contain only/],
  ];
  it.each(bad)("%j -> invalid %s", (name, message) => {
    const error = caught(() => validateFeedName(name));
    expect(error.kind).toBe("invalid");
    expect(error.code).toBe("INVALID_FEED_NAME");
    expect(error.message).toMatch(message);
  });
});

describe("normalizeFeedType", () => {
  it("knows the 24 type names of docs/compat.md 5.2", () => {
    expect(FEED_TYPES).toHaveLength(24);
    expect(new Set(FEED_TYPES).size).toBe(24);
    for (const type of FEED_TYPES) expect(normalizeFeedType(type)).toBe(type);
  });

  const accepted: [string, FeedType][] = [
    ["NuGet", "nuget"],
    ["Universal", "universal"],
    ["UNIVERSAL", "universal"],
    ["ProGet", "universal"],
    ["proget", "universal"],
    ["RubyGems", "rubygems"],
    ["PyPI", "pypi"],
    ["Chocolatey", "chocolatey"],
    [" npm ", "npm"],
  ];
  it.each(accepted)("%j -> %j", (input, expected) => {
    expect(normalizeFeedType(input)).toBe(expected);
  });

  it.each([undefined, null, "", "  ", 7, ["nuget"], "nugget", "upack", "docker2"])(
    "%j -> invalid with the phrase clients look for",
    (input) => {
      const error = caught(() => normalizeFeedType(input));
      expect(error).toMatchObject({ kind: "invalid", code: "INVALID_FEED_TYPE" });
      expect(error.message).toContain("a valid feed type is required");
    },
  );

  it("names the unknown type, shortened when long", () => {
    expect(caught(() => normalizeFeedType("nugget")).message).toContain("'nugget'");
    const long = caught(() => normalizeFeedType("x".repeat(500))).message;
    expect(long.length).toBeLessThan(150);
  });
});

describe("canChangeFeedType", () => {
  const cases: [FeedType, FeedType, boolean][] = [
    ["universal", "universal", true],
    ["npm", "npm", true],
    ["universal", "romp", true],
    ["romp", "universal", true],
    ["nuget", "chocolatey", true],
    ["chocolatey", "powershell", true],
    ["powershell", "nuget", true],
    ["universal", "nuget", false],
    ["nuget", "npm", false],
    ["romp", "chocolatey", false],
    ["asset", "universal", false],
    ["docker", "helm", false],
  ];
  it.each(cases)("%s -> %s: %s", (from, to, expected) => {
    expect(canChangeFeedType(from, to)).toBe(expected);
  });
});
