import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { parsePackagePath } from "../../src/domain/upack-manifest.js";
import { formatVersion } from "../../src/domain/upack-version.js";

describe("parsePackagePath: with a version (no `latest`)", () => {
  const cases: [segments: string[], group: string, name: string, version: string][] = [
    [["name", "1.0.0"], "", "name", "1.0.0"],
    [["group", "name", "1.0.0"], "group", "name", "1.0.0"],
    [["a", "b", "c", "name", "1.0.0-rc.1+b"], "a/b/c", "name", "1.0.0-rc.1+b"],
    // the Go client encodes the group's slashes
    [["a%2Fb", "name", "1.0.0"], "a/b", "name", "1.0.0"],
    [["a%2fb%2Fc", "name", "1.0.0"], "a/b/c", "name", "1.0.0"],
    // one wildcard parameter holding the whole rest of the path
    [["a/b/name/1.0.0"], "a/b", "name", "1.0.0"],
    // a trailing slash is ignored
    [["group", "name", "1.0.0", ""], "group", "name", "1.0.0"],
    [["group/name/1.0.0/"], "group", "name", "1.0.0"],
    // case is kept; matching ignores it elsewhere
    [["Group", "Name", "1.0.0-RC"], "Group", "Name", "1.0.0-RC"],
    // leading zeros parse; the canonical text is what is looked up
    [["g", "n", "01.0.0"], "g", "n", "1.0.0"],
  ];
  it.each(cases)("%j", (segments, group, name, version) => {
    const path = parsePackagePath(segments, { versionExpected: true });
    expect(path.group).toBe(group);
    expect(path.name).toBe(name);
    expect(path.version && formatVersion(path.version)).toBe(version);
  });
});

describe("parsePackagePath: `latest` (no version)", () => {
  const cases: [segments: string[], group: string, name: string][] = [
    [["name"], "", "name"],
    [["group", "name"], "group", "name"],
    [["a", "b", "name"], "a/b", "name"],
    [["a%2Fb", "name"], "a/b", "name"],
    // the last segment is the name even when it looks like a version
    [["group", "1.0.0"], "group", "1.0.0"],
    [["name", ""], "", "name"],
  ];
  it.each(cases)("%j", (segments, group, name) => {
    const path = parsePackagePath(segments, { versionExpected: false });
    expect(path).toEqual({ group, name });
  });
});

describe("parsePackagePath: failures are 400s naming the problem", () => {
  const cases: [segments: string[], versionExpected: boolean, message: string][] = [
    [["name"], true, "the path names no version; give one or add the 'latest' query argument"],
    [[], true, "the path names no version; give one or add the 'latest' query argument"],
    [[""], false, "the path names no package"],
    [[], false, "the path names no package"],
    [["group", "name"], true, "version 'name' is not a valid version; give one or add 'latest'"],
    [["g", "n", "1.0"], true, "version '1.0' is not a valid version; give one or add 'latest'"],
    [["g", "bad name", "1.0.0"], true, "package name 'bad name' may only contain letters, digits, '-', '.' and '_'"],
    [["g", "", "1.0.0"], true, "package name '' must not be empty"],
    [["a", "", "b", "n", "1.0.0"], true, "group 'a//b' must not contain '//'"],
    [["a b", "n"], false, "group 'a b' may only contain letters, digits, '-', '.', '_' and '/'"],
    [["a%20b", "n"], false, "group 'a%20b' may only contain letters, digits, '-', '.', '_' and '/'"],
  ];
  it.each(cases)("%j (version expected: %s)", (segments, versionExpected, message) => {
    let caught: unknown;
    try {
      parsePackagePath(segments, { versionExpected });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(DomainError);
    expect((caught as DomainError).kind).toBe("invalid");
    expect((caught as DomainError).code).toBe("INVALID_PACKAGE_PATH");
    expect((caught as DomainError).message).toBe(message);
  });
});
