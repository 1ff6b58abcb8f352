import { existsSync, readdirSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { crc32, gunzipSync, gzipSync } from "node:zlib";
import tar from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import { DomainError, type ErrorKind } from "../../src/domain/errors.js";
import {
  type ArchiveLimits,
  checkEntryName,
  DEFAULT_ARCHIVE_LIMITS,
  zipSubtreeToZip,
} from "../../src/storage/archives.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { tgzToZipFile, zipSubtreeToTgz } from "../../src/storage/tgz.js";
import { openZip, openZipBlob, zipFileRepack, type ZipReader } from "../../src/storage/zip.js";
import { renameInArchive } from "../helpers/upack-fixtures.js";

const MTIME = new Date("2024-05-06T07:08:10Z");
const MiB = 1024 * 1024;

let dir: string;
let fileCounter = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "wharf-archives-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const tempPath = (suffix: string) => path.join(dir, `${++fileCounter}${suffix}`);

interface ZipInput {
  name: string;
  content?: string | Buffer;
  directory?: boolean;
  mode?: number;
  compress?: boolean;
  compressionLevel?: number;
}

async function collect(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) {
    if (!Buffer.isBuffer(chunk)) throw new TypeError("expected Buffer chunks");
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

async function zipBytes(entries: ZipInput[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const entry of entries) {
    if (entry.directory) {
      zip.addEmptyDirectory(entry.name, { mtime: MTIME });
      continue;
    }
    zip.addBuffer(Buffer.from(entry.content ?? ""), entry.name, {
      mtime: MTIME,
      ...(entry.mode === undefined ? {} : { mode: entry.mode }),
      ...(entry.compress === undefined ? {} : { compress: entry.compress }),
      ...(entry.compressionLevel === undefined ? {} : { compressionLevel: entry.compressionLevel }),
    });
  }
  zip.end();
  return collect(zip.outputStream as Readable);
}

async function zipFile(entries: ZipInput[] | Buffer): Promise<string> {
  const file = tempPath(".zip");
  await writeFile(file, Buffer.isBuffer(entries) ? entries : await zipBytes(entries));
  return file;
}

/** Overwrites the uncompressed size of the only entry in the central directory. */
function patchCentralSize(bytes: Buffer, size: number): Buffer {
  const out = Buffer.from(bytes);
  const at = out.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
  expect(at).toBeGreaterThan(-1);
  out.writeUInt32LE(size, at + 24);
  return out;
}

interface TarInput {
  header: Partial<tar.Header> & { name: string };
  content?: Buffer | string;
}

async function tgzBytes(entries: TarInput[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const { header, content } of entries) pack.entry({ mtime: MTIME, ...header }, Buffer.from(content ?? ""));
  pack.finalize();
  return gzipSync(await collect(pack), { level: 9 });
}

async function readTar(tarBytes: Buffer) {
  const extract = tar.extract();
  extract.end(tarBytes);
  const out: Array<{ name: string; type: string; size: number; mtime: Date; mode: number; content: string }> = [];
  for await (const entry of extract) {
    const { name, type, size, mtime, mode } = entry.header;
    out.push({ name, type, size, mtime, mode, content: (await collect(entry)).toString() });
  }
  return out;
}

async function readAll(reader: ZipReader): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of reader.entries()) {
    out[entry.name] = entry.isDirectory ? "<dir>" : (await collect(reader.openEntry(entry.name))).toString();
  }
  return out;
}

async function readZipFile(file: string): Promise<Record<string, string>> {
  const reader = await openZip(file);
  try {
    return await readAll(reader);
  } finally {
    await reader.close();
  }
}

// Linux-only view of this process's descriptors; elsewhere the leak checks pass vacuously.
const openFds = () => (existsSync("/proc/self/fd") ? readdirSync("/proc/self/fd").length : 0);

/** Runs `action` and checks that every file descriptor it opened has been closed again. */
async function noFdLeak<T>(action: () => Promise<T>): Promise<T> {
  const before = openFds();
  const result = await action();
  // Closing is asynchronous in places (fs.close callbacks); a leak stays, a late close does not.
  for (let i = 0; i < 50 && openFds() > before; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(openFds()).toBeLessThanOrEqual(before);
  return result;
}

async function domainError(promise: Promise<unknown>, kind: ErrorKind, code?: string): Promise<DomainError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(DomainError);
  const error = caught as DomainError;
  expect(error.kind).toBe(kind);
  if (code !== undefined) expect(error.code).toBe(code);
  return error;
}

const UPACK_JSON = JSON.stringify({ name: "app", version: "1.2.3" });
const BIG = Buffer.alloc(3 * MiB, "wharf archive test data ");
const PACKAGE: ZipInput[] = [
  { name: "upack.json", content: UPACK_JSON },
  { name: "package/", directory: true },
  { name: "package/readme.txt", content: "hello" },
  { name: "package/bin/", directory: true },
  { name: "package/bin/big.dat", content: BIG },
  { name: "install.ps1", content: "# outside package/" },
];

