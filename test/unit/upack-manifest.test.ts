import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../../src/domain/json-depth.js";
import {
  manifestToJson,
  packageIdentity,
  parseDependencyList,
  samePackage,
  validateManifest,
  type UpackManifest,
} from "../../src/domain/upack-manifest.js";
import { formatDependency } from "../../src/domain/upack-range.js";
import { formatVersion, parseVersion } from "../../src/domain/upack-version.js";

const SHA = "ab60bf74fc8147ca41bd53bdb1defc3aae35bc91";
const base = { name: "my-app", version: "1.3.9" };

function expectInvalid(attempt: () => unknown, message: string): void {
  try {
    attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(DomainError);
    expect((error as DomainError).kind).toBe("invalid");
    expect((error as DomainError).code).toBe("INVALID_MANIFEST");
    expect((error as DomainError).message).toBe(message);
    return;
  }
  throw new Error(`expected '${message}'`);
}

describe("validateManifest: documented examples", () => {
  it("reads the full example manifest of the specification", () => {
    const json = {
      group: "initrode/vendors/abl",
      name: "ABLast",
      version: "2.2.1",
      title: "ast distribution files for ABL",
      icon: "package://ablast.svg",
      description: "This contains [ast distro](http://initrode-net.local/ast) files specific to ABL",
      dependencies: ["initrode/vendors-common:ast-common:2.0.0"],
      createdDate: "2017-11-09T04:03:01Z",
      createdReason: "ABLast v2.2.1 #18 (ID8843) ",
      createdUsing: "BuildMaster/5.6.11",
      createdBy: "THoven",
    };
    const manifest = validateManifest(json);
    expect(manifest.group).toBe("initrode/vendors/abl");
    expect(manifest.name).toBe("ABLast");
    expect(formatVersion(manifest.version)).toBe("2.2.1");
    expect(manifest.title).toBe("ast distribution files for ABL");
    expect(manifest.icon).toBe("package://ablast.svg");
    expect(manifest.createdBy).toBe("THoven");
    expect(manifest.dependencies.map(formatDependency)).toEqual(["initrode/vendors-common/ast-common:2.0.0"]);
    expect(manifest.isVirtual).toBe(false);
    expect(manifest.extra).toEqual({});
    expect(JSON.stringify(manifestToJson(manifest))).toBe(JSON.stringify(json));
  });

  it("keeps custom and repackage properties of the AWS extension manifest, in order", () => {
    const json = {
      group: "inedox",
      name: "AWS",
      version: "3.1.0",
      title: "Amazon AWS",
      description: "Contains a ProGet Package Store backed by Amazon S3.",
      icon: "https://inedo.com/den/logos/AWS.png",
      _inedoSdkVersion: "3.1.0",
      _inedoProducts: ["BuildMaster", "Otter", "ProGet"],
      repackageHistory: [{ id: "inedox:AWS:3.1.0-CI.2", using: "ProGet/24.0.17" }, "inedox/AWS:3.1.0-RC.2"],
      _nested: { a: [1, null, true] },
    };
    const manifest = validateManifest(json);
    expect(manifest.extra).toEqual({
      _inedoSdkVersion: "3.1.0",
      _inedoProducts: ["BuildMaster", "Otter", "ProGet"],
      _nested: { a: [1, null, true] },
    });
    expect(manifest.repackageHistory).toEqual(json.repackageHistory);
    expect(JSON.stringify(manifestToJson(manifest))).toBe(JSON.stringify(json));
  });

  it("reads what upack pack writes (space-separated createdDate)", () => {
    const manifest = validateManifest({
      ...base,
      createdDate: "2024-01-02 03:04:05Z",
      createdUsing: "upack/3.0.0",
      createdBy: "builder",
    });
    expect(manifest.createdDate).toBe("2024-01-02 03:04:05Z");
  });
});

