import { createHash } from "node:crypto";
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import yauzl from "yauzl";
import yazl from "yazl";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  assembleVirtualPackage,
  createAssembledCache,
  type AssemblyDeps,
} from "../../src/areas/upack/virtual/assembly.js";
import { DomainError } from "../../src/domain/errors.js";
import { formatVersion } from "../../src/domain/upack-version.js";
import { parseVirtualManifest, type VirtualManifest } from "../../src/domain/vpack.js";
import { createGuardedFetch } from "../../src/net/fetch-guard.js";
import { DEFAULT_ARCHIVE_LIMITS } from "../../src/storage/archives.js";
import type { BlobInfo, BlobStore } from "../../src/storage/blob-store.js";
import { openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";

const sha1 = (bytes: Buffer | string) => createHash("sha1").update(bytes).digest("hex");
const LOGO = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
const README = "read me\n";
const BIG = Buffer.alloc(64 * 1024, 1);

let root: string;
let tmpDir: string;
let blobs: BlobStore;
let server: Server;
let origin: string;
let hits: string[] = [];
/** `group/name:version` -> the stored package. */
const packages = new Map<string, BlobInfo>();

async function zipOf(entries: Record<string, string | Buffer>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(entries)) {
    if (name.endsWith("/")) zip.addEmptyDirectory(name);
    else zip.addBuffer(Buffer.from(content), name);
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function addPackage(id: string, entries: Record<string, string | Buffer>): Promise<void> {
  const bytes = await zipOf({ "upack.json": JSON.stringify({ name: id }), ...entries });
  packages.set(id.toLowerCase(), await blobs.put(Readable.from([bytes])));
}

/** Every entry of a stored ZIP, read back with yauzl: name -> bytes (directories: empty). */
async function readBack(info: BlobInfo): Promise<Map<string, Buffer>> {
  const stream = await blobs.open(info.sha256);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  const zip = await yauzl.fromBufferPromise(Buffer.concat(chunks), { lazyEntries: true });
  const entries = new Map<string, Buffer>();
  for await (const entry of zip.eachEntry()) {
    const parts: Buffer[] = [];
    if (!entry.fileName.endsWith("/")) {
      for await (const part of (await zip.openReadStreamPromise(entry)) as AsyncIterable<Buffer>) parts.push(part);
    }
    entries.set(entry.fileName, Buffer.concat(parts));
  }
  return entries;
}

function deps(overrides: Partial<AssemblyDeps> = {}): AssemblyDeps {
  return {
    resolvePackage: (group, name, version) => {
      const id = `${group === "" ? "" : `${group}/`}${name}:${formatVersion(version)}`;
      const found = packages.get(id.toLowerCase());
      return Promise.resolve(found && { blobSha256: found.sha256, sha1: found.sha1 });
    },
    blobs,
    fetch: createGuardedFetch({
      allowPrivate: true,
      allowLoopback: true,
      timeoutMs: 2000,
      maxBytes: 1e6,
      maxRedirects: 1,
    }),
    tmpDir,
    ...overrides,
  };
}

const vpack = (json: Record<string, unknown>): VirtualManifest =>
  parseVirtualManifest({ name: "Combined", version: "1.0.0", ...json });

async function assembleFails(manifest: VirtualManifest, kind: string, code: string, d = deps()) {
  const error: unknown = await assembleVirtualPackage(manifest, d).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DomainError);
  expect(error).toMatchObject({ kind, code });
  // Nothing half-written is left: no temporary file.
  expect(await readdir(tmpDir)).toEqual([]);
  return error as DomainError;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "wharf-vpack-"));
  tmpDir = join(root, "tmp");
  blobs = createFileBlobStore(join(root, "blobs"));
  server = http.createServer((req, res) => {
    hits.push(req.url ?? "");
    if (req.url === "/files/logo.png") res.end(LOGO);
    else if (req.url?.startsWith("/files/readme.txt")) res.end(README);
    else if (req.url === "/big.bin") res.end(BIG);
    else if (req.url === "/slow")
      res.writeHead(200).write("partial"); // never ends
    else res.writeHead(404).end("nope");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  await addPackage("HDARS.Web:1.3.9", { "package/index.htm": "<h1>web</h1>", "package/logo.gif": LOGO });
  await addPackage("grp/HDARS.API:1.3.9", { "package/cgi-bin/": "", "package/cgi-bin/api.py": "print(1)" });
  await addPackage("Other:1.0.0", {
    "package/index.htm": "other",
    "package/LOGO.GIF": "x",
    "scripts/install.ps1": "i",
  });
  await addPackage("Clash:1.0.0", { "package/index.htm/inner.txt": "dir where a file is" });
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  await rm(root, { recursive: true, force: true });
});
beforeEach(() => {
  hits = [];
});