describe("openZip", () => {
  it("lists every entry with sizes, kind and modification time", async () => {
    const reader = await openZip(await zipFile(PACKAGE));
    const entries = reader.entries();
    expect(entries.map((e) => e.name)).toEqual(PACKAGE.map((e) => e.name));
    const big = reader.findEntry("package/bin/big.dat");
    expect(big).toMatchObject({ size: BIG.length, isDirectory: false });
    expect(big?.compressedSize).toBeLessThan(BIG.length);
    expect(reader.findEntry("package/bin/")?.isDirectory).toBe(true);
    expect(big?.modified.getTime()).toBe(MTIME.getTime());
    expect(reader.findEntry("UPACK.JSON")).toBeUndefined();
    expect(reader.findEntry("UPACK.JSON", { ignoreCase: true })?.name).toBe("upack.json");
    await reader.close();
  });

  it("reads bounded UTF-8 text, dropping a BOM", async () => {
    const file = await zipFile([
      { name: "upack.json", content: UPACK_JSON },
      { name: "bom.json", content: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from("{}")]) },
      { name: "latin1.txt", content: Buffer.from([0x63, 0x61, 0x66, 0xe9]) },
    ]);
    await noFdLeak(async () => {
      const reader = await openZip(file);
      expect(JSON.parse(await reader.readText("upack.json", 1024))).toEqual({ name: "app", version: "1.2.3" });
      expect(await reader.readText("bom.json", 1024)).toBe("{}");
      await domainError(reader.readText("upack.json", 10), "too_large", "ARCHIVE_ENTRY_TOO_LARGE");
      await domainError(reader.readText("latin1.txt", 1024), "invalid", "ARCHIVE_TEXT_NOT_UTF8");
      await domainError(reader.readText("missing.json", 1024), "not_found", "ARCHIVE_ENTRY_NOT_FOUND");
      await reader.close();
    });
  });

  it("streams an entry, refuses directories and unknown names, and closes idempotently", async () => {
    const file = await zipFile(PACKAGE);
    await noFdLeak(async () => {
      const reader = await openZip(file);
      expect((await collect(reader.openEntry("package/bin/big.dat"))).equals(BIG)).toBe(true);
      expect(() => reader.openEntry("package/bin/")).toThrow(expect.objectContaining({ kind: "invalid" }));
      expect(() => reader.openEntry("nope")).toThrow(expect.objectContaining({ kind: "not_found" }));
      await Promise.all([reader.close(), reader.close()]);
    });
  });

  it("destroys entry streams still open when closed", async () => {
    const file = await zipFile(PACKAGE);
    await noFdLeak(async () => {
      const reader = await openZip(file);
      const stream = reader.openEntry("package/bin/big.dat");
      stream.once("readable", () => undefined); // started but never drained
      await new Promise((resolve) => setImmediate(resolve));
      await reader.close();
      expect(stream.destroyed).toBe(true);
    });
  });

  it("opens a stored blob through ranged reads, reading the central directory in slices", async () => {
    const many = Array.from({ length: 2000 }, (_, i) => ({ name: `package/f${i}.txt`, content: `file ${i}` }));
    const bytes = await zipBytes([{ name: "upack.json", content: UPACK_JSON }, ...many]);
    const sha = "a".repeat(64);
    let opens = 0;
    const blobs: BlobStore = {
      put: () => Promise.reject(new Error("unused")),
      stat: async (sha256) => (sha256 === sha ? { size: bytes.length } : undefined),
      open: async (sha256, range) => {
        opens += 1;
        if (sha256 !== sha) return undefined;
        return Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes]);
      },
      delete: async () => undefined,
      list: () => Readable.from([]),
      totalBytes: async () => bytes.length,
      clearStaleTemporaryFiles: async () => ({ files: 0, bytes: 0 }),
    };
    const reader = await openZipBlob(blobs, sha);
    expect(reader.entries()).toHaveLength(2001);
    expect(opens).toBeLessThan(20);
    expect(await reader.readText("upack.json", 1024)).toBe(UPACK_JSON);
    expect((await collect(reader.openEntry("package/f1999.txt"))).toString()).toBe("file 1999");
    await reader.close();
    await domainError(openZipBlob(blobs, "b".repeat(64)), "not_found");
  });
});