describe("validateManifest: lenient forms", () => {
  it.each([undefined, null, ""])("group %j is the empty group", (group) => {
    const manifest = validateManifest({ ...base, group });
    expect(manifest.group).toBe("");
    expect(manifestToJson(manifest)).not.toHaveProperty("group");
  });

  it("reads a single tag string as a list", () => {
    expect(validateManifest({ ...base, tags: "web" }).tags).toEqual(["web"]);
    expect(manifestToJson(validateManifest({ ...base, tags: "web" })).tags).toEqual(["web"]);
  });

  it("reads a dependency string, splitting on commas outside ranges", () => {
    const manifest = validateManifest({ ...base, dependencies: "a, g:n:[1.0.0,2.0.0)" });
    expect(manifest.dependencies.map(formatDependency)).toEqual(["a", "g/n:[1.0.0,2.0.0)"]);
  });

  it("treats null optional properties as absent", () => {
    const manifest = validateManifest({ ...base, title: null, tags: null, dependencies: null, repackageHistory: null });
    expect(manifest.title).toBeUndefined();
    expect(manifest.tags).toEqual([]);
    expect(manifest.repackageHistory).toBeUndefined();
  });

  it("accepts leading zeros but writes the canonical version", () => {
    const manifest = validateManifest({ ...base, version: "01.02.03-rc.1" });
    expect(manifestToJson(manifest).version).toBe("1.2.3-rc.1");
  });

  it("marks a manifest with contents or metaContents as virtual and keeps them verbatim", () => {
    const contents = ["HDARS.Web:1.3.9"];
    const manifest = validateManifest({ ...base, contents });
    expect(manifest.isVirtual).toBe(true);
    expect(manifestToJson(manifest).contents).toEqual(contents);
    expect(validateManifest({ ...base, metaContents: [] }).isVirtual).toBe(true);
  });

  it("accepts the longest values the rules allow", () => {
    const manifest = validateManifest({
      group: `${"g".repeat(124)}/${"g".repeat(125)}`,
      name: "n".repeat(50),
      version: "1.0.0",
      title: "t".repeat(50),
      shortDescription: "s".repeat(1000),
      tags: ["t".repeat(50), "_x", "a.b-c"],
    });
    expect(manifest.tags).toHaveLength(3);
  });
});

