import { randomInt } from "node:crypto";
import { gzipSync } from "node:zlib";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import tar from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { rawRequest } from "../helpers/raw-http.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import {
  buildUpack,
  createUpackFixtures,
  readZip,
  renameInArchive,
  sha1Hex,
  type UpackFixtures,
} from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";
import { filesLeftInTmp } from "../helpers/temp-files.js";

/**
 * Attacks on the universal feed area (`/upack/<feed>/...`) and its Common Packages API face
 * (`/api/packages/<feed>/...`), written from an attacker's side of docs/PRODUCT.md "Security baseline":
 * traversal in every path and query parameter, hostile archives and manifests, oversized and
 * pathological bodies, header injection through names, feed-key scoping through alternate names,
 * view-only keys on every upload shape, HEAD versus GET, and isolation between feeds. Each test
 * asserts the safe outcome: a clean 4xx with a text/plain body, never a 5xx, nothing stored, no
 * data from elsewhere.
 */

let t: TestApp;
let admin: Record<string, string>;
let fixtures: UpackFixtures;

const MiB = 1024 * 1024;

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
  await fixtures.createFeed("assets", "asset");
  await createFeed({ name: "alpha", alternateNames: ["alpha-legacy"] });
  await createFeed({ name: "beta", alternateNames: ["beta-legacy"] });
  await createFeed({ name: "gamma", feedGroup: "team1" });
  await createFeed({ name: "team1" });
});
afterAll(async () => t.close());

async function createFeed(body: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: admin,
    payload: { feedType: "universal", ...body },
  });
  if (res.statusCode !== 201) throw new Error(`feed ${String(body.name)}: ${res.statusCode} ${res.body}`);
}

type Method = NonNullable<InjectOptions["method"]>;

function send(
  method: Method,
  url: string,
  payload?: InjectOptions["payload"],
  headers: Record<string, string> = admin,
): Promise<LightMyRequestResponse> {
  return t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
}

const get = (url: string, headers: Record<string, string> = admin) => send("GET", url, undefined, headers);

