import { describe, expect, it } from "vitest";
import {
  ANY_RANGE,
  clientSafeDependency,
  formatDependency,
  formatPackageIdentification,
  formatRange,
  groupProblem,
  isAnyRange,
  nameProblem,
  parseDependency,
  parsePackageIdentification,
  parseRange,
  rangeIncludes,
  upackCanParseDependency,
  type VersionRange,
} from "../../src/domain/upack-range.js";
import { formatVersion, parseVersion } from "../../src/domain/upack-version.js";

const SHA = "5b31a2c4d5e6f708192a3b4c5d6e7f8091a2b3c4";
const range = (text: string): VersionRange => {
  const parsed = parseRange(text);
  if (!parsed) throw new Error(`test setup: ${text} should parse`);
  return parsed;
};
const describeRange = (r: VersionRange) => ({
  lower: r.lower && formatVersion(r.lower),
  lowerExclusive: r.lowerExclusive,
  upper: r.upper && formatVersion(r.upper),
  upperExclusive: r.upperExclusive,
});

describe("groupProblem / nameProblem", () => {
  const groups: [group: string, valid: boolean][] = [
    ["", true],
    ["initrode/vendors/abl", true],
    ["a-b.c_d/E9", true],
    ["x".repeat(250), true],
    ["x".repeat(251), false],
    ["/a", false],
    ["a/", false],
    ["a//b", false],
    ["a b", false],
    ["a:b", false],
    ["a\\b", false],
    ["*", false],
  ];
  it.each(groups)("group %j valid: %s", (group, valid) => {
    expect(groupProblem(group) === undefined).toBe(valid);
  });

  const names: [name: string, valid: boolean][] = [
    ["HDARS", true],
    ["my-app.core_2", true],
    ["1.0", true],
    ["x".repeat(50), true],
    ["x".repeat(51), false],
    ["", false],
    ["a/b", false],
    ["a b", false],
    ["a:b", false],
    ["ünï", false],
  ];
  it.each(names)("name %j valid: %s", (name, valid) => {
    expect(nameProblem(name) === undefined).toBe(valid);
  });
});

describe("parseRange", () => {
  type Shape = ReturnType<typeof describeRange>;
  const any: Shape = { lower: undefined, lowerExclusive: false, upper: undefined, upperExclusive: false };
  const exact = (version: string): Shape => ({
    lower: version,
    lowerExclusive: false,
    upper: version,
    upperExclusive: false,
  });
  const cases: [text: string, expected: Shape][] = [
    ["*", any],
    [" * ", any],
    ["[,]", any],
    ["(,)", { ...any, lowerExclusive: true, upperExclusive: true }],
    ["1.0.0", exact("1.0.0")],
    [" 1.0.0-rc.1+b ", exact("1.0.0-rc.1+b")],
    ["[1.0.0,2.0.0)", { lower: "1.0.0", lowerExclusive: false, upper: "2.0.0", upperExclusive: true }],
    ["(1.0.0,2.0.0]", { lower: "1.0.0", lowerExclusive: true, upper: "2.0.0", upperExclusive: false }],
    ["[3.0.0,]", { lower: "3.0.0", lowerExclusive: false, upper: undefined, upperExclusive: false }],
    ["(,2.0.0)", { lower: undefined, lowerExclusive: true, upper: "2.0.0", upperExclusive: true }],
    ["[ ,2.0.0)", { lower: undefined, lowerExclusive: false, upper: "2.0.0", upperExclusive: true }],
    ["[2.0.0,1.0.0]", { lower: "2.0.0", lowerExclusive: false, upper: "1.0.0", upperExclusive: false }],
  ];
  it.each(cases)("%j", (text, expected) => {
    expect(describeRange(range(text))).toEqual(expected);
  });

  const invalid = [
    "",
    "  ",
    "1.0",
    "1",
    "[1.0,2.0)",
    "[1.0.0]",
    "[1.0.0, 2.0.0)",
    "[1.0.0 ,2.0.0)",
    "1.0.0,2.0.0",
    "[1.0.0,2.0.0",
    "1.0.0,2.0.0)",
    "{1.0.0,2.0.0}",
    "[1.0.0,2.0.0,3.0.0)",
    "[",
    "**",
    ">=1.0.0",
    "1.*",
    "latest",
  ];
  it.each(invalid)("rejects %j", (text) => {
    expect(parseRange(text)).toBeUndefined();
  });
});