describe("validateManifest: errors name the field", () => {
  const long = (n: number) => "x".repeat(n);
  const cases: [json: unknown, message: string][] = [
    [null, "upack.json: the manifest must be a JSON object"],
    [[], "upack.json: the manifest must be a JSON object"],
    ["{}", "upack.json: the manifest must be a JSON object"],
    [{}, "upack.json: 'name' is required"],
    [{ name: "" }, "upack.json: 'name' is required"],
    [{ name: "a" }, "upack.json: 'version' is required"],
    [{ name: "a", version: "1.0" }, "upack.json: 'version' '1.0' is not a valid version"],
    [{ name: "a", version: 1 }, "upack.json: 'version' must be a string"],
    [{ name: 5, version: "1.0.0" }, "upack.json: 'name' must be a string"],
    [{ ...base, name: "a b" }, "upack.json: 'name' 'a b' may only contain letters, digits, '-', '.' and '_'"],
    [{ ...base, name: "a/b" }, "upack.json: 'name' 'a/b' may only contain letters, digits, '-', '.' and '_'"],
    [{ ...base, name: long(51) }, `upack.json: 'name' '${long(51)}' must be at most 50 characters`],
    [{ ...base, group: "/a" }, "upack.json: 'group' '/a' must not start or end with '/'"],
    [{ ...base, group: "a/" }, "upack.json: 'group' 'a/' must not start or end with '/'"],
    [{ ...base, group: "a//b" }, "upack.json: 'group' 'a//b' must not contain '//'"],
    [{ ...base, group: "a b" }, "upack.json: 'group' 'a b' may only contain letters, digits, '-', '.', '_' and '/'"],
    [{ ...base, group: long(251) }, `upack.json: 'group' '${long(100)}...' must be at most 250 characters`],
    [{ ...base, title: long(51) }, `upack.json: 'title' '${long(51)}' must be at most 50 characters`],
    [{ ...base, title: 5 }, "upack.json: 'title' must be a string"],
    [
      { ...base, shortDescription: long(1001) },
      `upack.json: 'shortDescription' '${long(100)}...' must be at most 1000 characters`,
    ],
    [
      { ...base, icon: "icon.png" },
      "upack.json: 'icon' 'icon.png' must be an absolute http(s) URL or a package:// path",
    ],
    [
      { ...base, icon: "javascript:alert(1)" },
      "upack.json: 'icon' 'javascript:alert(1)' must be an absolute http(s) URL or a package:// path",
    ],
    [
      { ...base, icon: "package://" },
      "upack.json: 'icon' 'package://' must be an absolute http(s) URL or a package:// path",
    ],
    [
      { ...base, icon: "package://../x.png" },
      "upack.json: 'icon' 'package://../x.png' must be an absolute http(s) URL or a package:// path",
    ],
    [
      { ...base, projectUrl: "ftp://x.org/" },
      "upack.json: 'projectUrl' 'ftp://x.org/' must be an absolute http(s) URL",
    ],
    [{ ...base, projectUrl: "example.com" }, "upack.json: 'projectUrl' 'example.com' must be an absolute http(s) URL"],
    [{ ...base, description: ["x"] }, "upack.json: 'description' must be a string"],
    [{ ...base, createdBy: 5 }, "upack.json: 'createdBy' must be a string"],
    [{ ...base, tags: 5 }, "upack.json: 'tags' must be an array of strings"],
    [{ ...base, tags: [1] }, "upack.json: 'tags' entries must be strings"],
    ...["1abc", "", "a b", long(51)].map((tag): [unknown, string] => [
      { ...base, tags: [tag] },
      `upack.json: 'tags' entry '${tag}' must be 1 to 50 letters, digits, '-', '.' or '_', not starting with a digit`,
    ]),
    [{ ...base, tags: ["Web", "web"] }, "upack.json: 'tags' entry 'web' is repeated"],
    [{ ...base, dependencies: ["g:n:1.0"] }, "upack.json: 'dependencies' entry 'g:n:1.0' is not a valid dependency"],
    [{ ...base, dependencies: [""] }, "upack.json: 'dependencies' entry '' is not a valid dependency"],
    [{ ...base, dependencies: 5 }, "upack.json: 'dependencies' must be an array or a comma-separated string"],
    [{ ...base, dependencies: [5] }, "upack.json: 'dependencies' entries must be strings"],
    [{ ...base, repackageHistory: "x" }, "upack.json: 'repackageHistory' must be an array"],
    ...[[{}], [5], [""], [{ id: 1 }]].map((history): [unknown, string] => [
      { ...base, repackageHistory: history },
      "upack.json: 'repackageHistory' entries must be identification strings or objects with an 'id'",
    ]),
  ];
  it.each(cases)("%j", (json, message) => {
    expectInvalid(() => validateManifest(json), message);
  });

  it("uses the label it is given", () => {
    expectInvalid(() => validateManifest({}, { label: ".vpack" }), ".vpack: 'name' is required");
  });
});

describe("nesting depth", () => {
  /** `depth` arrays inside each other, built without recursion; 0 is the innermost value itself. */
  const nested = (depth: number, inner: unknown = 1): unknown => {
    let value = inner;
    for (let i = 0; i < depth; i++) value = [value];
    return value;
  };

  it("counts arrays and objects alike, the value itself as level 1", () => {
    expect(MAX_JSON_DEPTH).toBe(64);
    expect(exceedsJsonDepth("text", 0)).toBe(false);
    expect(exceedsJsonDepth(null, 0)).toBe(false);
    expect(exceedsJsonDepth([], 0)).toBe(true);
    expect(exceedsJsonDepth([], 1)).toBe(false);
    expect(exceedsJsonDepth({ a: [{ b: [] }] }, 4)).toBe(false);
    expect(exceedsJsonDepth({ a: [{ b: [] }] }, 3)).toBe(true);
    expect(exceedsJsonDepth(nested(64))).toBe(false);
    expect(exceedsJsonDepth(nested(65))).toBe(true);
    // The deep branch is found behind wide shallow ones.
    expect(exceedsJsonDepth({ wide: Array.from({ length: 1000 }, (_, i) => ({ i })), deep: nested(65) })).toBe(true);
  });

  it("walks any depth without overflowing the stack, and a cycle ends too", () => {
    const deep = JSON.parse(`${"[".repeat(200_000)}${"]".repeat(200_000)}`) as unknown;
    expect(exceedsJsonDepth(deep)).toBe(true);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(exceedsJsonDepth(cycle)).toBe(true);
  });

  it("validateManifest refuses a property nested more than 64 levels, naming it, before anything else", () => {
    expect(validateManifest({ ...base, _x: nested(64) }).extra._x).toEqual(nested(64));
    expectInvalid(
      () => validateManifest({ ...base, _x: nested(65) }),
      "upack.json: '_x' is nested more than 64 levels deep",
    );
    const text = `{"name":"deep","version":"1.0","repackageHistory":${"[".repeat(100_000)}${"]".repeat(100_000)}}`;
    expectInvalid(
      () => validateManifest(JSON.parse(text), { label: "package metadata" }),
      "package metadata: 'repackageHistory' is nested more than 64 levels deep",
    );
  });
});

