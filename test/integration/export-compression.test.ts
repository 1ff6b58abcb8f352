import { randomBytes } from "node:crypto";
import { gunzipSync, gzipSync } from "node:zlib";
import tar from "tar-stream";
import yauzl from "yauzl";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gzipLevelFor } from "../../src/storage/tgz.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { buildZip } from "../helpers/upack-fixtures.js";

/**
 * Folder exports do not deflate what is already compressed (storage/archives.ts, the rule of
 * domain/compressed-content.ts): such zip entries are STORED (method 0), the others deflated
 * (method 8), and every file comes back byte for byte.
 */

const STORED = 0;
const DEFLATED = 8;
const TEXT = Array.from({ length: 3000 }, (_, i) => `line ${i} of a text file that compresses well\n`).join("");

async function zipEntries(bytes: Buffer): Promise<Map<string, { method: number; content: Buffer }>> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const entries = new Map<string, { method: number; content: Buffer }>();
  for await (const entry of zip.eachEntry()) {
    if (entry.fileName.endsWith("/")) continue;
    const chunks: Buffer[] = [];
    for await (const chunk of (await zip.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) chunks.push(chunk);
    entries.set(entry.fileName, { method: entry.compressionMethod, content: Buffer.concat(chunks) });
  }
  return entries;
}

async function tgzEntries(bytes: Buffer): Promise<Map<string, Buffer>> {
  const extract = tar.extract();
  const entries = new Map<string, Buffer>();
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
      if (entry.header.type === "file") entries.set(entry.header.name, Buffer.concat(chunks));
    }
  })();
  extract.end(gunzipSync(bytes));
  await done;
  return entries;
}

describe("folder exports of already-compressed files", () => {
  let t: TestApp;
  const files = new Map<string, Buffer>();

  beforeAll(async () => {
    t = await buildTestApp();
    await createAssetDirectory(t, "mixed");
    files.set("pkg.zip", await buildZip({ "a.txt": TEXT }));
    files.set("logs/data.json.gz", gzipSync(TEXT));
    files.set("photo.JPG", Buffer.concat([Buffer.from("ffd8ffe0", "hex"), randomBytes(2000)]));
    // Names that say nothing: the first bytes of a big one tell; a small one is deflated anyway.
    files.set("blob.bin", gzipSync(randomBytes(100 * 1024)));
    files.set("small.bin", gzipSync(randomBytes(1000)));
    files.set("notes.txt", Buffer.from(TEXT));
    files.set("logs/app.log", Buffer.from(TEXT.repeat(3)));
    for (const [path, bytes] of files) {
      const res = await putAsset(t, "mixed", path, bytes, { "content-type": "application/octet-stream" });
      expect(res.statusCode, path).toBe(201);
    }
  });
  afterAll(async () => t?.close());

  const exported = async (format: string) => {
    const res = await t.app.inject({
      method: "GET",
      url: `/endpoints/mixed/export?format=${format}`,
      headers: { "x-apikey": t.adminKey },
    });
    expect(res.statusCode).toBe(200);
    return res.rawPayload;
  };

  it("stores compressed files in a zip, deflates the others, and keeps every byte", async () => {
    const entries = await zipEntries(await exported("zip"));
    const methods = Object.fromEntries([...entries].map(([name, entry]) => [name, entry.method]));
    expect(methods).toEqual({
      "pkg.zip": STORED,
      "logs/data.json.gz": STORED,
      "photo.JPG": STORED,
      "blob.bin": STORED,
      "small.bin": DEFLATED,
      "notes.txt": DEFLATED,
      "logs/app.log": DEFLATED,
    });
    for (const [path, bytes] of files) expect(entries.get(path)?.content.equals(bytes), path).toBe(true);
  });

  it("keeps every byte in a tgz", async () => {
    const entries = await tgzEntries(await exported("tgz"));
    expect([...entries.keys()].sort()).toEqual([...files.keys()].sort());
    for (const [path, bytes] of files) expect(entries.get(path)?.equals(bytes), path).toBe(true);
  });

  it("stores a tgz uncompressed when nine tenths of its bytes are compressed files, else at the fastest level", () => {
    const entry = (name: string, size: number) => ({
      name,
      size,
      isDirectory: false,
      modified: new Date(),
      mode: undefined,
    });
    expect(gzipLevelFor([entry("a.upack", 950), entry("b.txt", 50)])).toBe(0);
    expect(gzipLevelFor([entry("a.upack", 850), entry("b.txt", 150)])).toBe(1);
    expect(gzipLevelFor([entry("b.txt", 10)])).toBe(1);
    expect(gzipLevelFor([])).toBe(1);
  });
});