describe("conversions", () => {
  it("re-zips the package/ subtree with the prefix stripped", async () => {
    const file = await zipFile(PACKAGE);
    await noFdLeak(async () => {
      const out = tempPath(".zip");
      await writeFile(out, await collect(zipSubtreeToZip(await openZip(file), "package/")));
      const reader = await openZip(out);
      expect(await readAll(reader)).toEqual({ "readme.txt": "hello", "bin/": "<dir>", "bin/big.dat": BIG.toString() });
      expect(reader.findEntry("bin/big.dat")?.modified.getTime()).toBe(MTIME.getTime());
      await reader.close();
    });
  });

  it("matches the prefix case-insensitively and refuses names that would clash", async () => {
    const file = await zipFile([
      { name: "Package/a.txt", content: "a" },
      { name: "package/A.txt", content: "A" },
    ]);
    const reader = await openZip(file);
    const zipped = await collect(zipSubtreeToZip(reader, "package/"));
    expect(await readZipFile(await zipFile(zipped))).toEqual({ "a.txt": "a", "A.txt": "A" });
    const clash = await openZip(await zipFile([{ name: "package/a", content: "1" }, { name: "PACKAGE/a" }]));
    expect(() => zipSubtreeToZip(clash, "package/")).toThrow(expect.objectContaining({ kind: "invalid" }));
    await clash.close();
  });

  it("streams the package/ subtree as a gzipped tar with sizes and mtimes", async () => {
    const file = await zipFile(PACKAGE);
    await noFdLeak(async () => {
      const tgz = await collect(zipSubtreeToTgz(await openZip(file), "package/"));
      const entries = await readTar(gunzipSync(tgz));
      expect(entries.map(({ name, type, size }) => ({ name, type, size }))).toEqual([
        { name: "readme.txt", type: "file", size: 5 },
        { name: "bin/", type: "directory", size: 0 },
        { name: "bin/big.dat", type: "file", size: BIG.length },
      ]);
      expect(entries[2]?.content).toBe(BIG.toString());
      expect(entries[0]?.mtime.getTime()).toBe(MTIME.getTime());
    });
  });

  it("fails the download stream cleanly when an entry lies about its size", async () => {
    const lying = patchCentralSize(await zipBytes([{ name: "package/liar.txt", content: "x".repeat(100_000) }]), 1000);
    const file = await zipFile(lying);
    await noFdLeak(async () => {
      for (const convert of [zipSubtreeToZip, zipSubtreeToTgz]) {
        await domainError(collect(convert(await openZip(file), "package/")), "invalid");
      }
    });
  });

  it("closes the reader when the consumer abandons a download", async () => {
    const file = await zipFile(PACKAGE);
    await noFdLeak(async () => {
      for (const convert of [zipSubtreeToZip, zipSubtreeToTgz]) {
        const stream = convert(await openZip(file), "package/");
        await new Promise((resolve) => stream.once("data", resolve));
        stream.destroy();
        await new Promise((resolve) => stream.once("close", resolve));
      }
    });
  });

  it("turns a tgz into a package zip, entries under package/ and upack.json at the root", async () => {
    const tgz = await tgzBytes([
      { header: { name: "./", type: "directory" } },
      { header: { name: "./docs", type: "directory" } },
      { header: { name: "./docs/guide.md" }, content: "# guide" },
      { header: { name: "tool.sh", mode: 0o755 }, content: "echo hi" },
      { header: { name: "empty.txt" } },
    ]);
    const dest = tempPath(".upack");
    await noFdLeak(() =>
      tgzToZipFile(Readable.from([tgz]), dest, DEFAULT_ARCHIVE_LIMITS, {
        prefix: "package/",
        extraEntries: [{ name: "upack.json", content: Buffer.from(UPACK_JSON) }],
      }),
    );
    const reader = await openZip(dest);
    expect(reader.entries()[0]?.name).toBe("upack.json");
    expect(await readAll(reader)).toEqual({
      "upack.json": UPACK_JSON,
      "package/docs/": "<dir>",
      "package/docs/guide.md": "# guide",
      "package/tool.sh": "echo hi",
      "package/empty.txt": "",
    });
    expect(reader.findEntry("package/tool.sh")?.modified.getTime()).toBe(MTIME.getTime());
    expect(reader.findEntry("package/tool.sh")?.mode).toBe(0o755);
    await reader.close();
  });

  it("keeps permission bits across conversions but never setuid/setgid", async () => {
    const tgz = await tgzBytes([
      { header: { name: "run.sh", mode: 0o4755 }, content: "#!/bin/sh" },
      { header: { name: "data.txt", mode: 0o640 }, content: "d" },
    ]);
    const upack = tempPath(".upack");
    await tgzToZipFile(Readable.from([tgz]), upack, DEFAULT_ARCHIVE_LIMITS, { prefix: "package/" });
    const modes = (reader: ZipReader) => reader.entries().map((e) => [e.name, e.mode]);
    const reader = await openZip(upack);
    expect(modes(reader)).toEqual([
      ["package/run.sh", 0o755],
      ["package/data.txt", 0o640],
    ]);
    const back = await readTar(gunzipSync(await collect(zipSubtreeToTgz(reader, "package/"))));
    expect(back.map((e) => [e.name, e.mode])).toEqual([
      ["run.sh", 0o755],
      ["data.txt", 0o640],
    ]);
    const rezipped = await openZip(await zipFile(await collect(zipSubtreeToZip(await openZip(upack), "package/"))));
    expect(modes(rezipped)).toEqual([
      ["run.sh", 0o755],
      ["data.txt", 0o640],
    ]);
    await rezipped.close();
  });

  it("repacks a plain zip as a package", async () => {
    const src = await zipFile([
      { name: "app.exe", content: "MZ" },
      { name: "lib/", directory: true },
      { name: "lib/x.dll", content: BIG },
    ]);
    const dest = tempPath(".upack");
    await noFdLeak(() =>
      zipFileRepack(src, dest, {
        prefix: "package/",
        extraEntries: [{ name: "upack.json", content: Buffer.from(UPACK_JSON) }],
      }),
    );
    const reader = await openZip(dest);
    expect(reader.entries().map((e) => e.name)).toEqual([
      "upack.json",
      "package/app.exe",
      "package/lib/",
      "package/lib/x.dll",
    ]);
    expect((await collect(reader.openEntry("package/lib/x.dll"))).equals(BIG)).toBe(true);
    await reader.close();
  });

  it("never overwrites or removes an existing destination", async () => {
    const src = await zipFile([{ name: "a.txt", content: "a" }]);
    const dest = tempPath(".upack");
    await writeFile(dest, "keep me");
    await expect(zipFileRepack(src, dest, { prefix: "package/" })).rejects.toMatchObject({ code: "EEXIST" });
    expect(await readFile(dest, "utf8")).toBe("keep me");
  });

  it("refuses extra entries that clash with moved ones", async () => {
    const src = await zipFile([{ name: "upack.json", content: "{}" }]);
    const dest = tempPath(".upack");
    const extraEntries = [{ name: "package/upack.json", content: Buffer.from("{}") }];
    await domainError(
      zipFileRepack(src, dest, { prefix: "package/", extraEntries }),
      "invalid",
      "ARCHIVE_DUPLICATE_ENTRY",
    );
    expect(existsSync(dest)).toBe(false);
  });
});

