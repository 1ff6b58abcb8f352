import { describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { validateManifest } from "../../src/domain/upack-manifest.js";
import { formatVersion } from "../../src/domain/upack-version.js";
import {
  assembledManifestJson,
  parseVirtualManifest,
  type VirtualContentItem,
  type VirtualSource,
} from "../../src/domain/vpack.js";

const SHA = "ab60bf74fc8147ca41bd53bdb1defc3aae35bc91";
const base = { name: "Combined", version: "1.0.0" };

// Versions are bigints; compare items through their printed form.
function show(items: readonly VirtualContentItem[]): unknown[] {
  return items.map((item) => ({ ...item, source: showSource(item.source) }));
}
function showSource(source: VirtualSource): unknown {
  return source.kind === "package" ? { ...source, version: formatVersion(source.version) } : source;
}
const pkg = (name: string, version: string, extra: Record<string, string> = {}) => ({
  kind: "package",
  group: "",
  name,
  version,
  packagePath: "package",
  ...extra,
});

function expectInvalid(attempt: () => unknown, message: string): void {
  let caught: unknown;
  try {
    attempt();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(DomainError);
  expect((caught as DomainError).kind).toBe("invalid");
  expect((caught as DomainError).code).toBe("INVALID_MANIFEST");
  expect((caught as DomainError).message).toBe(message);
}

describe("parseVirtualManifest: documented examples", () => {
  it("bundles two packages given as identification strings (plain JSON .vpack)", () => {
    const text = `{
      "name": "HDARS.Combined",
      "version": "1.3.9",
      "contents": [ "HDARS.Web:1.3.9", "HDARS.API:1.3.9"  ]
    }`;
    const manifest = parseVirtualManifest(text);
    expect(manifest.name).toBe("HDARS.Combined");
    expect(manifest.isVirtual).toBe(true);
    expect(show(manifest.contents)).toEqual([
      { type: "virtualDirectory", virtualPath: "", source: pkg("HDARS.Web", "1.3.9") },
      { type: "virtualDirectory", virtualPath: "", source: pkg("HDARS.API", "1.3.9") },
    ]);
    expect(manifest.metaContents).toEqual([]);
    expect(assembledManifestJson(manifest)).toEqual({ name: "HDARS.Combined", version: "1.3.9" });
  });

  it("places packages under targetPath", () => {
    const manifest = parseVirtualManifest({
      name: "ErpProduct.Initech",
      version: "2.2.1",
      contents: [
        "ErpProduct.Core:2.2.1",
        { source: "Plugins.Initech:2.0.1", targetPath: "custom/plugin" },
        { source: "Plugins.SalesPipeline:2.1.0", targetPath: "/custom/plugin/" },
      ],
    });
    expect(show(manifest.contents)).toEqual([
      { type: "virtualDirectory", virtualPath: "", source: pkg("ErpProduct.Core", "2.2.1") },
      { type: "virtualDirectory", virtualPath: "custom/plugin", source: pkg("Plugins.Initech", "2.0.1") },
      { type: "virtualDirectory", virtualPath: "custom/plugin", source: pkg("Plugins.SalesPipeline", "2.1.0") },
    ]);
  });

  it("reads package, URL and asset sources", () => {
    const manifest = parseVirtualManifest({
      group: "initrode/vendors/abl",
      name: "ABLast.AstDist",
      version: "2.2.1",
      contents: [
        { virtualPath: "vendors/common/ast", source: `initrode/vendors/abl/ABlast:2.2.1:${SHA}` },
        { virtualPath: "common/logo/logo.png", source: { url: "http://proget/endpoints/assets/content/logo.png" } },
        { virtualPath: "common/logo/logo.png", source: { feed: "customer-assets", asset: "logos/ast-logo.png" } },
      ],
    });
    expect(show(manifest.contents)).toEqual([
      {
        type: "virtualDirectory",
        virtualPath: "vendors/common/ast",
        source: { ...pkg("ABlast", "2.2.1", { sha1: SHA }), group: "initrode/vendors/abl" },
      },
      {
        type: "virtualDirectory",
        virtualPath: "common/logo/logo.png",
        source: { kind: "url", url: "http://proget/endpoints/assets/content/logo.png" },
      },
      {
        type: "virtualDirectory",
        virtualPath: "common/logo/logo.png",
        source: { kind: "asset", feed: "customer-assets", asset: "logos/ast-logo.png" },
      },
    ]);
  });
});

describe("parseVirtualManifest: entry forms", () => {
  const cases: [item: unknown, expected: unknown][] = [
    [
      `g:n:1.0.0:${SHA.toUpperCase()}`,
      { type: "virtualDirectory", virtualPath: "", source: { ...pkg("n", "1.0.0", { sha1: SHA }), group: "g" } },
    ],
    [
      "https://example.org/big.iso",
      { type: "virtualDirectory", virtualPath: "", source: { kind: "url", url: "https://example.org/big.iso" } },
    ],
    [
      {
        type: "virtualFile",
        virtualPath: "bin/tool.exe",
        source: { url: "https://x.org/t.exe", hash: SHA.toUpperCase() },
      },
      {
        type: "virtualFile",
        virtualPath: "bin/tool.exe",
        source: { kind: "url", url: "https://x.org/t.exe", sha1: SHA },
      },
    ],
    [
      { type: "VIRTUALFILE", virtualPath: "a.txt", source: "https://x.org/a.txt" },
      { type: "virtualFile", virtualPath: "a.txt", source: { kind: "url", url: "https://x.org/a.txt" } },
    ],
    [
      { source: { group: "g/h", name: "n", version: "01.0.0", hash: SHA, packagePath: "/package/sub/" } },
      {
        type: "virtualDirectory",
        virtualPath: "",
        source: { ...pkg("n", "1.0.0", { sha1: SHA }), group: "g/h", packagePath: "package/sub" },
      },
    ],
    [
      { virtualPath: "/", source: { name: "n", version: "1.0.0", packagePath: "" } },
      { type: "virtualDirectory", virtualPath: "", source: { ...pkg("n", "1.0.0"), packagePath: "" } },
    ],
    [
      {
        virtualPath: null,
        targetPath: "x",
        source: { name: "n", version: "1.0.0", group: null, hash: null, packagePath: null },
      },
      { type: "virtualDirectory", virtualPath: "x", source: pkg("n", "1.0.0") },
    ],
    [
      { virtualPath: "same", targetPath: "/same/", source: "n:1.0.0" },
      { type: "virtualDirectory", virtualPath: "same", source: pkg("n", "1.0.0") },
    ],
  ];
  it.each(cases)("%j", (item, expected) => {
    const manifest = parseVirtualManifest({ ...base, contents: [item] });
    expect(show(manifest.contents)).toEqual([expected]);
  });

  it("reads metaContents into the archive root", () => {
    const manifest = parseVirtualManifest({
      ...base,
      contents: ["n:1.0.0"],
      metaContents: [
        { type: "virtualFile", virtualPath: "install.ps1", source: { url: "https://x.org/i.ps1" } },
        "docs:1.0.0",
      ],
    });
    expect(show(manifest.metaContents)).toEqual([
      { type: "virtualFile", virtualPath: "install.ps1", source: { kind: "url", url: "https://x.org/i.ps1" } },
      { type: "virtualDirectory", virtualPath: "", source: pkg("docs", "1.0.0") },
    ]);
  });
});

describe("parseVirtualManifest: input forms", () => {
  const json = JSON.stringify({ ...base, contents: ["n:1.0.0"] });
  it.each([
    ["text", json],
    ["text with a BOM", `\uFEFF${json}`],
    ["UTF-8 bytes with a BOM", new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode(json)])],
    ["the upack.json object from a ZIP", JSON.parse(json) as unknown],
  ])("%s", (_, input) => {
    expect(parseVirtualManifest(input).contents).toHaveLength(1);
  });

  it("keeps the manifest's other properties and drops contents when assembling", () => {
    const manifest = parseVirtualManifest({
      _before: 1,
      ...base,
      contents: ["n:1.0.0"],
      title: "T",
      metaContents: [],
      _after: [2],
    });
    expect(manifest.title).toBe("T");
    expect(JSON.stringify(assembledManifestJson(manifest))).toBe(
      JSON.stringify({ _before: 1, ...base, title: "T", _after: [2] }),
    );
  });

  it("refuses a property nested more than 64 levels deep, in text as in an object (no stack overflow)", () => {
    const deep = `${"[".repeat(100_000)}${"]".repeat(100_000)}`;
    const text = `{"name":"deepv","version":"1.0.0","contents":["a:1.0.0"],"_x":${deep}}`;
    expect(() => parseVirtualManifest(text)).toThrow(".vpack: '_x' is nested more than 64 levels deep");
    expect(() => parseVirtualManifest({ ...base, contents: JSON.parse(deep) as unknown })).toThrow(
      "upack.json: 'contents' is nested more than 64 levels deep",
    );
  });

  it("is what validateManifest flags as virtual", () => {
    expect(validateManifest({ ...base, contents: ["n:1.0.0"] }).isVirtual).toBe(true);
  });
});

