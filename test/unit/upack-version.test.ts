import { describe, expect, it } from "vitest";
import { parsePackagePath, validateManifest } from "../../src/domain/upack-manifest.js";
import { parseDependency, parsePackageIdentification, parseRange } from "../../src/domain/upack-range.js";
import {
  canonicalVersion,
  compareVersions,
  formatVersion,
  latestVersion,
  MAX_VERSION_LENGTH,
  parseVersion,
  pickLatest,
  versionProblem,
  versionsEqual,
  type UpackVersion,
} from "../../src/domain/upack-version.js";

const v = (text: string): UpackVersion => {
  const version = parseVersion(text);
  if (!version) throw new Error(`test setup: ${text} should parse`);
  return version;
};

describe("parseVersion: accepted", () => {
  const cases: [text: string, major: bigint, minor: bigint, patch: bigint, prerelease?: string, build?: string][] = [
    ["1.0.0", 1n, 0n, 0n],
    ["0.0.0", 0n, 0n, 0n],
    ["1.2.3-alpha", 1n, 2n, 3n, "alpha"],
    ["1.2.3-alpha.1", 1n, 2n, 3n, "alpha.1"],
    ["1.2.3+build.5", 1n, 2n, 3n, undefined, "build.5"],
    ["1.2.3-rc.1+build.5", 1n, 2n, 3n, "rc.1", "build.5"],
    ["1.2.3-x-y-z", 1n, 2n, 3n, "x-y-z"],
    ["1.2.3+-", 1n, 2n, 3n, undefined, "-"],
    // hyphens and empty identifiers are allowed by the library's character class (unlike SemVer)
    ["1.0.0--5", 1n, 0n, 0n, "-5"],
    ["1.0.0-a..b", 1n, 0n, 0n, "a..b"],
    ["1.0.0-.a", 1n, 0n, 0n, ".a"],
    // leading zeros are accepted and read as numbers
    ["01.02.003", 1n, 2n, 3n],
    ["1.0.0-01", 1n, 0n, 0n, "01"],
    // arbitrary precision
    ["123456789012345678901234567890.0.1", 123456789012345678901234567890n, 0n, 1n],
    ["1.2.3-CI.20240102", 1n, 2n, 3n, "CI.20240102"],
  ];
  it.each(cases)("%s", (text, major, minor, patch, prerelease, build) => {
    const version = parseVersion(text);
    expect(version).toEqual({
      major,
      minor,
      patch,
      ...(prerelease === undefined ? {} : { prerelease }),
      ...(build === undefined ? {} : { build }),
    });
  });
});

describe("parseVersion: rejected", () => {
  const cases = [
    "",
    "1",
    "1.0",
    "1.0.0.0",
    "v1.0.0",
    " 1.0.0",
    "1.0.0 ",
    "1.0.0\n",
    "1.0.0-",
    "1.0.0+",
    "1.0.0-a+",
    "1.0.0-+b",
    "1.0.0-a_b",
    "1.0.0+a+b",
    "1.0.0-é",
    "-1.0.0",
    "1.a.0",
    "1..0",
    "1.0.0-rc 1",
    "*",
    "latest",
  ];
  it.each(cases)("%j", (text) => {
    expect(parseVersion(text)).toBeUndefined();
  });

  it("treats a non-string as invalid instead of throwing", () => {
    expect(parseVersion(undefined as unknown as string)).toBeUndefined();
    expect(parseVersion(100 as unknown as string)).toBeUndefined();
  });
});