describe("hostile zips", () => {
  const small = (limits: Partial<ArchiveLimits>): ArchiveLimits => ({ ...DEFAULT_ARCHIVE_LIMITS, ...limits });

  async function refused(bytes: Buffer, kind: ErrorKind, code: string, limits?: ArchiveLimits) {
    const file = await zipFile(bytes);
    return noFdLeak(() => domainError(openZip(file, limits), kind, code));
  }

  it.each([
    ["../x", "aa/x"],
    ["a/../../b", "a/aa/aa/b"],
    ["/etc/passwd", "etc/passwdx"],
    ["a\\b", "a_b"],
    ["C:/x", "Cx/x"],
    ["c:x", "cxx"],
    ["a\u0000b", "axb"],
    ["a//b", "a/xb"],
    ["./a", "x/a"],
  ])("refuses the entry name %j", async (unsafe, standIn) => {
    const bytes = renameInArchive(await zipBytes([{ name: standIn, content: "pwned" }]), standIn, unsafe);
    const error = await refused(bytes, "invalid", "ARCHIVE_UNSAFE_PATH");
    expect(error.message).toContain(JSON.stringify(unsafe));
  });

  it("refuses too many entries before reading them", async () => {
    const entries = Array.from({ length: 6 }, (_, i) => ({ name: `f${i}`, content: "x" }));
    await refused(await zipBytes(entries), "too_large", "ARCHIVE_TOO_MANY_ENTRIES", small({ maxEntries: 5 }));
  });

  it("refuses a total uncompressed size over the limit", async () => {
    const entries = [
      { name: "a", content: Buffer.alloc(600) },
      { name: "b", content: Buffer.alloc(600) },
    ];
    await refused(await zipBytes(entries), "too_large", "ARCHIVE_TOO_LARGE", small({ maxTotalBytes: 1000 }));
    await refused(await zipBytes(entries), "too_large", "ARCHIVE_ENTRY_TOO_LARGE", small({ maxEntryBytes: 500 }));
  });

  it("refuses a zip bomb by its compression ratio, but not small compressible files", async () => {
    const bomb = await zipBytes([{ name: "zeros", content: Buffer.alloc(32 * MiB), compressionLevel: 9 }]);
    expect(bomb.length).toBeLessThan((32 * MiB) / 1000); // it really is past the default ratio
    await refused(bomb, "too_large", "ARCHIVE_RATIO_EXCEEDED");
    const tighter = await zipBytes([{ name: "zeros", content: Buffer.alloc(4 * MiB) }]);
    await refused(tighter, "too_large", "ARCHIVE_RATIO_EXCEEDED", small({ maxRatio: 100 }));
    // Each entry is small enough to be exempt; together they still expand ~1000 times.
    const many = Array.from({ length: 30 }, (_, i) => ({ name: `z${i}`, content: Buffer.alloc(MiB) }));
    await refused(await zipBytes(many), "too_large", "ARCHIVE_RATIO_EXCEEDED", small({ maxRatio: 100 }));
    const harmless = await zipFile([{ name: "zeros", content: Buffer.alloc(MiB) }]);
    await (await openZip(harmless, small({ maxRatio: 10 }))).close();
  });

  it("fails an entry whose data is larger than its header declares", async () => {
    const content = Buffer.alloc(100_000, "x");
    const lying = patchCentralSize(await zipBytes([{ name: "liar.txt", content }]), 1000);
    const file = await zipFile(lying);
    await noFdLeak(async () => {
      const reader = await openZip(file);
      expect(reader.findEntry("liar.txt")?.size).toBe(1000);
      await domainError(collect(reader.openEntry("liar.txt")), "invalid");
      await domainError(reader.readText("liar.txt", 2000), "invalid");
      await reader.close();
    });
    // Stored (uncompressed) entries are checked against their header when listed.
    const stored = patchCentralSize(await zipBytes([{ name: "s.txt", content, compress: false }]), 1000);
    await refused(stored, "invalid", "ARCHIVE_INVALID");
  });

  it("fails an entry whose data is shorter than its header declares", async () => {
    const short = patchCentralSize(await zipBytes([{ name: "short.txt", content: "abc" }]), 10);
    const file = await zipFile(short);
    await noFdLeak(async () => {
      const reader = await openZip(file);
      await domainError(collect(reader.openEntry("short.txt")), "invalid");
      await reader.close();
    });
  });

  it.each([
    ["truncated", async () => (await zipBytes(PACKAGE)).subarray(0, 2000)],
    ["garbage", async () => Buffer.alloc(5000, "not a zip file ")],
    ["empty", async () => Buffer.alloc(0)],
    ["cut central directory", async () => (await zipBytes(PACKAGE)).subarray(0, -40)],
  ])("refuses a %s file as an invalid ZIP", async (_label, bytes) => {
    const error = await refused(await bytes(), "invalid", "ARCHIVE_INVALID");
    expect(error.message).toMatch(/^The archive is not a valid ZIP file: /);
  });

  it("refuses symlink entries and duplicate names", async () => {
    const link = await zipBytes([{ name: "evil", content: "/etc/passwd", mode: 0o120777 }]);
    await refused(link, "invalid", "ARCHIVE_LINK_ENTRY");
    const twice = await zipBytes([
      { name: "upack.json", content: "{}" },
      { name: "upack.json", content: '{"name":"other"}' },
    ]);
    await refused(twice, "invalid", "ARCHIVE_DUPLICATE_ENTRY");
  });
});

