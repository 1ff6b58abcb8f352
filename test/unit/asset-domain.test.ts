import { describe, expect, it } from "vitest";
import {
  mergeUserMetadata,
  metadataHeaders,
  parseUserMetadata,
  userMetadataJson,
} from "../../src/domain/asset-metadata.js";
import { ancestorPaths, parseAssetPath } from "../../src/domain/asset-path.js";
import { effectiveCacheControl, parseCacheHeader } from "../../src/domain/cache-header.js";

describe("parseAssetPath", () => {
  it.each([
    ["docs/guide.pdf", { path: "docs/guide.pdf", key: "docs/guide.pdf", name: "guide.pdf", parent: "docs" }],
    ["Docs/Guide.PDF/", { path: "Docs/Guide.PDF", key: "docs/guide.pdf", name: "Guide.PDF", parent: "Docs" }],
    ["top.txt", { path: "top.txt", key: "top.txt", name: "top.txt", parent: "" }],
    ["my docs/über uns.txt", { path: "my docs/über uns.txt", name: "über uns.txt", parent: "my docs" }],
    ["100%.txt", { path: "100%.txt", name: "100%.txt" }],
  ])("accepts %j", (raw, expected) => {
    expect(parseAssetPath(raw)).toMatchObject(expected);
  });

  it("normalises decomposed Unicode to the composed form", () => {
    expect(parseAssetPath("cafe\u0301.txt").path).toBe("caf\u00e9.txt");
  });

  it.each([
    "../x",
    "a/../b",
    "a/..",
    "%2e%2e/x",
    "a%2F..%2Fb",
    "a\\b",
    "a%5Cb",
    "a\u0000b",
    "a%00b",
    "/etc/passwd",
    "C:/x",
    "./a",
    "a//b",
    `${"x".repeat(256)}/y`,
    `y/${"x".repeat(256)}`,
    `${"a/".repeat(600)}z`,
  ])("refuses %j", (raw) => {
    expect(() => parseAssetPath(raw)).toThrow(expect.objectContaining({ kind: "invalid" }));
  });

  it("accepts the root only where a folder is meant", () => {
    expect(parseAssetPath("", { allowRoot: true }).path).toBe("");
    expect(parseAssetPath("/", { allowRoot: true }).path).toBe("");
    expect(() => parseAssetPath("")).toThrow(expect.objectContaining({ code: "ASSET_PATH_REQUIRED" }));
  });

  it("lists ancestors outermost first", () => {
    expect(ancestorPaths(parseAssetPath("A/b/c.txt"))).toEqual([
      { path: "A", key: "a", name: "A", parent: "" },
      { path: "A/b", key: "a/b", name: "b", parent: "A" },
    ]);
    expect(ancestorPaths(parseAssetPath("c.txt"))).toEqual([]);
  });
});

describe("cache headers", () => {
  it.each([
    [{ type: "inherit" }, { type: "Inherit" }],
    [{ type: "NOCACHE" }, { type: "NoCache" }],
    [
      { type: "ttl", value: "60" },
      { type: "TTL", value: 60 },
    ],
    [
      { Type: "TTL", Value: 0 },
      { type: "TTL", value: 0 },
    ],
    [
      { type: "custom", value: " private, max-age=5 " },
      { type: "Custom", value: "private, max-age=5" },
    ],
    [
      { type: "Custom", value: 300 },
      { type: "Custom", value: "300" },
    ],
  ])("parses %j", (input, expected) => {
    expect(parseCacheHeader(input)).toEqual(expected);
  });

  it.each([
    null,
    "TTL",
    { type: "forever" },
    { type: "TTL" },
    { type: "TTL", value: -1 },
    { type: "TTL", value: 1.5 },
    { type: "TTL", value: "ten" },
    { type: "TTL", value: 31_536_001 },
    { type: "Custom" },
    { type: "Custom", value: "a\nb" },
    { type: "Custom", value: "x".repeat(1001) },
  ])("refuses %j", (input) => {
    expect(() => parseCacheHeader(input)).toThrow(expect.objectContaining({ code: "INVALID_CACHE_HEADER" }));
  });

  it("takes the first setting that is not Inherit, else public", () => {
    expect(effectiveCacheControl([])).toBe("public");
    expect(effectiveCacheControl([{ type: "Inherit" }, { type: "TTL", value: 60 }])).toBe("public, max-age=60");
    expect(effectiveCacheControl([{ type: "NoCache" }, { type: "TTL", value: 60 }])).toBe("no-cache");
    expect(effectiveCacheControl([{ type: "TTL", value: 0 }])).toBe("no-cache");
    expect(effectiveCacheControl([{ type: "Custom", value: "no-store" }])).toBe("no-store");
  });
});

describe("user metadata", () => {
  it("reads text and object forms, and writes the object form only for header entries", () => {
    const parsed = parseUserMetadata({
      owner: "team",
      count: 3,
      "X-Build": { value: "42", includeInResponseHeader: true },
      plain: { Value: "v", IncludeInResponseHeader: "false" },
    });
    expect(userMetadataJson(parsed)).toEqual({
      owner: "team",
      count: "3",
      "X-Build": { value: "42", includeInResponseHeader: true },
      plain: "v",
    });
    expect(metadataHeaders(parsed)).toEqual([["X-Build", "42"]]);
  });

  it.each([
    [[], "must be an object"],
    [{ "": "x" }, "1 to 200"],
    [{ a: { nested: true } }, "text value"],
    [{ a: "x".repeat(8193) }, "longer than"],
    [{ "Set-Cookie": { value: "a=b", includeInResponseHeader: true } }, "Wharf sets it"],
    [{ "Access-Control-Allow-Origin": { value: "*", includeInResponseHeader: true } }, "Wharf sets it"],
    [{ "X-Wharf-Error": { value: "x", includeInResponseHeader: true } }, "Wharf sets it"],
    [{ "with space": { value: "x", includeInResponseHeader: true } }, "not a header name"],
    [{ "X-Ok": { value: "é", includeInResponseHeader: true } }, "printable ASCII"],
  ])("refuses %j", (input, phrase) => {
    expect(() => parseUserMetadata(input)).toThrow(phrase);
  });

  it("merges case-insensitively by name, or replaces everything", () => {
    const current = parseUserMetadata({ Owner: "a", keep: "k" });
    const given = parseUserMetadata({ owner: "b" });
    expect(userMetadataJson(mergeUserMetadata(current, given, "update"))).toEqual({ keep: "k", owner: "b" });
    expect(userMetadataJson(mergeUserMetadata(current, given, "replace"))).toEqual({ owner: "b" });
  });
});
