import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  hasCompressedExtension,
  hasCompressedSignature,
  isCompressedContent,
  isCompressedType,
} from "../../src/domain/compressed-content.js";
import { isCompressibleType } from "../../src/http/compression.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

describe("already-compressed content", () => {
  it.each([
    "lib.1.0.0.upack",
    "a/b/Setup.NUPKG",
    "x.tar.gz",
    "site.tgz",
    "photo.JPG",
    "movie.mp4",
    "font.woff2",
    "app.jar",
  ])("knows %s by its extension", (name) => expect(hasCompressedExtension(name)).toBe(true));

  it.each(["notes.txt", "data.json", "archive.tar", "image.svg", "gz", "dir.gz/readme", "README", ".zip/a.txt"])(
    "does not take %s for compressed",
    (name) => expect(hasCompressedExtension(name)).toBe(false),
  );

  it.each([
    "application/zip",
    "application/gzip; charset=binary",
    "IMAGE/PNG",
    "video/webm",
    "audio/mpeg",
    "application/epub+zip",
    "font/woff2",
  ])("knows the type %s", (type) => expect(isCompressedType(type)).toBe(true));

  it.each([
    "image/svg+xml",
    "image/bmp",
    "text/plain",
    "application/json",
    "application/octet-stream",
    "application/x-tar",
  ])("does not take the type %s for compressed", (type) => expect(isCompressedType(type)).toBe(false));

  it("knows gzip, zip, png and mp4 by their first bytes, and text not", async () => {
    expect(hasCompressedSignature(gzipSync("hello"))).toBe(true);
    expect(hasCompressedSignature(await buildUpack({ name: "a", version: "1.0.0" }))).toBe(true);
    expect(hasCompressedSignature(Buffer.from("89504e470d0a1a0a0000", "hex"))).toBe(true);
    expect(hasCompressedSignature(Buffer.from("000000186674797069736f6d", "hex"))).toBe(true);
    expect(hasCompressedSignature(Buffer.from('{"name": "x"}'))).toBe(false);
    expect(hasCompressedSignature(Buffer.alloc(0))).toBe(false);
    expect(hasCompressedSignature(Buffer.from([0x1f]))).toBe(false);
  });

  it("takes any one sign as enough", () => {
    expect(isCompressedContent({ name: "data.json.gz", contentType: "application/json" })).toBe(true);
    expect(isCompressedContent({ name: "data", contentType: "text/plain", firstBytes: gzipSync("x") })).toBe(true);
    expect(
      isCompressedContent({ name: "data.json", contentType: "application/json", firstBytes: Buffer.from("{}") }),
    ).toBe(false);
    expect(isCompressedContent({})).toBe(false);
  });
});

describe("compressible response types", () => {
  it.each([
    "text/plain",
    "text/html; charset=utf-8",
    "application/json; charset=utf-8",
    "application/problem+json",
    "image/svg+xml",
    "application/javascript",
    "application/xml",
  ])("%s is", (type) => expect(isCompressibleType(type)).toBe(true));

  it.each([
    "application/octet-stream",
    "application/zip",
    "application/x-tar",
    "image/png",
    "text/event-stream",
    "application/gzip",
    "",
  ])("%j is not", (type) => expect(isCompressibleType(type)).toBe(false));
});