describe("parseVersion: length limit", () => {
  // 128 characters: three 20-digit numbers and a 66-character prerelease and build.
  const longest = `${"9".repeat(20)}.${"8".repeat(20)}.${"7".repeat(20)}-ci.${"1".repeat(30)}+sha.${"a".repeat(27)}`;

  it("accepts a version of exactly MAX_VERSION_LENGTH characters, with numbers past 64 bits", () => {
    expect(MAX_VERSION_LENGTH).toBe(128);
    expect(longest).toHaveLength(MAX_VERSION_LENGTH);
    expect(parseVersion(longest)?.major).toBe(99999999999999999999n);
    expect(canonicalVersion(longest)).toBe(longest);
  });

  it.each([
    ["one character more", `${longest}a`],
    ["a 129-digit number", `${"1".repeat(125)}.0.0`],
    ["leading zeros that would print shorter", `${"0".repeat(124)}1.0.0`],
    ["a long prerelease", `1.0.0-${"a".repeat(200)}`],
  ])("refuses %s", (_label, text) => {
    expect(text.length).toBeGreaterThan(MAX_VERSION_LENGTH);
    expect(parseVersion(text)).toBeUndefined();
    expect(canonicalVersion(text)).toBeUndefined();
    expect(versionProblem(text)).toBe("is longer than 128 characters");
  });

  it("refuses a million digits at once, before any number is parsed", () => {
    const text = `1.0.${"7".repeat(1_000_000)}`;
    const started = performance.now();
    for (let i = 0; i < 100; i++) expect(parseVersion(text)).toBeUndefined();
    expect(performance.now() - started).toBeLessThan(100);
  });

  it("holds for every caller: manifests, paths, ranges, dependencies and identification strings", () => {
    const huge = `1.0.${"7".repeat(200)}`;
    expect(() => validateManifest({ name: "a", version: huge })).toThrow(
      `upack.json: 'version' '${huge.slice(0, 100)}...' is longer than 128 characters`,
    );
    expect(() => parsePackagePath(["a", huge], { versionExpected: true })).toThrow("is longer than 128 characters");
    expect(parseRange(huge)).toBeUndefined();
    expect(parseRange(`[1.0.0,${huge})`)).toBeUndefined();
    expect(parseDependency(`a:${huge}`)).toBeUndefined();
    expect(parsePackageIdentification(`a:${huge}`)).toBeUndefined();
  });

  it("explains a short invalid version as before", () => {
    expect(versionProblem("1.0")).toBe("is not a valid version");
  });
});

describe("formatVersion / canonicalVersion", () => {
  const cases: [text: string, canonical: string, withoutBuild: string][] = [
    ["1.0.0", "1.0.0", "1.0.0"],
    ["01.02.003", "1.2.3", "1.2.3"],
    ["0.0.0-00", "0.0.0-00", "0.0.0-00"],
    ["1.0.0-rc.1+b.2", "1.0.0-rc.1+b.2", "1.0.0-rc.1"],
    ["1.0.0+001", "1.0.0+001", "1.0.0"],
    [
      "000123456789012345678901234567890.0.1",
      "123456789012345678901234567890.0.1",
      "123456789012345678901234567890.0.1",
    ],
  ];
  it.each(cases)("%s prints as %s (U format %s)", (text, canonical, withoutBuild) => {
    expect(formatVersion(v(text))).toBe(canonical);
    expect(formatVersion(v(text), { includeBuild: true })).toBe(canonical);
    expect(formatVersion(v(text), { includeBuild: false })).toBe(withoutBuild);
    expect(canonicalVersion(text)).toBe(canonical);
    expect(parseVersion(canonical)).toEqual(parseVersion(text));
  });

  it("gives undefined for an invalid version", () => {
    expect(canonicalVersion("1.0")).toBeUndefined();
  });
});