describe("manifestToJson", () => {
  it("echoes dependencies clients can parse and rewrites the others", () => {
    const manifest = validateManifest({
      ...base,
      dependencies: ["g:n:1.0.0", `g:n:1.0.0:${SHA}`, "a/b/c:[1.0.0,]", `x/y:2.0.0:${SHA}`],
    });
    expect(manifestToJson(manifest).dependencies).toEqual(["g:n:1.0.0", "g/n:1.0.0", "a/b/c:[1.0.0,]", "x/y:2.0.0"]);
  });

  it("keeps a __proto__ property as data", () => {
    const json: unknown = JSON.parse('{"name":"a","version":"1.0.0","__proto__":{"polluted":true}}');
    const out = manifestToJson(validateManifest(json));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(JSON.stringify(out)).toBe('{"name":"a","version":"1.0.0","__proto__":{"polluted":true}}');
  });

  it("uses the specification's order for a manifest built in code, extras last", () => {
    const version = parseVersion("2.0.0");
    if (!version) throw new Error("test setup");
    const manifest: UpackManifest = {
      group: "g",
      name: "n",
      version,
      title: "T",
      tags: ["x"],
      dependencies: [],
      createdBy: "me",
      isVirtual: false,
      extra: { _custom: 1 },
    };
    expect(Object.keys(manifestToJson(manifest))).toEqual([
      "group",
      "name",
      "version",
      "title",
      "createdBy",
      "tags",
      "_custom",
    ]);
  });
});

describe("parseDependencyList (upload parameter)", () => {
  const cases: [input: unknown, expected: string[]][] = [
    [undefined, []],
    [null, []],
    ["", []],
    [" , ", []],
    ["a", ["a"]],
    ["a,b", ["a", "b"]],
    ["a, g:n:[1.0.0,2.0.0), x/y:(,1.0.0]", ["a", "g/n:[1.0.0,2.0.0)", "x/y:(,1.0.0]"]],
    ["a,,b", ["a", "b"]],
    [
      ["a", " g:n:1.0.0 "],
      ["a", "g/n:1.0.0"],
    ],
    [[], []],
  ];
  it.each(cases)("%j", (input, expected) => {
    expect(parseDependencyList(input).map(formatDependency)).toEqual(expected);
  });

  const errors: [input: unknown, message: string][] = [
    [5, "'dependencies' must be an array or a comma-separated string"],
    [{}, "'dependencies' must be an array or a comma-separated string"],
    [[5], "'dependencies' entries must be strings"],
    ["a, (,1.0.0]", "'dependencies' entry ' (,1.0.0]' is not a valid dependency"],
    [[""], "'dependencies' entry '' is not a valid dependency"],
    ["a:b:c:d:e", "'dependencies' entry 'a:b:c:d:e' is not a valid dependency"],
  ];
  it.each(errors)("%j fails", (input, message) => {
    expectInvalid(() => parseDependencyList(input), message);
  });
});

describe("packageIdentity / samePackage", () => {
  const cases: [a: [string | null | undefined, string], b: [string | null | undefined, string], same: boolean][] = [
    [["Group", "Name"], ["group", "NAME"], true],
    [[null, "a"], ["", "A"], true],
    [[undefined, "a"], [null, "a"], true],
    [["a/B", "c"], ["A/b", "C"], true],
    [["a", "b"], ["", "a/b"], false],
    [["a", "b"], ["a", "c"], false],
    [["a", "b"], ["b", "b"], false],
  ];
  it.each(cases)("%j vs %j: %s", ([groupA, nameA], [groupB, nameB], same) => {
    expect(packageIdentity(groupA, nameA) === packageIdentity(groupB, nameB)).toBe(same);
    expect(samePackage({ group: groupA, name: nameA }, { group: groupB, name: nameB })).toBe(same);
  });
});