describe("assembleVirtualPackage (docs/compat.md 1.6)", () => {
  it("assembles package and URL sources into package/, with the manifest minus contents", async () => {
    const manifest = vpack({
      title: "All of it",
      _custom: { kept: true },
      contents: [
        "HDARS.Web:1.3.9",
        { source: "grp/HDARS.API:1.3.9", targetPath: "api" },
        { virtualPath: "common/logo/logo.png", source: { url: `${origin}/files/logo.png`, hash: sha1(LOGO) } },
        `${origin}/files/readme.txt?token=secret`,
        {
          type: "virtualFile",
          virtualPath: "docs/home.htm",
          source: { name: "HDARS.Web", version: "1.3.9", packagePath: "package/index.htm" },
        },
      ],
    });
    const info = await assembleVirtualPackage(manifest, deps());
    const entries = await readBack(info);
    expect([...entries.keys()]).toEqual([
      "upack.json",
      "package/index.htm",
      "package/logo.gif",
      "package/api/cgi-bin/",
      "package/api/cgi-bin/api.py",
      "package/common/logo/logo.png",
      "package/readme.txt",
      "package/docs/home.htm",
    ]);
    expect(JSON.parse(entries.get("upack.json")?.toString() ?? "")).toEqual({
      name: "Combined",
      version: "1.0.0",
      title: "All of it",
      _custom: { kept: true },
    });
    expect(entries.get("package/logo.gif")).toEqual(LOGO);
    expect(entries.get("package/common/logo/logo.png")).toEqual(LOGO);
    expect(entries.get("package/readme.txt")?.toString()).toBe(README);
    expect(entries.get("package/api/cgi-bin/api.py")?.toString()).toBe("print(1)");
    expect(entries.get("package/docs/home.htm")?.toString()).toBe("<h1>web</h1>");
    // The returned info describes the stored bytes; the same sources give the same bytes.
    expect(await blobs.stat(info.sha256)).toEqual({ size: info.size });
    expect((await assembleVirtualPackage(manifest, deps())).sha256).toBe(info.sha256);
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it("writes metaContents at the archive root, after contents", async () => {
    const manifest = vpack({
      contents: ["HDARS.Web:1.3.9"],
      metaContents: [
        { virtualPath: "install", source: { name: "Other", version: "1.0.0", packagePath: "scripts" } },
        { type: "virtualFile", virtualPath: "notes/readme.txt", source: { url: `${origin}/files/readme.txt` } },
      ],
    });
    const entries = await readBack(await assembleVirtualPackage(manifest, deps()));
    expect([...entries.keys()].slice(3)).toEqual(["install/install.ps1", "notes/readme.txt"]);
    expect(entries.get("notes/readme.txt")?.toString()).toBe(README);
  });

  it("an assembly of no contents is just the manifest", async () => {
    const manifest = { ...vpack({ contents: ["HDARS.Web:1.3.9"] }), contents: [] };
    const entries = await readBack(await assembleVirtualPackage(manifest, deps()));
    expect([...entries.keys()]).toEqual(["upack.json"]);
    expect(Object.keys(JSON.parse(entries.get("upack.json")?.toString() ?? ""))).toEqual(["name", "version"]);
  });

  it("ignores a path that is already taken (first writer wins, ignoring case); never fetches its URL", async () => {
    const manifest = vpack({
      contents: [
        "HDARS.Web:1.3.9",
        "Other:1.0.0",
        { virtualPath: "index.htm", source: { url: `${origin}/files/readme.txt` } },
      ],
    });
    const entries = await readBack(await assembleVirtualPackage(manifest, deps()));
    expect([...entries.keys()]).toEqual(["upack.json", "package/index.htm", "package/logo.gif"]);
    expect(entries.get("package/index.htm")?.toString()).toBe("<h1>web</h1>");
    expect(entries.get("package/logo.gif")).toEqual(LOGO);
    expect(hits).toEqual([]);
  });

  it("fails when a file and a directory would share a path", async () => {
    const manifest = vpack({ contents: ["HDARS.Web:1.3.9", "Clash:1.0.0"] });
    await assembleFails(manifest, "conflict", "VPACK_PATH_CONFLICT");
  });

  it("verifies package hashes and fails on a missing package with 409", async () => {
    const web = packages.get("hdars.web:1.3.9")?.sha1 ?? "";
    const ok = vpack({ contents: [`HDARS.Web:1.3.9:${web.toUpperCase()}`] });
    expect((await readBack(await assembleVirtualPackage(ok, deps()))).size).toBe(3);

    const wrong = vpack({ contents: [{ source: { name: "HDARS.Web", version: "1.3.9", hash: "0".repeat(40) } }] });
    const mismatch = await assembleFails(wrong, "conflict", "VPACK_PACKAGE_HASH_MISMATCH");
    expect(mismatch.message).toContain("contents[0] (HDARS.Web:1.3.9)");

    const missing = vpack({ contents: ["HDARS.Web:1.3.9", "grp/Gone:2.0.0"] });
    const error = await assembleFails(missing, "conflict", "VPACK_PACKAGE_MISSING");
    expect(error.message).toContain("contents[1] (grp/Gone:2.0.0)");
  });

  it("fails on a URL hash mismatch or an upstream error status with 502", async () => {
    const badHash = vpack({
      contents: [{ virtualPath: "x.png", source: { url: `${origin}/files/logo.png`, hash: "1".repeat(40) } }],
    });
    await assembleFails(badHash, "bad_gateway", "VPACK_URL_HASH_MISMATCH");
    const gone = vpack({ contents: [`${origin}/missing.txt`] });
    const error = await assembleFails(gone, "bad_gateway", "VPACK_URL_FAILED");
    expect(error.message).toContain("404");
  });

  it("fails with 504 when a URL does not finish in time", async () => {
    const slow = vpack({ contents: [{ virtualPath: "slow.txt", source: { url: `${origin}/slow` } }] });
    const fetch = createGuardedFetch({ allowPrivate: true, timeoutMs: 200, maxBytes: 1e6, maxRedirects: 0 });
    await assembleFails(slow, "gateway_timeout", "FETCH_TIMEOUT", deps({ fetch }));
  });

  it("fails cleanly when the fetch guard refuses the URL, without connecting", async () => {
    const manifest = vpack({ contents: ["HDARS.Web:1.3.9", `${origin}/files/readme.txt`] });
    const fetch = createGuardedFetch({ allowPrivate: false, timeoutMs: 2000, maxBytes: 1e6, maxRedirects: 0 });
    const error = await assembleFails(manifest, "conflict", "FETCH_ADDRESS_REFUSED", deps({ fetch }));
    expect(error.message).toContain(`contents[1] (${origin}/files/readme.txt)`);
    expect(error.message).not.toContain("token");
    expect(hits).toEqual([]);
  });

  it("refuses asset-directory sources and URLs that name no file", async () => {
    const asset = vpack({ contents: [{ virtualPath: "a.png", source: { feed: "assets", asset: "a.png" } }] });
    await assembleFails(asset, "conflict", "VPACK_ASSET_SOURCE_UNSUPPORTED");
    await assembleFails(vpack({ contents: [`${origin}/files/`] }), "conflict", "VPACK_URL_NO_FILE_NAME");
  });

  it("enforces the entry and byte limits on the assembled package", async () => {
    const two = vpack({ contents: ["HDARS.Web:1.3.9", "grp/HDARS.API:1.3.9"] });
    // Each package has 3 entries; together with upack.json they are 5.
    const limits = { ...DEFAULT_ARCHIVE_LIMITS, maxEntries: 4 };
    await assembleFails(two, "too_large", "ARCHIVE_TOO_MANY_ENTRIES", deps({ limits }));

    const big = vpack({ contents: ["HDARS.Web:1.3.9", `${origin}/big.bin`] });
    const total = { ...DEFAULT_ARCHIVE_LIMITS, maxTotalBytes: 32 * 1024 };
    await assembleFails(big, "too_large", "ARCHIVE_TOO_LARGE", deps({ limits: total }));
    const entry = { ...DEFAULT_ARCHIVE_LIMITS, maxEntryBytes: 10_000 };
    await assembleFails(big, "too_large", "ARCHIVE_ENTRY_TOO_LARGE", deps({ limits: entry }));
    const fetch = createGuardedFetch({ allowPrivate: true, timeoutMs: 2000, maxBytes: 1000, maxRedirects: 0 });
    await assembleFails(big, "too_large", "FETCH_TOO_LARGE", deps({ fetch }));
  });
});

describe("createAssembledCache (migration 0005)", () => {
  it("finds, saves, replaces and forgets assemblies; rows go with their version", async () => {
    const db = openDatabase(join(root, "db", "wharf.db"));
    const now = "2024-01-02T03:04:05.000Z";
    db.prepare(
      "INSERT INTO feeds (id, name, feed_type, storage_key, settings, created_at, modified_at) VALUES (1, 'f', 'universal', 'k', '{}', ?, ?)",
    ).run(now, now);
    db.prepare(
      "INSERT INTO upack_packages (id, feed_id, group_name, name, group_key, name_key) VALUES (1, 1, '', 'p', '', 'p')",
    ).run();
    const addVersion = db.prepare(
      `INSERT INTO upack_versions (id, package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size, file_list, is_virtual, published_at)
       VALUES (?, 1, ?, ?, ?, '{}', 'b', 's', 1, '[]', 1, ?)`,
    );
    for (const id of [1, 2, 3]) addVersion.run(id, `${id}.0.0`, `${id}.0.0`, `${id}`, now);
    const cache = createAssembledCache(db, { now: () => new Date(now) });
    const info = { sha256: "a".repeat(64), sha1: "b".repeat(40), size: 42 };

    expect(await cache.find(1)).toBeUndefined();
    expect(await cache.save(1, info)).toEqual({
      versionId: 1,
      blobSha256: info.sha256,
      sha1: info.sha1,
      size: 42,
      assembledAt: now,
    });
    expect(await cache.find(1)).toMatchObject({ blobSha256: info.sha256, size: 42 });
    await cache.save(1, { ...info, size: 43 });
    expect((await cache.find(1))?.size).toBe(43);
    await cache.save(2, info);
    await cache.save(3, info);

    db.prepare("DELETE FROM upack_versions WHERE id = 1").run();
    expect(await cache.find(1)).toBeUndefined();
    await cache.forget(2);
    expect(await cache.find(2)).toBeUndefined();
    expect(await cache.forgetFeed(1)).toBe(1);
    expect(await cache.find(3)).toBeUndefined();
    db.close();
  });
});