describe("compareVersions: ordering", () => {
  // Ascending, every entry strictly above the previous one.
  const ascending = [
    "0.0.1",
    "1.0.0--5",
    "1.0.0-0",
    "1.0.0-1",
    "1.0.0-2",
    "1.0.0-10",
    "1.0.0-Beta", // ordinal: upper case sorts before lower case
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1+zzz", // build metadata only breaks ties after the prerelease
    "1.0.0-rc.1",
    "1.0.0-rc.2+aaa",
    "1.0.0+2", // any build sorts below no build
    "1.0.0+10", // both numeric: compared as numbers
    "1.0.0+9a", // else ordinal: "10" < "9a"
    "1.0.0+a",
    "1.0.0+b",
    "1.0.0",
    "1.0.1-rc.1",
    "1.0.1",
    "1.1.0",
    "1.10.0",
    "2.0.0",
    "10.0.0",
    "99999999999999999999.0.0",
    "100000000000000000000.0.0",
  ];

  it("sorts a shuffled list back into order", () => {
    const shuffled = [...ascending].reverse().sort((a, b) => (a.length % 3) - (b.length % 3));
    const sorted = shuffled
      .map(v)
      .sort(compareVersions)
      .map((version) => formatVersion(version));
    expect(sorted).toEqual(ascending);
  });

  it.each(ascending.slice(1).map((text, index) => [ascending[index] ?? "", text]))("%s < %s", (lower, higher) => {
    expect(compareVersions(v(lower), v(higher))).toBeLessThan(0);
    expect(compareVersions(v(higher), v(lower))).toBeGreaterThan(0);
    expect(versionsEqual(v(lower), v(higher))).toBe(false);
  });

  const equalCases: [a: string, b: string, equal: boolean][] = [
    ["1.0.0", "1.0.0", true],
    ["01.0.0", "1.0.0", true], // numbers, not text
    ["1.0.0-rc.1+b", "1.0.0-rc.1+b", true],
    // the library compares numeric identifiers as numbers but tests equality as text
    ["1.0.0-01", "1.0.0-1", false],
    ["1.0.0+01", "1.0.0+1", false],
  ];
  it.each(equalCases)("%s vs %s: compare 0, equal %s", (a, b, equal) => {
    expect(compareVersions(v(a), v(b))).toBe(0);
    expect(versionsEqual(v(a), v(b))).toBe(equal);
  });

  it("keeps build metadata distinct: 1.0.0 and 1.0.0+abc are different versions", () => {
    expect(versionsEqual(v("1.0.0"), v("1.0.0+abc"))).toBe(false);
    expect(compareVersions(v("1.0.0"), v("1.0.0+abc"))).toBeGreaterThan(0);
  });

  it("compares prerelease case-sensitively", () => {
    expect(versionsEqual(v("1.0.0-RC"), v("1.0.0-rc"))).toBe(false);
    expect(compareVersions(v("1.0.0-RC"), v("1.0.0-rc"))).toBeLessThan(0);
  });
});

describe("pickLatest / latestVersion", () => {
  const versions = (texts: string[]) => texts.map(v);
  const cases: [texts: string[], latest: string | undefined, latestStable: string | undefined][] = [
    [["1.0.0", "2.0.0-rc.1", "1.5.0"], "2.0.0-rc.1", "1.5.0"],
    [["1.0.0", "1.0.0+build"], "1.0.0", "1.0.0"],
    [["1.0.0+1", "1.0.0+2"], "1.0.0+2", "1.0.0+2"],
    [["1.0.0-a", "1.0.0-b"], "1.0.0-b", undefined],
    [["9.0.0", "10.0.0", "1.0.0"], "10.0.0", "10.0.0"],
    [[], undefined, undefined],
  ];
  it.each(cases)("%j: latest %s, latest stable %s", (texts, latest, latestStable) => {
    const found = latestVersion(versions(texts));
    expect(found && formatVersion(found)).toBe(latest);
    const stable = latestVersion(versions(texts), { stableOnly: true });
    expect(stable && formatVersion(stable)).toBe(latestStable);
  });

  it("returns the item, and the first of equal ones", () => {
    const items = [
      { id: "a", version: v("1.0.0-01") },
      { id: "b", version: v("1.0.0-1") },
      { id: "c", version: v("0.9.0") },
    ];
    expect(pickLatest(items, (item) => item.version)?.id).toBe("a");
    expect(pickLatest(items, (item) => item.version, { stableOnly: true })?.id).toBe("c");
  });
});