describe("verifyLocalHeaders (local file headers against the central directory)", () => {
  const LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
  const CENTRAL = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
  const END = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

  /** Offset of the local header of `name`: all local headers precede the central directory. */
  function localHeaderOf(bytes: Buffer, name: string): number {
    const at = bytes.lastIndexOf(LOCAL, bytes.indexOf(Buffer.from(name)));
    expect(at).toBeGreaterThan(-1);
    expect(bytes.toString("latin1", at + 30, at + 30 + name.length)).toBe(name);
    return at;
  }

  function patched(bytes: Buffer, patch: (out: Buffer) => void): Buffer {
    const out = Buffer.from(bytes);
    patch(out);
    return out;
  }

  /** A blob store over one buffer that counts ranged reads and the bytes they return. */
  function countingBlobs(bytes: Buffer) {
    const sha = "c".repeat(64);
    const counts = { opens: 0, bytes: 0 };
    const blobs: BlobStore = {
      put: () => Promise.reject(new Error("unused")),
      stat: async (sha256) => (sha256 === sha ? { size: bytes.length } : undefined),
      open: async (_sha256, range) => {
        const slice = range ? bytes.subarray(range.start, range.end + 1) : bytes;
        counts.opens += 1;
        counts.bytes += slice.length;
        return Readable.from([slice]);
      },
      delete: async () => undefined,
      list: () => Readable.from([]),
      totalBytes: async () => bytes.length,
      clearStaleTemporaryFiles: async () => ({ files: 0, bytes: 0 }),
    };
    return { blobs, sha, counts };
  }

  /** Verifies through both readers (file and blob); resolves, or rejects with what openZipBlob's reader threw. */
  async function verify(bytes: Buffer): Promise<void> {
    const file = await zipFile(bytes);
    const fromFile = await noFdLeak(async () => {
      const reader = await openZip(file);
      try {
        await reader.verifyLocalHeaders();
        return undefined;
      } catch (error) {
        return error;
      } finally {
        await reader.close();
      }
    });
    const { blobs, sha } = countingBlobs(bytes);
    const reader = await openZipBlob(blobs, sha);
    try {
      await reader.verifyLocalHeaders();
      expect(fromFile).toBeUndefined();
    } catch (error) {
      expect(fromFile).toEqual(error);
      throw error;
    } finally {
      await reader.close();
    }
  }

  async function mismatch(bytes: Buffer, about: string): Promise<void> {
    const error = await domainError(verify(bytes), "invalid", "ARCHIVE_LOCAL_HEADER_MISMATCH");
    expect(error.message).toContain(`disagree about ${about}`);
  }

  interface RawEntry {
    readonly name: string;
    readonly data?: string;
    /** The name in the local header, when it should differ. */
    readonly localName?: string;
    readonly localExtra?: Buffer;
    /** Local sizes as 0xFFFFFFFF with a zip64 extra field holding these. */
    readonly localZip64?: { uncompressed: number; compressed: number };
  }

  /** A ZIP of stored entries written byte by byte, for header shapes yazl never writes. */
  function rawZip(entries: readonly RawEntry[]): Buffer {
    const dosDate = (44 << 9) | (1 << 5) | 2; // 2024-01-02
    const parts: Buffer[] = [];
    const central: Buffer[] = [];
    let offset = 0;
    for (const entry of entries) {
      const data = Buffer.from(entry.data ?? "");
      const name = Buffer.from(entry.name);
      const localName = Buffer.from(entry.localName ?? entry.name);
      let localExtra = entry.localExtra ?? Buffer.alloc(0);
      if (entry.localZip64) {
        const zip64 = Buffer.alloc(20);
        zip64.writeUInt16LE(0x0001, 0);
        zip64.writeUInt16LE(16, 2);
        zip64.writeBigUInt64LE(BigInt(entry.localZip64.uncompressed), 4);
        zip64.writeBigUInt64LE(BigInt(entry.localZip64.compressed), 12);
        localExtra = Buffer.concat([localExtra, zip64]);
      }
      const local = Buffer.alloc(30);
      LOCAL.copy(local, 0);
      local.writeUInt16LE(45, 4);
      local.writeUInt16LE(0x0800, 6);
      local.writeUInt16LE(dosDate, 12);
      local.writeUInt32LE(crc32(data), 14);
      local.writeUInt32LE(entry.localZip64 ? 0xffffffff : data.length, 18);
      local.writeUInt32LE(entry.localZip64 ? 0xffffffff : data.length, 22);
      local.writeUInt16LE(localName.length, 26);
      local.writeUInt16LE(localExtra.length, 28);
      const record = Buffer.alloc(46);
      CENTRAL.copy(record, 0);
      record.writeUInt16LE(0x031e, 4);
      record.writeUInt16LE(45, 6);
      record.writeUInt16LE(0x0800, 8);
      record.writeUInt16LE(dosDate, 14);
      record.writeUInt32LE(crc32(data), 16);
      record.writeUInt32LE(data.length, 20);
      record.writeUInt32LE(data.length, 24);
      record.writeUInt16LE(name.length, 28);
      record.writeUInt32LE(offset, 42);
      parts.push(local, localName, localExtra, data);
      central.push(record, name);
      offset += local.length + localName.length + localExtra.length + data.length;
    }
    const directory = Buffer.concat(central);
    const end = Buffer.alloc(22);
    END.copy(end, 0);
    end.writeUInt16LE(entries.length, 8);
    end.writeUInt16LE(entries.length, 10);
    end.writeUInt32LE(directory.length, 12);
    end.writeUInt32LE(offset, 16);
    return Buffer.concat([...parts, directory, end]);
  }

  /** An Info-ZIP Unicode Path extra field naming `unicodeName` for the raw name `rawName`. */
  function unicodePath(rawName: string, unicodeName: string): Buffer {
    const name = Buffer.from(unicodeName);
    const field = Buffer.alloc(9);
    field.writeUInt16LE(0x7075, 0);
    field.writeUInt16LE(5 + name.length, 2);
    field.writeUInt8(1, 4);
    field.writeUInt32LE(crc32(Buffer.from(rawName)), 5);
    return Buffer.concat([field, name]);
  }

  it("accepts honest archives: deflated, stored, directories, data descriptors, zip64 local sizes", async () => {
    await verify(await zipBytes(PACKAGE));
    await verify(await zipBytes([{ name: "stored.txt", content: "plain", compress: false }]));
    // yazl writes a data descriptor (placeholder CRC and sizes in the local header) for a stream.
    const zip = new yazl.ZipFile();
    zip.addReadStream(Readable.from([Buffer.from("streamed content")]), "package/streamed.txt", { mtime: MTIME });
    zip.end();
    const withDescriptor = await collect(zip.outputStream as Readable);
    expect(withDescriptor.readUInt16LE(6) & 0x08).toBe(0x08);
    await verify(withDescriptor);
    await verify(
      rawZip([
        { name: "a.txt", data: "aaa", localZip64: { uncompressed: 3, compressed: 3 } },
        { name: "b.txt", data: "b", localExtra: unicodePath("b.txt", "b.txt") },
      ]),
    );
  });

  it.each([
    ["../../../../tmp/pwned.sh", "package/aaaaaaaaaaaaa.sh"],
    ["/etc/cron.d/evil", "package/evil.txt"],
    ["package\\..\\..\\x", "package/aaaaaaa"],
    ["package/other.txt", "package/aaaaaa.sh"],
  ])("refuses a local name %j behind the central name %j", async (evil, harmless) => {
    expect(evil.length).toBe(harmless.length);
    const honest = await zipBytes([
      { name: "upack.json", content: UPACK_JSON },
      { name: harmless, content: "#!/bin/sh\necho pwned" },
    ]);
    await verify(honest);
    const at = localHeaderOf(honest, harmless);
    await mismatch(
      patched(honest, (out) => out.write(evil, at + 30, "latin1")),
      "its name",
    );
  });

  it("refuses a Unicode path field in the local header that names another file", async () => {
    await mismatch(
      rawZip([{ name: "package/a.txt", data: "a", localExtra: unicodePath("package/a.txt", "../../../a.txt") }]),
      "its name",
    );
    // Same raw bytes, but a local name that differs
    await mismatch(rawZip([{ name: "package/a.txt", localName: "package/b.txt" }]), "its name");
  });

  it("refuses a local header that disagrees about compression, encryption, CRC-32 or sizes", async () => {
    const honest = await zipBytes([
      { name: "upack.json", content: UPACK_JSON },
      { name: "package/data.txt", content: "some content ".repeat(50) },
    ]);
    const at = localHeaderOf(honest, "package/data.txt");
    expect(honest.readUInt16LE(at + 8)).toBe(8); // deflated
    await mismatch(
      patched(honest, (out) => out.writeUInt16LE(0, at + 8)),
      "the compression method",
    );
    await mismatch(
      patched(honest, (out) => out.writeUInt16LE(out.readUInt16LE(at + 6) | 1, at + 6)),
      "encryption",
    );
    await mismatch(
      patched(honest, (out) => out.writeUInt32LE((out.readUInt32LE(at + 14) ^ 1) >>> 0, at + 14)),
      "the CRC-32",
    );
    await mismatch(
      patched(honest, (out) => out.writeUInt32LE(out.readUInt32LE(at + 18) + 1, at + 18)),
      "the sizes",
    );
    await mismatch(
      patched(honest, (out) => out.writeUInt32LE(out.readUInt32LE(at + 22) + 1, at + 22)),
      "the sizes",
    );
    await mismatch(
      rawZip([{ name: "a.txt", data: "aaa", localZip64: { uncompressed: 3, compressed: 4 } }]),
      "the sizes",
    );
  });

  it("refuses two central records sharing one local header, and a header that is not one", async () => {
    const honest = await zipBytes([
      { name: "upack.json", content: UPACK_JSON },
      { name: "package/one.txt", content: "one" },
    ]);
    const end = honest.lastIndexOf(END);
    const directoryAt = honest.readUInt32LE(end + 16);
    const last = honest.lastIndexOf(CENTRAL);
    // A copy of the last record under a name of the same length, pointing at the same local header.
    const copy = Buffer.from(honest.subarray(last, end));
    copy.write("package/two.txt", 46, "latin1");
    const tail = Buffer.from(honest.subarray(end));
    tail.writeUInt16LE(3, 8);
    tail.writeUInt16LE(3, 10);
    tail.writeUInt32LE(end - directoryAt + copy.length, 12);
    await mismatch(Buffer.concat([honest.subarray(0, end), copy, tail]), "where it starts");

    const notAHeader = patched(honest, (out) =>
      out.writeUInt32LE(0x12345678, localHeaderOf(honest, "package/one.txt")),
    );
    const error = await domainError(verify(notAHeader), "invalid", "ARCHIVE_INVALID");
    expect(error.message).toContain("local file header signature");
  });

  it("reads headers close together in one ranged read, and little around a header between large files", async () => {
    const many = Array.from({ length: 2000 }, (_, i) => ({ name: `package/f${i}.txt`, content: `file ${i}` }));
    const small = countingBlobs(await zipBytes([{ name: "upack.json", content: UPACK_JSON }, ...many]));
    const reader = await openZipBlob(small.blobs, small.sha);
    const opened = small.counts.opens;
    await reader.verifyLocalHeaders();
    expect(small.counts.opens - opened).toBeLessThanOrEqual(2);
    await reader.close();

    // Incompressible 300 KiB files: every header is alone, read with a few dozen bytes around it.
    let seed = 1;
    const noise = () =>
      Buffer.from(Array.from({ length: 300 * 1024 }, () => (seed = (seed * 48271) % 2147483647) & 0xff));
    const large = Array.from({ length: 10 }, (_, i) => ({ name: `package/big${i}.bin`, content: noise() }));
    const big = countingBlobs(await zipBytes(large));
    const bigReader = await openZipBlob(big.blobs, big.sha);
    const before = { ...big.counts };
    await bigReader.verifyLocalHeaders();
    expect(big.counts.opens - before.opens).toBe(10);
    expect(big.counts.bytes - before.bytes).toBeLessThan(10 * 100);
    await bigReader.close();
  });
});