describe("parseVirtualManifest: errors name the field", () => {
  const entry = (item: unknown) => ({ ...base, contents: [item] });
  const cases: [input: unknown, message: string][] = [
    ["{", ".vpack: the manifest is not valid JSON"],
    ["[]", ".vpack: the manifest must be a JSON object"],
    ['{"version":"1.0.0","contents":["n:1.0.0"]}', ".vpack: 'name' is required"],
    [{ name: "a", version: "1.0", contents: [] }, "upack.json: 'version' '1.0' is not a valid version"],
    [base, "upack.json: 'contents' is required in a virtual package"],
    [{ ...base, contents: null }, "upack.json: 'contents' is required in a virtual package"],
    [{ ...base, contents: [] }, "upack.json: 'contents' must have at least one entry"],
    [{ ...base, contents: "n:1.0.0" }, "upack.json: 'contents' must be an array"],
    [{ ...base, contents: ["n:1.0.0"], metaContents: {} }, "upack.json: 'metaContents' must be an array"],
    [entry(5), "upack.json: 'contents[0]' must be a string or an object"],
    [entry("n"), "upack.json: 'contents[0]' 'n' is neither a package identification string nor an http(s) URL"],
    [
      entry("n:[1.0.0,2.0.0)"),
      "upack.json: 'contents[0]' 'n:[1.0.0,2.0.0)' is neither a package identification string nor an http(s) URL",
    ],
    [
      entry("ftp://x.org/a"),
      "upack.json: 'contents[0]' 'ftp://x.org/a' is neither a package identification string nor an http(s) URL",
    ],
    [entry({}), "upack.json: 'contents[0].source' is required"],
    [entry({ source: 5 }), "upack.json: 'contents[0].source' must be a string or an object"],
    [
      entry({ type: "folder", source: "n:1.0.0" }),
      "upack.json: 'contents[0].type' must be 'virtualDirectory' or 'virtualFile'",
    ],
    [
      entry({ type: null, source: "n:1.0.0" }),
      "upack.json: 'contents[0].type' must be 'virtualDirectory' or 'virtualFile'",
    ],
    [
      entry({ type: "", source: "n:1.0.0" }),
      "upack.json: 'contents[0].type' must be 'virtualDirectory' or 'virtualFile'",
    ],
    [
      entry({ type: "virtualFile", source: "n:1.0.0" }),
      "upack.json: 'contents[0].virtualPath' is required for a virtualFile",
    ],
    ...["../x", "a/../b", "a\\b", "a//b", "./a", "a\u0000b"].map((path): [unknown, string] => [
      entry({ virtualPath: path, source: "n:1.0.0" }),
      `upack.json: 'contents[0].virtualPath' '${path}' must be a relative path without '.', '..', '//' or '\\'`,
    ]),
    [entry({ virtualPath: 5, source: "n:1.0.0" }), "upack.json: 'contents[0].virtualPath' must be a string"],
    [
      entry({ virtualPath: "a", targetPath: "b", source: "n:1.0.0" }),
      "upack.json: 'contents[0].virtualPath' and 'contents[0].targetPath' disagree",
    ],
    [entry({ source: { version: "1.0.0" } }), "upack.json: 'contents[0].source.name' is required"],
    [entry({ source: { name: "n" } }), "upack.json: 'contents[0].source.version' is required"],
    [
      entry({ source: { name: "n", version: "1.0" } }),
      "upack.json: 'contents[0].source.version' '1.0' is not a valid version",
    ],
    [
      entry({ source: { name: "a b", version: "1.0.0" } }),
      "upack.json: 'contents[0].source.name' 'a b' may only contain letters, digits, '-', '.' and '_'",
    ],
    [
      entry({ source: { group: "/g", name: "n", version: "1.0.0" } }),
      "upack.json: 'contents[0].source.group' '/g' must not start or end with '/'",
    ],
    [entry({ source: { name: "n", version: 1 } }), "upack.json: 'contents[0].source.version' must be a string"],
    [
      entry({ source: { name: "n", version: "1.0.0", hash: "abc" } }),
      "upack.json: 'contents[0].source.hash' must be a SHA-1 hash (40 hexadecimal digits)",
    ],
    [
      entry({ source: { name: "n", version: "1.0.0", packagePath: "../x" } }),
      "upack.json: 'contents[0].source.packagePath' '../x' must be a relative path without '.', '..', '//' or '\\'",
    ],
    [
      entry({ source: { url: "ftp://x.org/a" } }),
      "upack.json: 'contents[0].source.url' 'ftp://x.org/a' must be an absolute http(s) URL",
    ],
    [entry({ source: { url: null } }), "upack.json: 'contents[0].source.url' is required"],
    [
      entry({ source: { url: "https://x.org/a", hash: SHA.slice(2) } }),
      "upack.json: 'contents[0].source.hash' must be a SHA-1 hash (40 hexadecimal digits)",
    ],
    [entry({ source: { asset: "a.png" } }), "upack.json: 'contents[0].source.feed' is required"],
    [entry({ source: { feed: " ", asset: "a.png" } }), "upack.json: 'contents[0].source.feed' must not be empty"],
    [entry({ source: { feed: "assets" } }), "upack.json: 'contents[0].source.asset' is required"],
    ...["upack.json", "UPACK.JSON", "package", "package/x", "Package/x/"].map((path): [unknown, string] => [
      { ...base, contents: ["n:1.0.0"], metaContents: [{ virtualPath: path, source: "m:1.0.0" }] },
      `upack.json: 'metaContents[0].virtualPath' '${path.replace(/\/$/, "")}' is not allowed in metaContents`,
    ]),
    [
      { ...base, contents: ["n:1.0.0", "n:1.0"] },
      "upack.json: 'contents[1]' 'n:1.0' is neither a package identification string nor an http(s) URL",
    ],
  ];
  it.each(cases)("%j", (input, message) => {
    expectInvalid(() => parseVirtualManifest(input), message);
  });

  it("uses the label it is given", () => {
    expectInvalid(
      () => parseVirtualManifest({ ...base }, { label: "x.vpack" }),
      "x.vpack: 'contents' is required in a virtual package",
    );
  });
});