describe("formatRange", () => {
  const cases: [text: string, formatted: string][] = [
    ["*", "*"],
    ["[,]", "*"],
    ["1.0.0", "1.0.0"],
    ["[1.0.0,1.0.0]", "1.0.0"],
    ["[1.0.0,1.0.0)", "[1.0.0,1.0.0)"],
    ["[1.0.0,2.0.0)", "[1.0.0,2.0.0)"],
    ["(1.0.0,]", "(1.0.0,]"],
    ["[,2.0.0]", "[,2.0.0]"],
    ["[01.0.0,2.0.0)", "[1.0.0,2.0.0)"],
    [" 1.0.0+b ", "1.0.0+b"],
  ];
  it.each(cases)("%j -> %j", (text, formatted) => {
    expect(formatRange(range(text))).toBe(formatted);
    expect(describeRange(range(formatted))).toEqual(describeRange(range(text)));
  });

  it("has ANY_RANGE print as *", () => {
    expect(formatRange(ANY_RANGE)).toBe("*");
    expect(isAnyRange(ANY_RANGE)).toBe(true);
    expect(isAnyRange(range("1.0.0"))).toBe(false);
  });
});

describe("rangeIncludes", () => {
  const cases: [range: string, version: string, included: boolean][] = [
    ["*", "0.0.1-alpha", true],
    ["1.0.0", "1.0.0", true],
    ["1.0.0", "1.0.1", false],
    ["1.0.0", "1.0.0+build", false], // build metadata is part of the version
    ["1.0.0-1", "1.0.0-01", true], // the library compares numerically
    ["[1.0.0,2.0.0)", "1.0.0", true],
    ["[1.0.0,2.0.0)", "1.5.0", true],
    ["[1.0.0,2.0.0)", "2.0.0", false],
    ["[1.0.0,2.0.0)", "2.0.0-rc.1", true], // no special prerelease rule: 2.0.0-rc.1 < 2.0.0
    ["[1.0.0,2.0.0)", "1.0.0-rc.1", false],
    ["(1.0.0,2.0.0]", "1.0.0", false],
    ["(1.0.0,2.0.0]", "2.0.0", true],
    ["(1.0.0,2.0.0]", "2.0.0+b", true], // 2.0.0+b < 2.0.0
    ["[3.0.0,]", "300.0.0", true],
    ["[3.0.0,]", "2.9.9", false],
    ["(,2.0.0)", "0.0.0", true],
    ["[2.0.0,1.0.0]", "1.5.0", false],
  ];
  it.each(cases)("%s includes %s: %s", (text, version, included) => {
    const parsed = parseVersion(version);
    if (!parsed) throw new Error("test setup");
    expect(rangeIncludes(range(text), parsed)).toBe(included);
  });
});

describe("parseDependency", () => {
  type Shape = { group: string; name: string; range: string; sha1?: string };
  const cases: [text: string, expected: Shape][] = [
    ["HDARS", { group: "", name: "HDARS", range: "*" }],
    ["initrode/vendors/abl/ABLast", { group: "initrode/vendors/abl", name: "ABLast", range: "*" }],
    ["group:name", { group: "group", name: "name", range: "*" }],
    ["a/b:name", { group: "a/b", name: "name", range: "*" }],
    ["name:1.0.0", { group: "", name: "name", range: "1.0.0" }],
    ["name:*", { group: "", name: "name", range: "*" }],
    ["group/name:1.2.3", { group: "group", name: "name", range: "1.2.3" }],
    ["group/name:[1.0.0,2.0.0)", { group: "group", name: "name", range: "[1.0.0,2.0.0)" }],
    ["group:name:1.2.3", { group: "group", name: "name", range: "1.2.3" }],
    ["group:name:*", { group: "group", name: "name", range: "*" }],
    ["g:n:[3.0.0,]", { group: "g", name: "n", range: "[3.0.0,]" }],
    ["g:n: 1.0.0 ", { group: "g", name: "n", range: "1.0.0" }],
    // the documentation's example
    [
      "initrode/vendors-common:ast-common:2.0.0",
      { group: "initrode/vendors-common", name: "ast-common", range: "2.0.0" },
    ],
    // the documented 4-part form, which Inedo.UPack itself cannot parse
    [`g:n:1.0.0:${SHA.toUpperCase()}`, { group: "g", name: "n", range: "1.0.0", sha1: SHA }],
    [`g:n:[1.0.0,2.0.0):${SHA}`, { group: "g", name: "n", range: "[1.0.0,2.0.0)", sha1: SHA }],
    // the identification form upack repack writes
    [`a/b/name:1.0.0-rc.1:${SHA}`, { group: "a/b", name: "name", range: "1.0.0-rc.1", sha1: SHA }],
    [`name:1.0.0:${SHA}`, { group: "", name: "name", range: "1.0.0", sha1: SHA }],
    // Inedo.UPack's reading: "1.0" is no range, so this is group "foo", name "1.0"
    ["foo:1.0", { group: "foo", name: "1.0", range: "*" }],
    [":name:1.0.0", { group: "", name: "name", range: "1.0.0" }],
    ["/name", { group: "", name: "name", range: "*" }],
  ];
  it.each(cases)("%j", (text, expected) => {
    const dependency = parseDependency(text);
    expect(dependency).toBeDefined();
    if (!dependency) return;
    const { group, name, sha1 } = dependency;
    expect({ group, name, range: formatRange(dependency.range), ...(sha1 ? { sha1 } : {}) }).toEqual(expected);
    expect(dependency.text).toBe(text);
  });

  const invalid = [
    "",
    "   ",
    "a:", // Inedo.UPack accepts an empty name; we do not
    "g/",
    "/g/name",
    "a//b/name",
    "g:n:1.0",
    "g:n:",
    "g:n:[1.0.0, 2.0.0)",
    "g:n:1.0.0:nothex",
    `g:n:1.0.0:${SHA.slice(1)}`,
    `g:n:1.0.0:${SHA}:extra`,
    `g:n:1.0:${SHA}`,
    "a:b:c:d:e",
    "na me",
    "g:na me:1.0.0",
    `${"x".repeat(51)}:1.0.0`,
    `${"g".repeat(251)}/name`,
  ];
  it.each(invalid)("rejects %j", (text) => {
    expect(parseDependency(text)).toBeUndefined();
  });
});