describe("hostile tgz uploads", () => {
  async function refusedTgz(source: Buffer, kind: ErrorKind, code: string, limits = DEFAULT_ARCHIVE_LIMITS) {
    const dest = tempPath(".upack");
    const error = await noFdLeak(() =>
      domainError(tgzToZipFile(Readable.from([source]), dest, limits, { prefix: "package/" }), kind, code),
    );
    expect(existsSync(dest)).toBe(false);
    return error;
  }

  it.each(["../evil", "a/../../evil", "/etc/passwd", "a\\b", "C:/x"])("refuses the path %j", async (name) => {
    const tgz = await tgzBytes([
      { header: { name: "ok.txt" }, content: "ok" },
      { header: { name }, content: "x" },
    ]);
    await refusedTgz(tgz, "invalid", "ARCHIVE_UNSAFE_PATH");
  });

  it("refuses consistently however fast the tar is parsed (no lost entry or error)", async () => {
    const symlink = await tgzBytes([{ header: { name: "passwd", type: "symlink", linkname: "/etc/passwd" } }]);
    for (let i = 0; i < 50; i++) await refusedTgz(symlink, "invalid", "ARCHIVE_LINK_ENTRY");
    for (let i = 0; i < 50; i++) await refusedTgz(Buffer.from("not gzip"), "invalid", "ARCHIVE_INVALID");
  });

  it("refuses symlinks and hard links", async () => {
    const symlink = await tgzBytes([{ header: { name: "passwd", type: "symlink", linkname: "/etc/passwd" } }]);
    await refusedTgz(symlink, "invalid", "ARCHIVE_LINK_ENTRY");
    const hardlink = await tgzBytes([{ header: { name: "passwd", type: "link", linkname: "/etc/passwd" } }]);
    await refusedTgz(hardlink, "invalid", "ARCHIVE_LINK_ENTRY");
  });

  it("refuses too many entries, too many bytes and duplicates", async () => {
    const files = Array.from({ length: 6 }, (_, i) => ({ header: { name: `f${i}` }, content: "x".repeat(300) }));
    const tgz = await tgzBytes(files);
    const limits = { ...DEFAULT_ARCHIVE_LIMITS, maxEntries: 5 };
    await refusedTgz(tgz, "too_large", "ARCHIVE_TOO_MANY_ENTRIES", limits);
    await refusedTgz(tgz, "too_large", "ARCHIVE_TOO_LARGE", { ...DEFAULT_ARCHIVE_LIMITS, maxTotalBytes: 1000 });
    await refusedTgz(tgz, "too_large", "ARCHIVE_ENTRY_TOO_LARGE", { ...DEFAULT_ARCHIVE_LIMITS, maxEntryBytes: 200 });
    const twice = await tgzBytes([{ header: { name: "a" } }, { header: { name: "./a" } }]);
    await refusedTgz(twice, "invalid", "ARCHIVE_DUPLICATE_ENTRY");
  });

  it("refuses a gzip bomb by its ratio", async () => {
    const bomb = await tgzBytes([{ header: { name: "zeros" }, content: Buffer.alloc(8 * MiB) }]);
    await refusedTgz(bomb, "too_large", "ARCHIVE_RATIO_EXCEEDED", { ...DEFAULT_ARCHIVE_LIMITS, maxRatio: 100 });
  });

  it("refuses what is not a gzipped tar, or is cut short", async () => {
    const error = await refusedTgz(Buffer.from("PK\u0003\u0004 not gzip"), "invalid", "ARCHIVE_INVALID");
    expect(error.message).toMatch(/^The archive is not a valid gzipped TAR file: /);
    const tgz = await tgzBytes([{ header: { name: "big.bin" }, content: BIG }]);
    await refusedTgz(tgz.subarray(0, tgz.length / 2), "invalid", "ARCHIVE_INVALID");
    await refusedTgz(gzipSync(Buffer.alloc(1024, "x")), "invalid", "ARCHIVE_INVALID");
  });
});

describe("checkEntryName", () => {
  it("accepts ordinary relative paths and directories", () => {
    for (const name of ["upack.json", "package/", "package/a b/ü.txt", "package/.hidden", "a..b"]) {
      expect(checkEntryName(name)).toBe(name);
    }
  });
});