/** A refused request: a 4xx, plain text, and certainly no archive bytes. */
function expectRefused(res: LightMyRequestResponse, label = ""): void {
  expect(res.statusCode, `${label} ${res.statusCode} ${res.body.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
  expect(res.statusCode, `${label} ${res.body.slice(0, 200)}`).toBeLessThan(500);
  expect(res.headers["content-type"], label).toBe("text/plain");
  expect(res.rawPayload.subarray(0, 2).toString("latin1"), label).not.toBe("PK");
}

const totalVersions = async () =>
  (await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM upack_versions"))?.n;

async function versionCount(feed: string, name: string): Promise<number | undefined> {
  const row = await readOne<{ n: number }>(
    t.database,
    `SELECT count(*) AS n FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
      JOIN feeds f ON f.id = p.feed_id WHERE f.name = ? AND p.name_key = ?`,
    feed,
    name.toLowerCase(),
  );
  return row?.n;
}

/** The blobs of the package store (the data directory's, or a cluster node's object store). */
async function blobCount(): Promise<number> {
  let count = 0;
  for await (const _ of fixtures.blobs.list()) count += 1;
  return count;
}

/**
 * Whether a refused upload's blob is deleted at once: on the disk store; a cluster node deletes
 * none eagerly (another node may be storing the same bytes) and leaves it to garbage collection
 * (docs/cluster-mode.md, Blobs).
 */
const deletesBlobsAtOnce = !testsRunOnPostgres();

/** Versions, blobs and temporary files before and after: a refused upload leaves all three as they were. */
async function snapshot() {
  return { versions: await totalVersions(), blobs: await blobCount(), tmp: await filesLeftInTmp(t) };
}

async function expectNothingStored(before: Awaited<ReturnType<typeof snapshot>>): Promise<void> {
  const after = await snapshot();
  expect(after.versions).toBe(before.versions);
  if (deletesBlobsAtOnce) expect(after.blobs).toBe(before.blobs);
  expect(after.tmp).toEqual(before.tmp);
}

async function upload(feed: string, bytes: Buffer, headers: Record<string, string> = admin) {
  const res = await send("PUT", `/upack/${feed}/upload`, bytes, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { sha1: string; sha256: string };
}

// ---------------------------------------------------------------------------------------------
// Hand-made archives (yazl refuses unsafe names; these patch what it wrote)
// ---------------------------------------------------------------------------------------------

interface RawEntry {
  readonly name: string;
  readonly content?: string | Buffer;
  readonly mode?: number;
  readonly compress?: boolean;
}

async function zipOf(entries: readonly RawEntry[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const entry of entries) {
    zip.addBuffer(Buffer.from(entry.content ?? ""), entry.name, {
      mtime: new Date(Date.UTC(2024, 0, 2)),
      ...(entry.mode === undefined ? {} : { mode: entry.mode }),
      ...(entry.compress === undefined ? {} : { compress: entry.compress }),
    });
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const LOCAL = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const CENTRAL = Buffer.from([0x50, 0x4b, 0x01, 0x02]);
const END = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

/** Replaces `from` in the local file header only: the central directory keeps the harmless name. */
function renameInLocalHeader(bytes: Buffer, from: string, to: string): Buffer {
  const out = Buffer.from(bytes);
  const at = out.indexOf(Buffer.from(from));
  expect(at).toBeGreaterThan(-1);
  // The first occurrence is the local header's: all local headers precede the central directory.
  expect(out.lastIndexOf(LOCAL, at)).toBeGreaterThan(out.lastIndexOf(CENTRAL, at));
  Buffer.from(to).copy(out, at);
  return out;
}

interface CentralRecord {
  readonly start: number;
  readonly length: number;
  readonly name: string;
}

function centralDirectory(bytes: Buffer): { records: CentralRecord[]; end: number; offset: number } {
  const end = bytes.lastIndexOf(END);
  const count = bytes.readUInt16LE(end + 10);
  const offset = bytes.readUInt32LE(end + 16);
  const records: CentralRecord[] = [];
  let at = offset;
  for (let i = 0; i < count; i++) {
    expect(bytes.subarray(at, at + 4)).toEqual(CENTRAL);
    const nameLength = bytes.readUInt16LE(at + 28);
    const length = 46 + nameLength + bytes.readUInt16LE(at + 30) + bytes.readUInt16LE(at + 32);
    records.push({ start: at, length, name: bytes.subarray(at + 46, at + 46 + nameLength).toString("utf8") });
    at += length;
  }
  return { records, end, offset };
}

/**
 * The overlapping-entries zip bomb (Fifield 2019): `copies` more central-directory records that
 * all point at the local data of `entryName`, under other names of the same length. Every record
 * is honest about its sizes; only the archive as a whole expands far beyond its file size.
 */
function overlapBomb(bytes: Buffer, entryName: string, copies: number): Buffer {
  const { records, end, offset } = centralDirectory(bytes);
  const source = records.find((record) => record.name === entryName);
  if (!source) throw new Error(`no ${entryName}`);
  const extra: Buffer[] = [];
  for (let i = 0; i < copies; i++) {
    const record = Buffer.from(bytes.subarray(source.start, source.start + source.length));
    const name = `${entryName.slice(0, -5)}${String(i + 1).padStart(5, "0")}`;
    expect(name.length).toBe(entryName.length);
    Buffer.from(name).copy(record, 46);
    extra.push(record);
  }
  const directory = Buffer.concat([bytes.subarray(offset, end), ...extra]);
  const tail = Buffer.from(bytes.subarray(end));
  tail.writeUInt16LE(records.length + copies, 8);
  tail.writeUInt16LE(records.length + copies, 10);
  tail.writeUInt32LE(directory.length, 12);
  return Buffer.concat([bytes.subarray(0, offset), directory, tail]);
}

type TarHeader = Partial<tar.Header> & { name: string };

async function tgzOf(entries: ReadonlyArray<{ header: TarHeader; content?: Buffer | string }>): Promise<Buffer> {
  const pack = tar.pack();
  for (const { header, content } of entries) pack.entry(header, Buffer.from(content ?? ""));
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return gzipSync(Buffer.concat(chunks), { level: 9 });
}

/** `count` random decimal digits, the first non-zero: incompressible enough to pass the ratio checks. */
function randomDigits(count: number): string {
  const parts = ["1"];
  for (let length = 1; length < count; length += 9) parts.push(String(randomInt(100_000_000, 999_999_999)));
  return parts.join("").slice(0, count);
}

/** No extra header, then a matching If-None-Match, then a Range. */
const conditional = (sha256: string, range: string): Array<Record<string, string>> => [
  {},
  { "if-none-match": `"${sha256}"` },
  { range },
];

const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;

// ---------------------------------------------------------------------------------------------
// Traversal in every path and query parameter
// ---------------------------------------------------------------------------------------------

describe("traversal and hostile values in package paths and query arguments", () => {
  let stored: { sha1: string };
  beforeAll(async () => {
    stored = await upload(
      "main",
      await buildUpack({ group: "acme/tools", name: "app", version: "1.0.0", files: { "bin/app.sh": "echo hi" } }),
    );
  });

  const segments = [
    "..",
    "%2e%2e",
    "%2E%2E%2F",
    "..%2F..%2F..%2Fetc",
    "%252e%252e",
    "%252e%252e%252f",
    "..%5C..%5C",
    "%5C",
    "a%00b",
    "%00",
    "%C0%AE%C0%AE",
    "%EF%BC%8E%EF%BC%8E",
    "~root",
    "%2Fetc%2Fpasswd",
    "C:%5Cwindows",
    "x".repeat(3000),
  ];

  const shown = (segment: string) => (segment.length > 40 ? `x * ${segment.length}` : segment);

  // inject() resolves `..` and `%2e%2e` segments the way a browser would; the real-socket tests
  // below send them verbatim. Here they still must not reach anything but a plain-text refusal.
  it.each(segments.map((segment) => [shown(segment), segment]))(
    "the segment %s as group, name or version is a clean 4xx on every read route",
    async (_shown, segment) => {
      const tails = [
        `${segment}/app/1.0.0`,
        `acme/${segment}/app/1.0.0`,
        `acme/tools/${segment}/1.0.0`,
        `acme/tools/app/${segment}`,
        `acme/tools/app/1.0.0/${segment}`,
        `${segment}/acme/tools/app/1.0.0`,
      ];
      for (const tail of tails) {
        for (const url of [
          `/upack/main/download/${tail}`,
          `/upack/main/download/${tail}?contentOnly=tgz`,
          `/upack/main/download-file/${tail}?path=upack.json`,
          `/upack/main/download-vpack/${tail}`,
        ]) {
          expectRefused(await get(url), url);
        }
      }
      for (const query of [
        `group=${segment}&name=app&version=1.0.0`,
        `group=acme/tools&name=${segment}&version=1.0.0`,
        `group=acme/tools&name=app&version=${segment}`,
        `purl=pkg:upack/${segment}/app@1.0.0`,
        `purl=pkg:upack/acme/tools/${segment}@1.0.0`,
        `purl=pkg:upack/acme/tools/app@${segment}`,
      ]) {
        expectRefused(await get(`/api/packages/main/download?${query}`), query);
      }
    },
  );

  it("listings take hostile filters as plain values: 200 JSON or a 4xx, never another package or a 5xx", async () => {
    for (const segment of segments) {
      for (const url of [
        `/upack/main/packages?group=${segment}`,
        `/upack/main/packages?group=acme/tools&name=${segment}`,
        `/upack/main/versions?group=acme/tools&name=app&version=${segment}`,
        `/api/packages/main/versions?group=${segment}&name=app`,
        `/api/packages/main/latest?group=${segment}`,
      ]) {
        const res = await get(url);
        expect(res.statusCode, `${url} ${res.body.slice(0, 200)}`).toBeLessThan(500);
        if (res.statusCode === 200) expect(res.body, url).not.toContain('"app"');
        else expectRefused(res, url);
      }
      // A search term is free text: it may match (NUL even ends it, like an empty term), never fail.
      const search = await get(`/upack/main/search?query=${segment}`);
      expect(search.statusCode, segment).toBe(200);
    }
  });

  it("delete and upload paths with traversal delete nothing and store nothing", async () => {
    const before = await snapshot();
    const bytes = await buildUpack({ group: "acme/tools", name: "app", version: "1.0.0" });
    for (const segment of segments) {
      for (const tail of [`${segment}/app/1.0.0`, `acme/tools/${segment}/1.0.0`, `acme/tools/app/${segment}`]) {
        expectRefused(await send("POST", `/upack/main/delete/${tail}`), `delete ${tail}`);
        expectRefused(await send("DELETE", `/upack/main/delete/${tail}`), `delete ${tail}`);
        expectRefused(await send("PUT", `/upack/main/upload/${tail}`, bytes), `upload ${tail}`);
      }
      expectRefused(await send("POST", `/api/packages/main/delete?group=${segment}&name=app&version=1.0.0`), segment);
      expectRefused(await send("PUT", `/upack/main/upload?group=${segment}`, bytes), `upload group=${segment}`);
    }
    await expectNothingStored(before);
    const res = await get("/upack/main/download/acme/tools/app/1.0.0");
    expect(res.statusCode).toBe(200);
    expect(sha1Hex(res.rawPayload)).toBe(stored.sha1);
  });

  it("download-file: look-alike dots, overlong UTF-8, separators and huge paths are 4xx, never a 5xx", async () => {
    const file = (path: string) => get(`/upack/main/download-file/acme/tools/app/1.0.0?path=${path}`);
    const attempts = [
      "package%2F..%2F..%2Fupack.json",
      "package/bin/..%2F..%2Fupack.json",
      "package/bin/%252e%252e/%252e%252e/upack.json",
      "%C0%AE%C0%AE/upack.json",
      "%EF%BC%8E%EF%BC%8E/upack.json",
      "package/bin/app.sh%00.txt",
      "package/bin/app.sh%0D%0ASet-Cookie:%20x=y",
      "package/%E2%80%A8",
      "%",
      "%25",
      "package/bin/app.sh/",
      `${"a/".repeat(20_000)}b`,
      "x".repeat(100_000),
    ];
    for (const path of attempts) {
      const res = await file(path);
      expectRefused(res, path);
      expect(res.headers["set-cookie"]).toBeUndefined();
    }
    // Only the first value of a repeated `path` is used, and it is the one that was checked.
    const twice = await file("package/bin/app.sh&path=../upack.json&PATH=/etc/passwd");
    expect(twice.statusCode).toBe(200);
    expect(twice.body).toBe("echo hi");
    expectRefused(await file("../upack.json&path=package/bin/app.sh"), "evil first");
  });

  it("a feed name of thousands of characters, or made of traversal, is a plain-text 4xx", async () => {
    for (const feed of ["x".repeat(5000), "..", "%2e%2e", "main%00", "main%2F..%2Fother", "%5Cmain"]) {
      for (const url of [
        `/upack/${feed}/download/acme/tools/app/1.0.0`,
        `/upack/${feed}/packages`,
        `/api/packages/${feed}/download?group=acme/tools&name=app&version=1.0.0`,
      ]) {
        expectRefused(await get(url), url);
      }
      expectRefused(await send("PUT", `/upack/${feed}/upload`, Buffer.from("PK")), feed);
    }
  });

  it("a version of thousands of digits in a download path is a plain 400 (too long), answered quickly", async () => {
    const started = Date.now();
    const digits = randomDigits(10_000);
    expectText(await get(`/upack/main/download/acme/tools/app/1.0.${digits}`), 400, "longer than 128 characters");
    expectText(await get(`/api/packages/main/download?group=acme/tools&name=app&version=${digits}.0.0`), 400);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

// ---------------------------------------------------------------------------------------------
// Hostile .upack uploads
// ---------------------------------------------------------------------------------------------

describe("hostile .upack uploads are refused and leave nothing behind", () => {
  const manifest = JSON.stringify({ name: "hostile", version: "1.0.0" });

  const unsafeNames = [
    "../../../../tmp/pwned.sh",
    "package/../../evil.sh",
    "/etc/cron.d/evil",
    "package\\..\\..\\evil",
    "C:/Windows/evil.dll",
    "package/./evil.sh",
    "package//evil.sh",
    "package/evil\r\nX: y",
    "package/evil\u0000.sh",
    "package/tab\tname",
    "package/del\u007fname",
  ];

  it.each(unsafeNames)("an entry named %j (zip-slip or control characters)", async (name) => {
    const standIn = "Z".repeat(Buffer.byteLength(name));
    const bytes = renameInArchive(
      await zipOf([
        { name: "upack.json", content: manifest },
        { name: standIn, content: "pwn" },
      ]),
      standIn,
      name,
    );
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 400, /refused|not a valid ZIP/);
    expectText(await send("PUT", "/api/packages/main/upload/hostile.upack", bytes), 400);
    await expectNothingStored(before);
  });

  it("a symbolic link entry, also hidden under package/ with a harmless name", async () => {
    const before = await snapshot();
    for (const target of ["/etc/passwd", "../../../.ssh/authorized_keys"]) {
      const bytes = await zipOf([
        { name: "upack.json", content: manifest },
        { name: "package/readme.txt", content: target, mode: 0o120777 },
      ]);
      expectText(await send("PUT", "/upack/main/upload", bytes), 400, "symbolic link");
      expectText(await send("PUT", "/api/packages/main/upload", bytes), 400, "symbolic link");
    }
    await expectNothingStored(before);
  });

  it("two upack.json entries (which one would a client read?)", async () => {
    const other = JSON.stringify({ name: "innocent", version: "9.9.9" });
    const bytes = renameInArchive(
      await zipOf([
        { name: "upack.json", content: manifest },
        { name: "upack.jsoX", content: other },
      ]),
      "upack.jsoX",
      "upack.json",
    );
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 400, "more than one entry");
    await expectNothingStored(before);
  });

  it("a central directory that lies about upack.json's size, offset or entry count", async () => {
    const honest = await zipOf([
      { name: "upack.json", content: JSON.stringify({ name: "liar", version: "1.0.0", description: "d".repeat(500) }) },
      { name: "package/a.txt", content: "a" },
    ]);
    const { records, end } = centralDirectory(honest);
    const first = records[0] as CentralRecord;
    const lies: Array<[string, (bytes: Buffer) => void]> = [
      ["uncompressed size too small", (b) => b.writeUInt32LE(20, first.start + 24)],
      ["uncompressed size too large", (b) => b.writeUInt32LE(3_000_000, first.start + 24)],
      ["compressed size past the end", (b) => b.writeUInt32LE(0x7fffffff, first.start + 20)],
      ["local header offset past the end", (b) => b.writeUInt32LE(0x7fffffff, first.start + 42)],
      ["local header offset into the directory", (b) => b.writeUInt32LE(first.start, first.start + 42)],
      ["more entries than there are", (b) => (b.writeUInt16LE(60_000, end + 8), b.writeUInt16LE(60_000, end + 10))],
      ["a directory offset past the end", (b) => b.writeUInt32LE(0x7ffffff0, end + 16)],
    ];
    const before = await snapshot();
    for (const [label, lie] of lies) {
      const bytes = Buffer.from(honest);
      lie(bytes);
      const res = await send("PUT", "/upack/main/upload", bytes);
      expectRefused(res, label);
      expect([400, 413], `${label}: ${res.body}`).toContain(res.statusCode);
    }
    await expectNothingStored(before);
  });

  it("an overlapping-entries zip bomb: every record honest, the archive as a whole ~16 000 times larger", async () => {
    const base = await zipOf([
      { name: "upack.json", content: manifest },
      { name: "package/bomb-00000", content: Buffer.alloc(MiB) },
    ]);
    const bytes = overlapBomb(base, "package/bomb-00000", 2_000);
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 413, "expands more than");
    expectText(await send("PUT", "/api/packages/main/upload", bytes), 413, "expands more than");
    await expectNothingStored(before);
  });

  it("a local file header whose name disagrees with the central directory (zip-slip for streaming extractors)", async () => {
    const evil = "../../../../../../tmp/pwned.sh";
    const standIn = `package/${"a".repeat(evil.length - "package/".length - 3)}.sh`;
    const bytes = renameInLocalHeader(
      await zipOf([
        { name: "upack.json", content: manifest },
        { name: standIn, content: "#!/bin/sh\necho pwned" },
      ]),
      standIn,
      evil,
    );
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 400, "local file header");
    expectText(await send("PUT", "/api/packages/main/upload", bytes), 400, "local file header");
    await expectNothingStored(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Bombs and traps through the plain-archive conversion path
// ---------------------------------------------------------------------------------------------

describe("plain ZIP and TGZ conversion: bombs and traps", () => {
  it("a zip bomb with name and version is refused before anything is expanded or stored", async () => {
    const bytes = await zipOf([{ name: "zeros.bin", content: Buffer.alloc(64 * MiB) }]);
    expect(bytes.length).toBeLessThan(MiB);
    const before = await snapshot();
    const started = Date.now();
    expectText(await send("PUT", "/upack/main/upload?name=zbomb&version=1.0.0", bytes), 413, "zip bomb");
    const form = `name=zbomb&version=1.0.0&content-b64=${encodeURIComponent(bytes.toString("base64"))}`;
    expectText(
      await send("POST", "/upack/main/upload", form, { ...admin, "content-type": "application/x-www-form-urlencoded" }),
      413,
    );
    expect(Date.now() - started).toBeLessThan(10_000);
    await expectNothingStored(before);
  });

  it("the overlapping-entries bomb as a plain ZIP", async () => {
    const base = await zipOf([
      { name: "a.txt", content: "a" },
      { name: "bomb-00000", content: Buffer.alloc(MiB) },
    ]);
    const before = await snapshot();
    const res = await send(
      "PUT",
      "/upack/main/upload?name=obomb&version=1.0.0",
      overlapBomb(base, "bomb-00000", 2_000),
    );
    expectText(res, 413);
    await expectNothingStored(before);
  });

  it("a bomb already in storage (stored before the limits, or by other means) is refused on every read path", async () => {
    const base = await zipOf([
      { name: "upack.json", content: JSON.stringify({ name: "stored-bomb", version: "1.0.0" }) },
      { name: "package/bomb-00000", content: Buffer.alloc(MiB) },
    ]);
    const bytes = overlapBomb(base, "package/bomb-00000", 2_000);
    await createUpackFixtures(t).addVersion("main", { name: "stored-bomb", version: "1.0.0" }, { bytes });
    // The package file itself is served unchanged, as stored.
    const whole = await get("/upack/main/download/stored-bomb/1.0.0");
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(bytes)).toBe(true);
    // Anything that would open it refuses before a header is sent.
    for (const url of [
      "/upack/main/download/stored-bomb/1.0.0?contentOnly=zip",
      "/upack/main/download/stored-bomb/1.0.0?contentOnly=tgz",
      "/upack/main/download-file/stored-bomb/1.0.0?path=package/bomb-00001",
    ]) {
      expectText(await get(url), 413, "expands more than");
    }
    const virtual = JSON.stringify({ name: "from-bomb", version: "1.0.0", contents: ["stored-bomb:1.0.0"] });
    expect((await send("PUT", "/upack/main/upload", virtual)).statusCode).toBe(201);
    expectText(await get("/upack/main/download/from-bomb/1.0.0"), [409, 413]);
  });

  it("a tgz bomb is cut off by its ratio while streaming; no temporary file is left", async () => {
    const bytes = await tgzOf([{ header: { name: "zeros.bin", size: 128 * MiB }, content: Buffer.alloc(128 * MiB) }]);
    expect(bytes.length).toBeLessThan(MiB);
    const before = await snapshot();
    const started = Date.now();
    expectText(await send("PUT", "/upack/main/upload?name=tbomb&version=1.0.0", bytes), 413, /expands more than/);
    expect(Date.now() - started).toBeLessThan(10_000);
    await expectNothingStored(before);
  });

  it("a tgz through the Common Packages API is refused before it is expanded (no metadata there)", async () => {
    const bytes = await tgzOf([{ header: { name: "zeros.bin", size: 128 * MiB }, content: Buffer.alloc(128 * MiB) }]);
    const before = await snapshot();
    expectText(await send("PUT", "/api/packages/main/upload/bomb.tgz", bytes), 400, "upack.json not found");
    await expectNothingStored(before);
  });

  const tarTraps: Array<[string, Array<{ header: TarHeader; content?: string }>, RegExp]> = [
    ["a symlink", [{ header: { name: "readme.txt", type: "symlink", linkname: "/etc/passwd" } }], /symlink/],
    [
      "a hard link to an earlier file",
      [
        { header: { name: "a.txt" }, content: "a" },
        { header: { name: "b.txt", type: "link", linkname: "../../../etc/shadow" } },
      ],
      /link/,
    ],
    ["a character device", [{ header: { name: "tty", type: "character-device", devmajor: 4, devminor: 1 } }], /device/],
    ["a fifo", [{ header: { name: "pipe", type: "fifo" } }], /fifo/],
    [
      "a pax path override with '..'",
      [{ header: { name: "ok.txt", pax: { path: "../../escape.txt" } }, content: "x" }],
      /'\.\.'/,
    ],
    [
      "a GNU long name with '..'",
      [
        {
          header: {
            name: `${"d/".repeat(60)}../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../../x`,
          },
          content: "x",
        },
      ],
      /'\.\.'/,
    ],
    ["an absolute name", [{ header: { name: "/etc/cron.d/evil" }, content: "x" }], /absolute/],
    ["a CR/LF in a name", [{ header: { name: "evil\r\nSet-Cookie: x.txt" }, content: "x" }], /control character/],
    [
      "the same file twice",
      [
        { header: { name: "a.txt" }, content: "a" },
        { header: { name: "./a.txt" }, content: "b" },
      ],
      /more than one entry/,
    ],
  ];

  it.each(tarTraps)("a tgz with %s: 400, nothing stored", async (_label, entries, message) => {
    const bytes = await tgzOf(entries);
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload?name=trap&version=1.0.0", bytes), 400, message);
    await expectNothingStored(before);
  });

  it("a gzip stream that is not a tar, is cut short, or hides trailing garbage: a clean 400", async () => {
    const valid = await tgzOf([{ header: { name: "a.txt" }, content: "a" }]);
    const before = await snapshot();
    for (const bytes of [
      gzipSync(Buffer.from("this is not a tar archive at all ".repeat(100))),
      valid.subarray(0, valid.length - 12),
      Buffer.concat([valid.subarray(0, 20), Buffer.alloc(200, 0xff)]),
    ]) {
      expectText(await send("PUT", "/upack/main/upload?name=gztrash&version=1.0.0", bytes), 400);
    }
    await expectNothingStored(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Manifests and metadata: size, depth, prototype keys
// ---------------------------------------------------------------------------------------------

describe("hostile manifests and metadata", () => {
  const plainZip = () => zipOf([{ name: "a.txt", content: "A" }]);
  const form = { "content-type": "application/x-www-form-urlencoded" };

  it("__proto__ and constructor keys in upack.json are kept as data; nothing is polluted", async () => {
    const text =
      '{"name":"proto","version":"1.0.0","__proto__":{"polluted":"yes","isAdmin":true},' +
      '"constructor":{"prototype":{"polluted":"yes"}},"hasOwnProperty":"x","toString":"y","valueOf":1}';
    const res = await send("PUT", "/upack/main/upload", await zipOf([{ name: "upack.json", content: text }]));
    expect(res.statusCode, res.body).toBe(201);
    for (const url of [
      "/upack/main/packages",
      "/upack/main/packages?name=proto",
      "/upack/main/versions?name=proto",
      "/upack/main/versions?name=proto&version=1.0.0",
      "/upack/main/search?query=proto",
      "/api/packages/main/versions?name=proto",
    ]) {
      const listing = await get(url);
      expect(listing.statusCode, `${url} ${listing.body.slice(0, 200)}`).toBe(200);
      expect(() => JSON.parse(listing.body) as unknown).not.toThrow();
    }
    const one = JSON.parse((await get("/upack/main/versions?name=proto&version=1.0.0")).body) as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(one)).toBe(Object.prototype);
    expect(Object.hasOwn(one, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  });

  it("__proto__ and constructor in JSON bodies are refused; in forms and queries they pollute nothing", async () => {
    const b64 = (await plainZip()).toString("base64");
    for (const body of [
      `{"name":"pj","version":"1.0.0","content-b64":"${b64}","__proto__":{"polluted":"yes"}}`,
      `{"name":"pj","version":"1.0.0","content-b64":"${b64}","constructor":{"prototype":{"polluted":"yes"}}}`,
    ]) {
      expectText(await send("POST", "/upack/main/upload", body, { ...admin, "content-type": "application/json" }), 400);
    }
    const formBody =
      `name=pf&version=1.0.0&content-b64=${encodeURIComponent(b64)}` +
      "&__proto__=x&__proto__[polluted]=yes&constructor[prototype][polluted]=yes&__proto__.polluted=yes";
    const fromForm = await send("POST", "/upack/main/upload", formBody, { ...admin, ...form });
    expect(fromForm.statusCode, fromForm.body).toBeLessThan(500);
    const fromQuery = await send(
      "PUT",
      "/upack/main/upload?name=pq&version=1.0.0&__proto__[polluted]=yes&constructor=x&hasOwnProperty=y&toString=z",
      await plainZip(),
    );
    expect(fromQuery.statusCode, fromQuery.body).toBeLessThan(500);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const listing = await get("/upack/main/packages");
    expect(listing.statusCode).toBe(200);
  });

  it("an upack.json over the 4 MiB manifest limit is refused without being read whole", async () => {
    const description = randomDigits(5 * MiB);
    const bytes = await zipOf([
      { name: "upack.json", content: JSON.stringify({ name: "huge", version: "1.0.0", description }) },
    ]);
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 413, "larger than");
    await expectNothingStored(before);
  });

  it("a .vpack body over the manifest limit, or not JSON after all: 400", async () => {
    const before = await snapshot();
    const big = `{"name":"v","version":"1.0.0","contents":["a:1.0.0"],"_pad":"${randomDigits(5 * MiB)}"}`;
    expectText(await send("PUT", "/upack/main/upload", big), 400, "must be under");
    expectText(await send("PUT", "/upack/main/upload", `{${"x".repeat(1000)}`), 400);
    await expectNothingStored(before);
  });

  it("a deeply nested upack.json is a 400, not a 500", async () => {
    const text = `{"name":"deep","version":"1.0.0","_x":${nested(100_000)}}`;
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", await zipOf([{ name: "upack.json", content: text }])), 400);
    await expectNothingStored(before);
  });

  it("a deeply nested .vpack body is a 400, not a 500", async () => {
    const text = `{"name":"deepv","version":"1.0.0","contents":["a:1.0.0"],"_x":${nested(100_000)}}`;
    expectText(await send("PUT", "/upack/main/upload", text), 400);
  });

  it("deeply nested JSON metadata is a 400, not a 500", async () => {
    const b64 = (await plainZip()).toString("base64");
    const body = `{"name":"deepj","version":"1.0.0","content-b64":"${b64}","_x":${nested(100_000)}}`;
    const before = await snapshot();
    expectText(await send("POST", "/upack/main/upload", body, { ...admin, "content-type": "application/json" }), 400);
    await expectNothingStored(before);
  });

  it("metadata that would make an upack.json over the 4 MiB manifest limit is refused", async () => {
    const description = randomDigits(6 * MiB);
    const body = `name=fat&version=1.0.0&content-b64=${encodeURIComponent((await plainZip()).toString("base64"))}&description=${description}`;
    const before = await snapshot();
    const res = await send("POST", "/upack/main/upload", body, { ...admin, ...form });
    expectText(res, [400, 413]);
    await expectNothingStored(before);
  });

  it("a version of a million digits is refused", async () => {
    const bytes = await zipOf([
      { name: "upack.json", content: JSON.stringify({ name: "bigver", version: `1.0.${randomDigits(1_000_000)}` }) },
    ]);
    const before = await snapshot();
    expectText(await send("PUT", "/upack/main/upload", bytes), 400);
    await expectNothingStored(before);
  });

  it("an anonymous deeply nested JSON body is refused with 401 without being parsed (larger than a body read before its sender is known)", async () => {
    const body = `{"name":"anon","version":"1.0.0","_x":${nested(100_000)}}`;
    for (const url of ["/upack/main/upload", "/upack/main", "/upack/main/delete/anon/1.0.0"]) {
      expectText(await send("POST", url, body, { "content-type": "application/json" }), 401);
    }
  });

  it("a JSON or form body past the 64 MiB in-memory limit is a 413 before it is parsed", async () => {
    const before = await snapshot();
    const huge = "A".repeat(64 * MiB + 1024);
    expectText(
      await send("POST", "/upack/main/upload", `name=x&version=1.0.0&content-b64=${huge}`, { ...admin, ...form }),
      413,
    );
    expectText(
      await send("POST", "/upack/main/upload", `{"name":"x","version":"1.0.0","content-b64":"${huge}"}`, {
        ...admin,
        "content-type": "application/json",
      }),
      413,
    );
    await expectNothingStored(before);
  });

  it("content-b64 of garbage, of a non-archive, or decoding past the upload limit: clean 4xx", async () => {
    const before = await snapshot();
    for (const value of ["====", "A", "%%%%", "AAAA".repeat(10), Buffer.from("<html>").toString("base64")]) {
      const body = `name=b64&version=1.0.0&content-b64=${encodeURIComponent(value)}`;
      expectRefused(await send("POST", "/upack/main/upload", body, { ...admin, ...form }), value);
    }
    await expectNothingStored(before);
  });

  it("a form with 20 000 fields is answered promptly, with no 5xx", async () => {
    const fields = Array.from({ length: 20_000 }, (_, i) => `_f${i}=v${i}`).join("&");
    const tags = Array.from({ length: 20_000 }, (_, i) => `tags=t${i}`).join("&");
    const b64 = encodeURIComponent((await plainZip()).toString("base64"));
    const started = Date.now();
    const many = await send("POST", "/upack/main/upload", `name=many&version=1.0.0&content-b64=${b64}&${fields}`, {
      ...admin,
      ...form,
    });
    expect(many.statusCode, many.body.slice(0, 200)).toBeLessThan(500);
    const repeated = await send("POST", "/upack/main/upload", `name=tagged&version=1.0.0&content-b64=${b64}&${tags}`, {
      ...admin,
      ...form,
    });
    expect(repeated.statusCode, repeated.body.slice(0, 200)).toBeLessThan(500);
    const conflicting = await send(
      "POST",
      "/upack/main/upload",
      `name=many2&content-b64=${b64}&${Array.from({ length: 20_000 }, (_, i) => `version=1.0.${i}`).join("&")}`,
      { ...admin, ...form },
    );
    expectText(conflicting, 400, "more than once");
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("digest headers of absurd length or shape are a 400, not a 5xx", async () => {
    const bytes = await buildUpack({ name: "digests", version: "1.0.0" });
    const headerSets: Array<Record<string, string>> = [
      { "x-checksum-sha256": "a".repeat(8000) },
      { digest: `SHA-256=${"A".repeat(8000)}` },
      { "content-digest": `sha-256=:${"A".repeat(8000)}:` },
      { "content-digest": "sha-256=::::::" },
      { digest: "sha=,,,,,,,,,,,,=,=,=" },
    ];
    for (const headers of headerSets) {
      expectText(await send("PUT", "/upack/main/upload", bytes, { ...admin, ...headers }), 400);
    }
    expect(await versionCount("main", "digests")).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------
// Header injection through names
// ---------------------------------------------------------------------------------------------

describe("names that reach response headers", () => {
  const hostile = [
    'quote"d;filename=evil.exe.txt',
    "naïve ünïcödé ✓.txt",
    "latin1-\u00e9t\u00e9.txt",
    "sep\u2028arator.txt",
    "semi;colon,comma 'apos' (paren)*star.txt",
    "back`tick$dollar&amp.html",
  ];
  /** Legal in a zip, but percent-decoding its path once more gives CR/LF: refused by design (download/path.ts). */
  const encodedCrLf = "x%0D%0ASet-Cookie: a=b.txt";
  beforeAll(async () => {
    const files = Object.fromEntries([...hostile, encodedCrLf].map((name) => [name, `content of ${name}`]));
    await upload("main", await buildUpack({ name: "headers", version: "1.0.0", files }));
  });

  const SAFE_DISPOSITION =
    /^attachment; filename="[\x20\x21\x23-\x5b\x5d-\x7e]*"(; filename\*=UTF-8''[A-Za-z0-9%!#$&+.^_`|~-]*)?$/;

  it.each(hostile)(
    "download-file of %j: one ASCII Content-Disposition, the name intact, no injected header",
    async (name) => {
      for (const method of ["GET", "HEAD"] as const) {
        const res = await send(
          method,
          `/upack/main/download-file/headers/1.0.0?path=${encodeURIComponent(`package/${name}`)}`,
        );
        expect(res.statusCode, res.body).toBe(200);
        const disposition = String(res.headers["content-disposition"]);
        expect(disposition).toMatch(SAFE_DISPOSITION);
        const star = /filename\*=UTF-8''(.*)$/.exec(disposition)?.[1];
        expect(star === undefined ? /filename="(.*)"/.exec(disposition)?.[1] : decodeURIComponent(star)).toBe(name);
        expect(res.headers["set-cookie"]).toBeUndefined();
        expect(res.headers["x-content-type-options"]).toBe("nosniff");
        if (method === "GET") expect(res.body).toBe(`content of ${name}`);
      }
    },
  );

  it("a stored name whose path decodes to CR/LF is refused on download-file, and never becomes a header", async () => {
    const res = await get(
      `/upack/main/download-file/headers/1.0.0?path=${encodeURIComponent(`package/${encodedCrLf}`)}`,
    );
    expectText(res, 400, "control character");
    expect(res.headers["set-cookie"]).toBeUndefined();
  });

  it("active content from download-file is an attachment with nosniff, never rendered inline", async () => {
    const res = await get(
      `/upack/main/download-file/headers/1.0.0?path=${encodeURIComponent("package/back`tick$dollar&amp.html")}`,
    );
    expect(res.statusCode).toBe(200);
    expect(String(res.headers["content-disposition"])).toMatch(/^attachment;/);
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("contentOnly archives of those names stream whole (zip and tgz)", async () => {
    const zip = await get("/upack/main/download/headers/1.0.0?contentOnly=zip");
    expect(zip.statusCode).toBe(200);
    expect([...(await readZip(zip.rawPayload)).keys()].sort()).toEqual([...hostile, encodedCrLf].sort());
    const tgz = await get("/upack/main/download/headers/1.0.0?contentOnly=tgz");
    expect(tgz.statusCode).toBe(200);
  });

  it("package names and versions that could break a header never get stored", async () => {
    const zip = await zipOf([{ name: "a.txt", content: "a" }]);
    const before = await snapshot();
    for (const query of [
      'name=a"b&version=1.0.0',
      "name=a%0D%0ASet-Cookie:x&version=1.0.0",
      "name=ok&version=1.0.0%0D%0AX:y",
      "name=ok&version=1.0.0+a%22b",
      "name=%C3%A9t%C3%A9&version=1.0.0",
      "name=ok&group=a%0Ab&version=1.0.0",
    ]) {
      expectText(await send("PUT", `/upack/main/upload?${query}`, zip), 400);
    }
    await expectNothingStored(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Feed keys, alternate names and case
// ---------------------------------------------------------------------------------------------

describe("a feed key stays on its feed, whatever name or case the URL uses", () => {
  let alphaKey: Record<string, string>;
  beforeAll(async () => {
    await upload("alpha", await buildUpack({ name: "apkg", version: "1.0.0" }));
    await upload("beta", await buildUpack({ name: "bpkg", version: "1.0.0" }));
    alphaKey = { "x-apikey": await createFeedKey(t.database, "alpha", ["view", "add", "delete"]) };
  });

  const routes = (feed: string, name: string) => [
    `/upack/${feed}/packages`,
    `/upack/${feed}/versions?name=${name}`,
    `/upack/${feed}/meta`,
    `/upack/${feed}/search?query=${name}`,
    `/upack/${feed}/download/${name}/1.0.0`,
    `/upack/${feed}/download/${name}?latest&contentOnly=zip`,
    `/upack/${feed}/download-file/${name}/1.0.0?path=upack.json`,
    `/api/packages/${feed}`,
    `/api/packages/${feed}/latest`,
    `/api/packages/${feed}/versions`,
    `/api/packages/${feed}/download?name=${name}&version=1.0.0`,
  ];

  it("reaches its own feed by canonical name, alternate name and any case", async () => {
    for (const feed of ["alpha", "ALPHA", "Alpha", "alpha-legacy", "ALPHA-LEGACY"]) {
      for (const url of routes(feed, "apkg")) expect((await get(url, alphaKey)).statusCode, url).toBe(200);
    }
  });

  it("never reaches another feed by its name, its alternate name or any case, on any route or method", async () => {
    const bytes = await buildUpack({ name: "bpkg", version: "6.6.6" });
    for (const feed of ["beta", "BETA", "bEtA", "beta-legacy", "BETA-LEGACY", "Beta-Legacy"]) {
      for (const url of routes(feed, "bpkg")) expectText(await get(url, alphaKey), 403, PERMISSION_DENIED_MESSAGE);
      for (const url of [`/upack/${feed}`, `/upack/${feed}/upload`, `/upack/${feed}/upload/bpkg/6.6.6`]) {
        expectText(await send("PUT", url, bytes, alphaKey), 403);
        expectText(await send("POST", url, bytes, alphaKey), 403);
      }
      expectText(await send("PUT", `/api/packages/${feed}/upload/b.upack`, bytes, alphaKey), 403);
      expectText(await send("DELETE", `/upack/${feed}/delete/bpkg/1.0.0`, undefined, alphaKey), 403);
      expectText(await send("POST", `/api/packages/${feed}/delete?name=bpkg&version=1.0.0`, undefined, alphaKey), 403);
    }
    expect(await versionCount("beta", "bpkg")).toBe(1);
  });

  it("a feed-group key reaches feeds of its group, not a feed that merely has the group's name", async () => {
    await upload("gamma", await buildUpack({ name: "gpkg", version: "1.0.0" }));
    await upload("team1", await buildUpack({ name: "tpkg", version: "1.0.0" }));
    const groupKey = { "x-apikey": await createFeedKey(t.database, { group: "team1" }, ["view"]) };
    expect((await get("/upack/gamma/download/gpkg/1.0.0", groupKey)).statusCode).toBe(200);
    expect((await get("/upack/GAMMA/packages", groupKey)).statusCode).toBe(200);
    expectText(await get("/upack/team1/download/tpkg/1.0.0", groupKey), 403);
    expectText(await get("/upack/TEAM1/packages", groupKey), 403);
  });

  it("a key in the body cannot override a weaker key in a header (no most-privileged-wins merging)", async () => {
    const viewer = await createFeedKey(t.database, "main", ["view"]);
    const b64 = (await zipOf([{ name: "a.txt", content: "a" }])).toString("base64");
    const before = await snapshot();
    const json = await send(
      "POST",
      "/upack/main/upload",
      JSON.stringify({ API_Key: t.adminKey, name: "merge", version: "1.0.0", "content-b64": b64 }),
      {
        "x-apikey": viewer,
        "content-type": "application/json",
      },
    );
    expectText(json, 403);
    const formed = await send(
      "POST",
      `/upack/main/upload?key=${t.adminKey}`,
      `name=merge&version=1.0.0&content-b64=${encodeURIComponent(b64)}`,
      {
        "x-apikey": viewer,
        "content-type": "application/x-www-form-urlencoded",
      },
    );
    expectText(formed, 403);
    await expectNothingStored(before);
  });
});

// ---------------------------------------------------------------------------------------------
// View-only credentials on every upload and delete shape
// ---------------------------------------------------------------------------------------------

describe("view-only credentials never write, whatever the upload shape", () => {
  let bytes: Buffer;
  let viewKey: string;
  beforeAll(async () => {
    bytes = await buildUpack({ name: "viewonly", version: "1.0.0" });
    viewKey = await createFeedKey(t.database, "main", ["view"]);
    const viewer = await createUser(t.database, "view-user", "view-pass");
    await grant(t.database, { user: viewer, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "main" });
  });

  const carriers = (): Array<[string, Record<string, string>, string]> => [
    ["X-ApiKey", { "x-apikey": viewKey }, ""],
    ["X-ProGet-ApiKey", { "x-proget-apikey": viewKey }, ""],
    ["Basic api:<key>", basic("api", viewKey), ""],
    ["Basic user", basic("view-user", "view-pass"), ""],
    ["X-ApiKey user:password", { "x-apikey": "view-user:view-pass" }, ""],
    ["?key=", {}, `key=${viewKey}`],
    ["?API_KEY=", {}, `API_KEY=${viewKey}`],
  ];

  it("raw bodies: bare feed URL, upload, upload/<id>, Common Packages API: 403 for every carrier", async () => {
    const before = await snapshot();
    for (const [label, headers, query] of carriers()) {
      const q = query === "" ? "" : `?${query}`;
      for (const method of ["PUT", "POST"] as const) {
        for (const url of [
          `/upack/main${q}`,
          `/upack/main/${q}`,
          `/upack/main/upload${q}`,
          `/upack/main/upload/viewonly/1.0.0${q}`,
          `/upack/MAIN/upload${q}`,
          `/api/packages/main/upload${q}`,
          `/api/packages/main/upload/viewonly.upack${q}`,
        ]) {
          const res = await send(method, url, bytes, { ...headers, "content-type": "application/zip" });
          expect(res.statusCode, `${label} ${method} ${url}`).toBe(403);
          expectText(res, 403, PERMISSION_DENIED_MESSAGE);
        }
      }
    }
    await expectNothingStored(before);
  });

  it("JSON and form bodies, with the key in the header, the query or the body: 403", async () => {
    const b64 = bytes.toString("base64");
    const before = await snapshot();
    for (const url of ["/upack/main", "/upack/main/upload"]) {
      expectText(await send("POST", url, { "content-b64": b64 }, { "x-apikey": viewKey }), 403);
      expectText(await send("POST", url, { API_Key: viewKey, "content-b64": b64 }, {}), 403);
      expectText(
        await send("POST", url, `key=${viewKey}&content-b64=${encodeURIComponent(b64)}`, {
          "content-type": "application/x-www-form-urlencoded",
        }),
        403,
      );
      expectText(
        await send("PUT", `${url}?key=${viewKey}`, `content-b64=${encodeURIComponent(b64)}`, {
          "content-type": "application/x-www-form-urlencoded",
        }),
        403,
      );
    }
    await expectNothingStored(before);
  });

  it("deletes on both APIs: 403, and the package stays", async () => {
    await upload("main", bytes);
    for (const [, headers, query] of carriers()) {
      const q = query === "" ? "" : `&${query}`;
      const qq = query === "" ? "" : `?${query}`;
      expectText(await send("DELETE", `/upack/main/delete/viewonly/1.0.0${qq}`, undefined, headers), 403);
      expectText(await send("POST", `/upack/main/delete/viewonly/1.0.0${qq}`, undefined, headers), 403);
      expectText(
        await send("POST", `/api/packages/main/delete?name=viewonly&version=1.0.0${q}`, undefined, headers),
        403,
      );
      expectText(
        await send("DELETE", `/api/packages/main/delete?purl=pkg:upack/viewonly@1.0.0${q}`, undefined, headers),
        403,
      );
    }
    expect(await versionCount("main", "viewonly")).toBe(1);
  });
});

// ---------------------------------------------------------------------------------------------
// HEAD versus GET
// ---------------------------------------------------------------------------------------------

describe("HEAD is authorised exactly like GET", () => {
  let viewOnly: Record<string, string>;
  let stranger: Record<string, string>;
  beforeAll(async () => {
    await upload("main", await buildUpack({ name: "headed", version: "1.0.0" }));
    await send(
      "PUT",
      "/upack/main/upload",
      JSON.stringify({ name: "headed-virtual", version: "1.0.0", contents: ["headed:1.0.0"] }),
    );
    const userId = await createUser(t.database, "list-only", "list-pass");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "main" });
    viewOnly = basic("list-only", "list-pass");
    stranger = { "x-apikey": await createFeedKey(t.database, "other", ["view", "add", "delete"]) };
  });

  const downloads = [
    "/upack/main/download/headed/1.0.0",
    "/upack/main/download/headed?latest",
    "/upack/main/download/headed/1.0.0?contentOnly=zip",
    "/upack/main/download/headed/1.0.0?contentOnly=tgz",
    "/upack/main/download-file/headed/1.0.0?path=upack.json",
    "/upack/main/download-vpack/headed-virtual/1.0.0",
    "/api/packages/main/download?name=headed&version=1.0.0",
  ];
  const listings = [
    "/upack/main/packages",
    "/upack/main/versions?name=headed",
    "/upack/main/search?query=headed",
    "/upack/main/meta",
    "/api/packages/main",
    "/api/packages/main/latest",
    "/api/packages/main/versions",
  ];

  it("anonymous: 401 with a challenge on HEAD as on GET, for downloads and listings", async () => {
    for (const url of [...downloads, ...listings]) {
      for (const method of ["GET", "HEAD"] as const) {
        const res = await send(method, url, undefined, {});
        expect(res.statusCode, `${method} ${url}`).toBe(401);
        expect(res.headers["www-authenticate"]).toMatch(/^Basic /);
        expect(res.headers["content-type"]).toBe("text/plain");
        expect(res.headers.etag).toBeUndefined();
        expect(res.headers["content-disposition"]).toBeUndefined();
      }
    }
  });

  it("a user who may list but not download: HEAD on a download is a 403 that leaks no size, ETag or name", async () => {
    for (const url of downloads) {
      for (const method of ["GET", "HEAD"] as const) {
        const res = await send(method, url, undefined, viewOnly);
        expect(res.statusCode, `${method} ${url}`).toBe(403);
        expect(res.headers.etag).toBeUndefined();
        expect(res.headers["content-disposition"]).toBeUndefined();
        expect(res.headers["last-modified"]).toBeUndefined();
      }
    }
    for (const url of listings) expect((await send("HEAD", url, undefined, viewOnly)).statusCode, url).toBe(200);
  });

  it("a key of another feed: 403 on HEAD and GET alike, also with conditional and range headers", async () => {
    const { sha256 } = JSON.parse((await get("/api/packages/main/versions?name=headed")).body)[0] as { sha256: string };
    for (const url of [...downloads, ...listings]) {
      for (const method of ["GET", "HEAD"] as const) {
        for (const extra of conditional(sha256, "bytes=0-3")) {
          const res = await send(method, url, undefined, { ...stranger, ...extra });
          expect(res.statusCode, `${method} ${url} ${JSON.stringify(extra)}`).toBe(403);
        }
      }
    }
  });

  it("hostile Range headers on both APIs: 200, 206 with the exact bytes, or 416; never a 5xx", async () => {
    const bytes = (await get("/upack/main/download/headed/1.0.0")).rawPayload;
    const size = bytes.length;
    const ranges = [
      "bytes=0-0",
      `bytes=${size - 1}-`,
      "bytes=-1",
      `bytes=-${size * 10}`,
      "bytes=-0",
      `bytes=${size}-`,
      "bytes=5-2",
      "bytes=0-99999999999999999999999",
      "bytes=99999999999999999999999-",
      "bytes=-99999999999999999999999",
      "bytes=0-1,1-2,2-3,3-4",
      `bytes=${"0-0,".repeat(2000)}0-0`,
      "bytes=0x10-0x20",
      "bytes= 1 - 2 ",
      "bytes=1-2\r\nX-Injected: 1",
      "items=0-1",
      "bytes=",
      "bytes=--1",
      "bytes=1.5-2",
    ];
    for (const url of ["/upack/main/download/headed/1.0.0", "/api/packages/main/download?name=headed&version=1.0.0"]) {
      // Twice: the second request may be served from a memory copy of the small blob.
      for (const round of [1, 2]) {
        for (const range of ranges) {
          const res = await send("GET", url, undefined, { ...admin, range });
          const label = `${url} ${range.slice(0, 40)} round ${round}`;
          expect([200, 206, 416], `${label}: ${res.statusCode}`).toContain(res.statusCode);
          expect(res.headers["x-injected"], label).toBeUndefined();
          if (res.statusCode === 200) expect(res.rawPayload.equals(bytes), label).toBe(true);
          if (res.statusCode === 206) {
            const match = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(res.headers["content-range"]));
            expect(match, label).not.toBeNull();
            const [start, end, total] = (match ?? []).slice(1).map(Number) as [number, number, number];
            expect(total, label).toBe(size);
            expect(res.rawPayload.equals(bytes.subarray(start, end + 1)), label).toBe(true);
          }
          if (res.statusCode === 416) expect(res.headers["content-type"], label).toBe("text/plain");
        }
      }
    }
  });

  it("HEAD never counts as a download, even when it is allowed", async () => {
    // Read through the API: counts may be batched in memory, and a listing writes them first.
    const count = async () =>
      (JSON.parse((await get("/api/packages/main/versions?name=headed")).body) as Array<{ totalDownloads: number }>)[0]
        ?.totalDownloads;
    const before = await count();
    expect(before).toBeGreaterThan(0); // the Range test above downloaded it
    for (const url of downloads) await send("HEAD", url);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await count()).toBe(before);
  });
});

// ---------------------------------------------------------------------------------------------
// Isolation between feeds
// ---------------------------------------------------------------------------------------------

describe("feeds are isolated from each other", () => {
  let secret: { sha1: string; sha256: string };
  const SECRET = "TOP SECRET CONTENT";
  beforeAll(async () => {
    secret = await upload(
      "main",
      await buildUpack({ group: "secret", name: "data", version: "1.0.0", files: { "key.pem": SECRET } }),
    );
  });

  it("a package uploaded only to one feed cannot be reached from another by guessing its identity", async () => {
    const urls = [
      "/upack/other/download/secret/data/1.0.0",
      "/upack/other/download/secret/data?latest",
      "/upack/other/download/secret%2Fdata/1.0.0?contentOnly=zip",
      "/upack/other/download-file/secret/data/1.0.0?path=package/key.pem",
      "/upack/other/download-vpack/secret/data/1.0.0",
      "/upack/other/versions?group=secret&name=data&version=1.0.0",
      "/upack/other/packages?group=secret&name=data",
      "/api/packages/other/download?group=secret&name=data&version=1.0.0",
      "/api/packages/other/download?purl=pkg:upack/secret/data@1.0.0",
    ];
    for (const url of urls) {
      for (const extra of conditional(secret.sha256, "bytes=0-")) {
        const res = await send("GET", url, undefined, { ...admin, ...extra });
        expectText(res, 404);
        expect(res.body).not.toContain(SECRET);
      }
    }
    for (const url of ["/upack/other/versions", "/upack/other/search?query=data", "/api/packages/other/versions"]) {
      expect((await get(url)).body).not.toContain(secret.sha1);
    }
  });

  it("a virtual package in another feed cannot pull the package in, by id, by hash or as an asset", async () => {
    const thief = await createFeedKey(t.database, "other", ["view", "add"]);
    const sources: unknown[] = [
      ["secret/data:1.0.0"],
      [`secret/data:1.0.0:${secret.sha1}`],
      ["secret:data:1.0.0"],
      [{ source: { group: "secret", name: "data", version: "1.0.0", hash: secret.sha1 } }],
      [
        {
          type: "virtualFile",
          virtualPath: "stolen.pem",
          source: { group: "secret", name: "data", version: "1.0.0", packagePath: "package/key.pem" },
        },
      ],
      [{ source: { feed: "main", asset: "package/key.pem" } }],
      [{ source: { feed: "assets", asset: "anything" } }],
    ];
    let accepted = 0;
    for (const [index, contents] of sources.entries()) {
      const version = `1.0.${index}`;
      const manifest = JSON.stringify({ name: "thief", version, contents });
      const res = await send("PUT", "/upack/other/upload", manifest, { "x-apikey": thief });
      // A source spelling the manifest rules refuse is as good as refused here.
      if (res.statusCode !== 201) {
        expectText(res, 400);
        continue;
      }
      accepted += 1;
      for (const url of [
        `/upack/other/download/thief/${version}`,
        `/upack/other/download/thief/${version}?contentOnly=zip`,
        `/upack/other/download-file/thief/${version}?path=package/key.pem`,
        `/upack/other/download-file/thief/${version}?path=package/stolen.pem`,
        `/api/packages/other/download?name=thief&version=${version}`,
      ]) {
        const download = await get(url, { "x-apikey": thief });
        expectText(download, 409);
        expect(download.body).not.toContain(SECRET);
      }
    }
    // The object forms at least are valid manifests: the refusal above came from the download side.
    expect(accepted).toBeGreaterThanOrEqual(4);
  });

  it("deleting through the Common Packages API keeps the same bytes another feed uses", async () => {
    const bytes = await buildUpack({ name: "shared", version: "1.0.0", files: { "a.txt": "shared bytes" } });
    const inMain = await upload("main", bytes);
    const inOther = await upload("other", bytes);
    expect(inOther.sha256).toBe(inMain.sha256);
    expect((await send("POST", "/api/packages/main/delete?name=shared&version=1.0.0")).statusCode).toBe(200);
    for (const url of [
      "/upack/other/download/shared/1.0.0",
      "/api/packages/other/download?name=shared&version=1.0.0",
    ]) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      expect(sha1Hex(res.rawPayload)).toBe(inOther.sha1);
    }
    expect((await get("/upack/other/download-file/shared/1.0.0?path=package/a.txt")).body).toBe("shared bytes");
  });

  it("overwriting a version in one feed keeps the old bytes another feed still serves", async () => {
    const first = await buildUpack({ name: "overwritten", version: "1.0.0", files: { "a.txt": "first" } });
    await upload("main", first);
    const kept = await upload("other", first);
    await upload("main", await buildUpack({ name: "overwritten", version: "1.0.0", files: { "a.txt": "second" } }));
    const res = await get("/upack/other/download/overwritten/1.0.0");
    expect(res.statusCode).toBe(200);
    expect(sha1Hex(res.rawPayload)).toBe(kept.sha1);
    expect((await get("/upack/main/download-file/overwritten/1.0.0?path=package/a.txt")).body).toBe("second");
  });

  it("a refused upload of bytes another feed stores does not take them away", async () => {
    const bytes = await buildUpack({ name: "victim", version: "1.0.0" });
    const stored = await upload("other", bytes);
    expectText(await send("PUT", "/upack/main/upload/wrong-name/9.9.9", bytes), 400);
    expectText(
      await send("PUT", "/api/packages/main/upload", bytes, { ...admin, "x-checksum-sha1": "0".repeat(40) }),
      400,
    );
    expectText(await send("PUT", "/upack/main/upload?name=victim&version=2.0.0", bytes), 400);
    const res = await get("/upack/other/download/victim/1.0.0");
    expect(res.statusCode).toBe(200);
    expect(sha1Hex(res.rawPayload)).toBe(stored.sha1);
    expect(await versionCount("main", "victim")).toBe(0);
  });

  it("a package deleted or replaced is never served again from a remembered lookup, by any name of the feed", async () => {
    const v1 = await buildUpack({ name: "cached", version: "1.0.0", files: { "a.txt": "one" } });
    const v2 = await buildUpack({ name: "cached", version: "1.0.0", files: { "a.txt": "two" } });
    await upload("alpha", v1);
    for (const feed of ["alpha", "ALPHA-LEGACY"])
      expect(sha1Hex((await get(`/upack/${feed}/download/cached/1.0.0`)).rawPayload)).toBe(sha1Hex(v1));
    await upload("alpha", v2);
    for (const feed of ["alpha", "ALPHA-LEGACY"]) {
      expect(sha1Hex((await get(`/upack/${feed}/download/cached/1.0.0`)).rawPayload), feed).toBe(sha1Hex(v2));
      expect((await get(`/upack/${feed}/download-file/cached/1.0.0?path=package/a.txt`)).body, feed).toBe("two");
    }
    expect((await send("POST", "/api/packages/alpha-legacy/delete?name=cached&version=1.0.0")).statusCode).toBe(200);
    for (const feed of ["alpha", "ALPHA-LEGACY"]) {
      expectText(await get(`/upack/${feed}/download/cached/1.0.0`), 404);
      expectText(await get(`/upack/${feed}/download/cached?latest`), 404);
      expectText(await get(`/api/packages/${feed}/download?name=cached&version=1.0.0`), 404);
    }
  });

  it("a feed deleted and created again under the same name serves none of the old feed's packages", async () => {
    await createFeed({ name: "ephemeral" });
    await upload("ephemeral", await buildUpack({ name: "ghost", version: "1.0.0" }));
    expect((await get("/upack/ephemeral/download/ghost/1.0.0")).statusCode).toBe(200);
    expect((await send("POST", "/api/management/feeds/delete/ephemeral")).statusCode).toBe(200);
    expectText(await get("/upack/ephemeral/download/ghost/1.0.0"), 404, "feed not found");
    await createFeed({ name: "ephemeral" });
    expectText(await get("/upack/ephemeral/download/ghost/1.0.0"), 404);
    expectText(await get("/api/packages/ephemeral/download?name=ghost&version=1.0.0"), 404);
  });
});

// ---------------------------------------------------------------------------------------------
// Over a real socket: nothing normalises the URL, and Node's own parser answers first
// ---------------------------------------------------------------------------------------------

describe("over a real socket", () => {
  let port: number;
  beforeAll(async () => {
    await upload("main", await buildUpack({ group: "sock/grp", name: "wire", version: "1.0.0" }));
    const address = await t.app.listen({ port: 0, host: "127.0.0.1" });
    port = Number(new URL(address).port);
  });

  const raw = (request: string) => rawRequest(port, request);
  const rawGet = (target: string, extra = "") =>
    raw(`GET ${target} HTTP/1.1\r\nHost: wharf\r\nX-ApiKey: ${t.adminKey}\r\nConnection: close\r\n${extra}\r\n`);
  const contentType = (headers: string) => /\r\ncontent-type: ([^\r]*)/i.exec(headers)?.[1];

  it("dot segments reach the route verbatim and are refused, never resolved to another package or route", async () => {
    expect((await rawGet("/upack/main/download/sock/grp/wire/1.0.0")).status).toBe(200);
    for (const target of [
      "/upack/main/download/sock/grp/../grp/wire/1.0.0",
      "/upack/main/download/sock/grp/%2e%2e/grp/wire/1.0.0",
      "/upack/main/download/sock/grp/%2E%2E%2Fgrp/wire/1.0.0",
      "/upack/main/download/sock/x/..%2F..%2Fsock/grp/wire/1.0.0",
      "/upack/main/download/./sock/grp/wire/1.0.0",
      "/upack/main/download/sock/./grp/wire/1.0.0",
      "/upack/main/download/sock/grp/wire/1.0.0/.",
      "/upack/main/download/sock/grp/wire/1.0.0/..",
      "/upack/main/download/../../../api/management/feeds/list",
      "/upack/main/download-file/sock/grp/wire/1.0.0?path=package/../upack.json",
      "/upack/main/download-file/sock/grp/wire/1.0.0?path=package/%2e%2e/upack.json",
      "/upack/other/../main/download/sock/grp/wire/1.0.0",
      "/upack/main/download/sock\\grp/wire/1.0.0",
      "/api/packages/other/../main/download?group=sock/grp&name=wire&version=1.0.0",
      "/api/packages/main/download?group=sock/../sock/grp&name=wire&version=1.0.0",
    ]) {
      const res = await rawGet(target);
      expect(res.status, `${target} ${res.body.slice(0, 200)}`).toBeGreaterThanOrEqual(400);
      expect(res.status, target).toBeLessThan(500);
      expect(contentType(res.headers), target).toBe("text/plain");
      expect(res.body.startsWith("PK"), target).toBe(false);
      expect(res.body, target).not.toContain('"feedType"');
    }
  });

  it("malformed percent-encoding is a plain-text 400", async () => {
    for (const target of [
      "/upack/main/download/sock/grp/wire/1.0.0%",
      "/upack/main/download/%E0%A4%A/wire/1.0.0",
      "/upack/ma%ZZin/packages",
    ]) {
      const res = await rawGet(target);
      expect(res.status, target).toBe(400);
      expect(contentType(res.headers), target).toBe("text/plain");
    }
  });

  it("client errors detected by the HTTP parser still answer plain text (docs/compat.md 0.3)", async () => {
    const tooLong = await rawGet(`/upack/main/download/${"g/".repeat(10_000)}wire/1.0.0`);
    expect(tooLong.status).toBe(431);
    expect(contentType(tooLong.headers)).toBe("text/plain");
    const smuggled = await raw(
      "POST /upack/main/upload HTTP/1.1\r\nHost: wharf\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n" +
        `X-ApiKey: ${t.adminKey}\r\nConnection: close\r\n\r\n0\r\n\r\n`,
    );
    expect(smuggled.status).toBe(400);
    expect(contentType(smuggled.headers)).toBe("text/plain");
  });

  it("a request smuggling attempt never reaches the upload handler", async () => {
    const before = await snapshot();
    const smuggled = await raw(
      "PUT /upack/main/upload HTTP/1.1\r\nHost: wharf\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n" +
        `X-ApiKey: ${t.adminKey}\r\nConnection: close\r\n\r\n0\r\n\r\nGET /upack/main/download/sock/grp/wire/1.0.0 HTTP/1.1\r\nHost: wharf\r\n\r\n`,
    );
    expect(smuggled.status).toBe(400);
    expect(smuggled.body).not.toContain("PK");
    await expectNothingStored(before);
  });
});