describe("formatDependency and what Inedo.UPack can parse", () => {
  const cases: [text: string, formatted: string, upackParsesOriginal: boolean][] = [
    ["HDARS", "HDARS", true],
    ["group:name", "group/name", true],
    ["group:name:*", "group/name", true],
    ["group:name:1.2.3", "group/name:1.2.3", true],
    ["a/b:name:[1.0.0,2.0.0)", "a/b/name:[1.0.0,2.0.0)", true],
    ["name:01.0.0", "name:1.0.0", true],
    ["g:n: (,2.0.0] ", "g/n:(,2.0.0]", true],
    ["foo:1.0", "foo/1.0", true],
    [`g:n:1.0.0:${SHA}`, "g/n:1.0.0", false],
    [`g/n:1.0.0:${SHA}`, "g/n:1.0.0", false],
  ];
  it.each(cases)("%j -> %j", (text, formatted, upackParsesOriginal) => {
    const dependency = parseDependency(text);
    if (!dependency) throw new Error("test setup");
    expect(formatDependency(dependency)).toBe(formatted);
    expect(upackCanParseDependency(text)).toBe(upackParsesOriginal);
    expect(clientSafeDependency(dependency)).toBe(upackParsesOriginal ? text : formatted);
    // whatever we hand to clients, they can parse, and it means the same
    expect(upackCanParseDependency(formatted)).toBe(true);
    const again = parseDependency(formatted);
    expect(again && { ...again, text: "", sha1: undefined }).toEqual({ ...dependency, text: "", sha1: undefined });
  });

  const upackModel: [text: string, parses: boolean][] = [
    ["a:", true], // empty name passes the library's id check
    ["/g/n", true], // so does a group starting with '/'
    ["a//b/n", false],
    ["", false],
    ["g:n:1.0", false],
    ["g:n:", false],
    ["g:n:1.0.0:x", false],
    ["na me", false],
  ];
  it.each(upackModel)("Inedo.UPack parses %j: %s", (text, parses) => {
    expect(upackCanParseDependency(text)).toBe(parses);
  });
});

describe("parsePackageIdentification", () => {
  type Shape = { group: string; name: string; version: string; sha1?: string };
  const cases: [text: string, expected: Shape | undefined][] = [
    ["HDARS:1.3.9", { group: "", name: "HDARS", version: "1.3.9" }],
    [
      `initrode/vendors/abl/ABLast:2.2.1-rc.1:${SHA}`,
      { group: "initrode/vendors/abl", name: "ABLast", version: "2.2.1-rc.1", sha1: SHA },
    ],
    ["inedox:AWS:3.1.0-CI.2", { group: "inedox", name: "AWS", version: "3.1.0-CI.2" }],
    [`g:n:1.0.0:${SHA.toUpperCase()}`, { group: "g", name: "n", version: "1.0.0", sha1: SHA }],
    ["g/n:01.0.0", { group: "g", name: "n", version: "1.0.0" }],
    ["a:1.0.0:1.0.0", { group: "a", name: "1.0.0", version: "1.0.0" }],
    ["name", undefined],
    ["name:*", undefined],
    ["g:n:[1.0.0,2.0.0)", undefined],
    ["a:b:c:1.0.0", undefined],
    [`g/n:1.0.0:nothex`, undefined],
    ["/g/n:1.0.0", undefined],
    ["g:1.0", undefined],
  ];
  it.each(cases)("%j", (text, expected) => {
    const id = parsePackageIdentification(text);
    if (!expected) return expect(id).toBeUndefined();
    expect(id && { ...id, version: formatVersion(id.version) }).toEqual(expected);
    if (id) expect(parsePackageIdentification(formatPackageIdentification(id))).toEqual(id);
  });

  it("formats as group/name:version[:sha1]", () => {
    const id = parsePackageIdentification(`inedox:AWS:3.1.0:${SHA}`);
    expect(id && formatPackageIdentification(id)).toBe(`inedox/AWS:3.1.0:${SHA}`);
    const bare = parsePackageIdentification("HDARS:1.3.9");
    expect(bare && formatPackageIdentification(bare)).toBe("HDARS:1.3.9");
  });
});
