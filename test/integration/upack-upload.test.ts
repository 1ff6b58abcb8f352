import { createHash, randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { gzipSync } from "node:zlib";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import tar from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import { createBlobKeeper } from "../../src/storage/blob-keeper.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { compareVersions, parseVersion, type UpackVersion } from "../../src/domain/upack-version.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { openZipBlob } from "../../src/storage/zip.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createSystemKey, createUser, grant, readAll, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, buildZip, createUpackFixtures, sha1Hex, type UpackFixtures } from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * Upload stories (docs/seed-api.md A "Upload package", docs/compat.md 2.7, 2.14, docs/clients.md 4 items 1-2):
 * every client shape, conversion of plain archives, every 400 of the upload table, digests, size
 * limits, overwrite rules, privileges and concurrency. Each story checks what was committed.
 */

let t: TestApp;
let admin: { "x-apikey": string };
let fixtures: UpackFixtures;

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
  await fixtures.createFeed("files", "asset");
});
afterAll(async () => t.close());

type Method = NonNullable<InjectOptions["method"]>;

function send(method: Method, url: string, payload?: InjectOptions["payload"], headers: Record<string, string> = {}) {
  return t.app.inject({
    method,
    url,
    headers: { ...admin, ...headers },
    ...(payload === undefined ? {} : { payload }),
  });
}

interface VersionRow {
  version: string;
  blob_sha256: string;
  sha1: string;
  size: number;
  manifest: string;
  file_list: string;
  is_virtual: number;
  published_at: string;
  published_by: string | null;
}

function versionRows(feed: string, name: string): Promise<VersionRow[]> {
  return readAll<VersionRow>(
    t.database,
    `SELECT v.* FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id JOIN feeds f ON f.id = p.feed_id
      WHERE f.name = ? AND p.name_key = ? ORDER BY v.sort_key DESC`,
    feed,
    name.toLowerCase(),
  );
}

const versionCount = async (app: TestApp) =>
  (await readOne<{ n: number }>(app.database, "SELECT count(*) AS n FROM upack_versions"))?.n;
const totalVersions = () => versionCount(t);

/** The blobs of an app's package store (the data directory's, or a cluster node's object store). */
async function storedBlobs(of: UpackFixtures = fixtures): Promise<string[]> {
  const found: string[] = [];
  for await (const sha256 of of.blobs.list()) found.push(sha256);
  return found;
}

/**
 * Whether the blob of a refused or replaced upload is deleted at once: on the disk store; a
 * cluster node deletes none eagerly (another node may be storing the same bytes) and leaves them
 * to garbage collection (docs/cluster-mode.md, Blobs).
 */
const deletesBlobsAtOnce = !testsRunOnPostgres();

/** upack.json and entry names of a stored package, read back from the blob store. */
async function storedPackage(sha256: string): Promise<{ manifest: Record<string, unknown>; entries: string[] }> {
  const reader = await openZipBlob(fixtures.blobs, sha256);
  try {
    const manifest = JSON.parse(await reader.readText("upack.json", 1 << 20)) as Record<string, unknown>;
    return { manifest, entries: reader.entries().map((entry) => entry.name) };
  } finally {
    await reader.close();
  }
}

const sha256Hex = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

async function buildTgz(files: Record<string, string>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, content] of Object.entries(files)) pack.entry({ name }, content);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) chunks.push(chunk);
  return gzipSync(Buffer.concat(chunks));
}

/** A body that records whether anyone read it: an upload refused up front must not be. */
function watchedBody(bytes: Buffer): { stream: Readable; wasRead: () => boolean } {
  let read = false;
  const stream = new Readable({
    read() {
      read = true;
      this.push(bytes);
      this.push(null);
    },
  });
  return { stream, wasRead: () => read };
}

describe("upload shapes real clients send (docs/clients.md 4 item 1)", () => {
  it("PUT upload application/zip (Inedo.UPack, upack CLI): 201, stored byte for byte", async () => {
    const bytes = await buildUpack({ name: "shape-a", version: "1.0.0", manifest: { title: "A", _custom: { x: 1 } } });
    const res = await send("PUT", "/upack/main/upload", bytes, { "content-type": "application/zip" });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.json()).toEqual({
      group: "",
      name: "shape-a",
      version: "1.0.0",
      sha1: sha1Hex(bytes),
      sha256: sha256Hex(bytes),
      size: bytes.length,
      replaced: false,
    });
    const [row] = await versionRows("main", "shape-a");
    expect(row?.sha1).toBe(sha1Hex(bytes));
    expect(row?.blob_sha256).toBe(sha256Hex(bytes));
    expect(JSON.parse(row?.manifest ?? "{}")).toEqual({
      name: "shape-a",
      version: "1.0.0",
      title: "A",
      _custom: { x: 1 },
    });
    expect(row?.published_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(row?.published_by).toBe("Administrator (WHARF_ADMIN_API_KEY)");
    expect(row?.is_virtual).toBe(0);
    const files = JSON.parse(row?.file_list ?? "[]") as Array<{ name: string; size: number; date: string }>;
    expect(files.map((f) => f.name)).toEqual(["upack.json", "package/readme.txt"]);
    expect(files[1]).toEqual({
      name: "package/readme.txt",
      size: "shape-a 1.0.0".length,
      date: "2024-01-02T03:04:06.000Z",
    });
  });

  it("POST upload application/zip, chunked, with the bower client's `name` header (Jenkins, pubc)", async () => {
    const bytes = await buildUpack({ group: "ci/tools", name: "shape-b", version: "2.0.0" });
    const res = await send("POST", "/upack/main/upload", Readable.from([bytes.subarray(0, 100), bytes.subarray(100)]), {
      "content-type": "application/zip",
      "transfer-encoding": "chunked",
      name: "shape-b-2.0.0.upack",
    });
    expect(res.statusCode, res.body).toBe(201);
    expect((await versionRows("main", "shape-b")).map((r) => r.sha1)).toEqual([sha1Hex(bytes)]);
  });

  it.each(["/upack/main", "/upack/main/"])(
    "PUT %s octet-stream (Go upack, ProGetAutomation): exactly 201",
    async (url) => {
      const bytes = await buildUpack({ name: "shape-c", version: url.length.toString() + ".0.0" });
      const res = await send("PUT", url, Readable.from([bytes]), {
        "content-type": "application/octet-stream",
        "transfer-encoding": "chunked",
        authorization: basic("api", t.adminKey).authorization,
      });
      expect(res.statusCode, res.body).toBe(201);
    },
  );

  it("PUT upload with no Content-Type (proget-updater, curl --upload-file): 201", async () => {
    const bytes = await buildUpack({ name: "shape-d", version: "1.0.0" });
    const res = await t.app.inject({ method: "PUT", url: "/upack/main/upload", headers: admin, payload: bytes });
    expect(res.statusCode, res.body).toBe(201);
    expect(await versionRows("main", "shape-d")).toHaveLength(1);
  });

  it("accepts the identity in the path, Go's %2F included, when it matches upack.json", async () => {
    const bytes = await buildUpack({ group: "a/b", name: "shape-e", version: "1.0.0+build.5" });
    expect((await send("PUT", "/upack/main/upload/a%2Fb/shape-e/1.0.0+build.5", bytes)).statusCode).toBe(201);
    expect((await send("PUT", "/upack/main/upload/A/B/SHAPE-E?version=1.0.0%2Bbuild.5", bytes)).statusCode).toBe(201);
    expect((await versionRows("main", "shape-e")).map((r) => r.version)).toEqual(["1.0.0+build.5"]);
  });

  it("JSON with content-b64 of a .upack stores that .upack unchanged", async () => {
    const bytes = await buildUpack({ name: "shape-f", version: "3.1.4" });
    const res = await send("POST", "/upack/main/upload", { "content-b64": bytes.toString("base64") });
    expect(res.statusCode, res.body).toBe(201);
    expect((await versionRows("main", "shape-f"))[0]?.sha1).toBe(sha1Hex(bytes));
  });

  it("a JSON API_Key authenticates and is not taken for metadata", async () => {
    const zip = await buildZip({ "a.txt": "A" });
    const res = await t.app.inject({
      method: "POST",
      url: "/upack/main/upload",
      payload: { API_Key: t.adminKey, name: "shape-g", version: "1.0.0", "content-b64": zip.toString("base64") },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(JSON.parse((await versionRows("main", "shape-g"))[0]?.manifest ?? "")).toEqual({
      name: "shape-g",
      version: "1.0.0",
    });
  });
});

describe("plain archives become packages (docs/compat.md 2.7)", () => {
  it("plain ZIP + query metadata: content under package/, upack.json built from the parameters", async () => {
    const zip = await buildZip({ "bin/tool.sh": "#!/bin/sh", "docs/": null });
    const res = await send(
      "PUT",
      "/upack/main/upload/acme/plain-a?version=1.2.3&title=Plain&description=d&tags=x,y&dependencies=acme:lib:[1.0.0,2.0.0),other&_note=hi",
      zip,
    );
    expect(res.statusCode, res.body).toBe(201);
    const [row] = await versionRows("main", "plain-a");
    const stored = await storedPackage(row?.blob_sha256 ?? "");
    expect(stored.entries).toEqual(["upack.json", "package/bin/tool.sh", "package/docs/"]);
    expect(stored.manifest).toEqual({
      group: "acme",
      name: "plain-a",
      version: "1.2.3",
      title: "Plain",
      description: "d",
      tags: ["x", "y"],
      dependencies: ["acme:lib:[1.0.0,2.0.0)", "other"],
      _note: "hi",
    });
  });
});

describe("plain archives, more forms", () => {
  it("form body with content-b64 and comma-separated dependencies", async () => {
    const zip = await buildZip({ "a.txt": "A" });
    const form = new URLSearchParams({
      group: "forms",
      name: "plain-b",
      version: "0.1.0-rc.1",
      dependencies: "forms:base:1.0.0, forms/util",
      "content-b64": zip.toString("base64"),
    });
    const res = await send("POST", "/upack/main/upload", form.toString(), {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(res.statusCode, res.body).toBe(201);
    const [row] = await versionRows("main", "plain-b");
    expect((await storedPackage(row?.blob_sha256 ?? "")).manifest).toEqual({
      group: "forms",
      name: "plain-b",
      version: "0.1.0-rc.1",
      dependencies: ["forms:base:1.0.0", "forms/util"],
    });
  });

  it("a form whose content-b64 was not URL-encoded ('+' arrives as a space) still decodes", async () => {
    let bytes: Buffer = Buffer.alloc(0);
    while (!bytes.toString("base64").includes("+")) {
      bytes = await buildUpack({ name: "plain-raw-form", version: "1.0.0", files: { r: randomBytes(48) } });
    }
    const res = await send("POST", "/upack/main/upload", `content-b64=${bytes.toString("base64")}`, {
      "content-type": "application/x-www-form-urlencoded",
    });
    expect(res.statusCode, res.body).toBe(201);
    expect((await versionRows("main", "plain-raw-form"))[0]?.sha1).toBe(sha1Hex(bytes));
  });

  it("plain TGZ + name and version: converted to a ZIP with the content under package/", async () => {
    const tgz = await buildTgz({ "lib/a.js": "a", "README.md": "r" });
    const res = await send("PUT", "/upack/main/upload?name=plain-c&version=2.0.0&group=tgz", tgz);
    expect(res.statusCode, res.body).toBe(201);
    const [row] = await versionRows("main", "plain-c");
    const stored = await storedPackage(row?.blob_sha256 ?? "");
    expect(stored.entries.sort()).toEqual(
      ["README.md", "lib/a.js"]
        .map((n) => `package/${n}`)
        .concat("upack.json")
        .sort(),
    );
    expect(stored.manifest).toEqual({ group: "tgz", name: "plain-c", version: "2.0.0" });
    // The uploaded TGZ itself is not kept: only the package is referenced.
    if (deletesBlobsAtOnce) expect(await storedBlobs()).not.toContain(sha256Hex(tgz));
  });

  it("a package whose upack.json has `contents` is virtual; a plain .vpack JSON is wrapped as upack.json", async () => {
    const contents = ["main/shape-a:1.0.0"];
    const zipped = await buildUpack({ name: "virt-a", version: "1.0.0", manifest: { contents } });
    expect((await send("PUT", "/upack/main/upload", zipped)).statusCode).toBe(201);
    expect((await versionRows("main", "virt-a"))[0]?.is_virtual).toBe(1);

    const vpack = Buffer.from(JSON.stringify({ name: "virt-b", version: "1.0.0", contents }));
    expect(
      (await send("PUT", "/upack/main/upload", vpack, { "content-type": "application/octet-stream" })).statusCode,
    ).toBe(201);
    const [row] = await versionRows("main", "virt-b");
    expect(row?.is_virtual).toBe(1);
    expect((await storedPackage(row?.blob_sha256 ?? "")).manifest).toEqual({
      name: "virt-b",
      version: "1.0.0",
      contents,
    });
  });
});

describe("refused uploads: 400 with a text message, nothing committed", () => {
  let zip: Buffer;
  let upack: Buffer;
  beforeAll(async () => {
    zip = await buildZip({ "a.txt": "A" });
    upack = await buildUpack({ name: "bad", version: "1.0.0" });
  });

  const cases: Array<[string, () => Promise<LightMyRequestResponse>, RegExp]> = [
    [
      "path and query disagree",
      () => send("PUT", "/upack/main/upload/g/bad/1.0.0?version=2.0.0", zip),
      /'version'.*'1\.0\.0' in the path.*'2\.0\.0' in the query/,
    ],
    [
      "query and body disagree",
      () => send("POST", "/upack/main/upload?name=bad", { name: "other", version: "1.0.0", "content-b64": "UEsFBg==" }),
      /'name'.*in the query.*in the body/,
    ],
    [
      "a repeated query parameter disagrees",
      () => send("PUT", "/upack/main/upload?name=bad&version=1.0.0&version=1.0.1", zip),
      /'version'/,
    ],
    [
      "content-b64 with an application/zip body",
      () =>
        send("PUT", `/upack/main/upload?content-b64=${encodeURIComponent(zip.toString("base64"))}`, zip, {
          "content-type": "application/zip",
        }),
      /'content-b64' cannot be combined/,
    ],
    [
      "both content sources",
      () =>
        send("POST", "/upack/main/upload", {
          name: "bad",
          version: "1.0.0",
          "content-b64": "UEsFBg==",
          "content-url": "http://x/",
        }),
      /either 'content-b64' or 'content-url'/,
    ],
    ["neither content nor body", () => send("PUT", "/upack/main/upload"), /no content/],
    ["JSON without content", () => send("POST", "/upack/main/upload", { name: "bad", version: "1.0.0" }), /no content/],
    ["invalid base64", () => send("POST", "/upack/main/upload", { "content-b64": "not base64!" }), /not valid base64/],
    [
      "an empty zip body",
      () => send("PUT", "/upack/main/upload", Buffer.alloc(0), { "content-type": "application/zip" }),
      /empty/,
    ],
    [
      "content-url while disabled",
      () => send("POST", "/upack/main/upload", { "content-url": "http://example.com/p.upack" }),
      /^content-url uploads are disabled; an administrator must enable them \(WHARF_CONTENT_URL_UPLOADS=true\)\.$/,
    ],
    [
      "upack.json disagrees with the path",
      () => send("PUT", "/upack/main/upload/bad/2.0.0", upack),
      /'bad 2\.0\.0'.*upack\.json names 'bad 1\.0\.0'/,
    ],
    [
      "upack.json disagrees with the query group",
      () => send("PUT", "/upack/main/upload?group=elsewhere", upack),
      /'elsewhere\/bad 1\.0\.0'/,
    ],
    [
      "a plain ZIP without name and version",
      () => send("PUT", "/upack/main/upload", zip),
      /upack\.json not found in package/,
    ],
    [
      "a plain ZIP with an invalid name",
      () => send("PUT", "/upack/main/upload?name=bad%20name&version=1.0.0", zip),
      /'name'/,
    ],
    [
      "a plain ZIP with an invalid version",
      () => send("PUT", "/upack/main/upload?name=bad&version=1.0", zip),
      /'version' '1\.0'/,
    ],
    ["a bad path", () => send("PUT", "/upack/main/upload/bad%20name/1.0.0", upack), /package name/],
    ["a JSON array body", () => send("POST", "/upack/main/upload", [1, 2]), /must be an object/],
    ["not an archive", () => send("PUT", "/upack/main/upload", Buffer.from("hello world")), /not a ZIP/],
    [
      "a malformed zip",
      () => send("PUT", "/upack/main/upload", Buffer.concat([Buffer.from("PK\x03\x04"), randomBytes(200)])),
      /not a valid ZIP/,
    ],
    [
      "a truncated .upack",
      () => send("PUT", "/upack/main/upload", upack.subarray(0, upack.length - 10)),
      /not a valid ZIP/,
    ],
  ];

  it.each(cases)("%s", async (_name, request, message) => {
    const before = { versions: await totalVersions(), blobs: (await storedBlobs()).length };
    expectText(await request(), 400, message);
    expect(await totalVersions()).toBe(before.versions);
    // Anything stored before validation failed was removed again.
    if (deletesBlobsAtOnce) expect((await storedBlobs()).length).toBe(before.blobs);
  });

  const manifests: Array<[string, unknown, RegExp]> = [
    ["not JSON", "{oops", /upack\.json: the manifest is not valid JSON/],
    ["no version", { name: "bad" }, /upack\.json: 'version' is required/],
    ["a bad name", { name: "b a d", version: "1.0.0" }, /upack\.json: 'name' 'b a d'/],
    ["a bad group", { group: "/g", name: "bad", version: "1.0.0" }, /upack\.json: 'group'/],
    ["a too long title", { name: "bad", version: "1.0.0", title: "t".repeat(51) }, /'title'/],
    ["bad virtual contents", { name: "bad", version: "1.0.0", contents: [42] }, /upack\.json: 'contents\[0\]/],
  ];
  it.each(manifests)("upack.json with %s names the field", async (_name, manifest, message) => {
    const bytes = await buildZip({ "upack.json": typeof manifest === "string" ? manifest : JSON.stringify(manifest) });
    const before = (await storedBlobs()).length;
    expectText(await send("PUT", "/upack/main/upload", bytes), 400, message);
    if (deletesBlobsAtOnce) expect((await storedBlobs()).length).toBe(before);
  });

  it("the same parameter twice with the same value is fine", async () => {
    const res = await send("PUT", "/upack/main/upload/ok-twice/1.0.0?name=OK-TWICE&version=1.0.0", zip);
    expect(res.statusCode, res.body).toBe(201);
  });

  it("unknown feed and a feed of another type: 404 feed not found", async () => {
    expectText(await send("PUT", "/upack/nope/upload", upack), 404, "feed not found");
    expectText(await send("PUT", "/upack/files/upload", upack), 404, "feed not found");
  });
});

describe("client digests are verified before anything is committed (docs/PRODUCT.md integrity)", () => {
  let bytes: Buffer;
  let wrong: Buffer;
  beforeAll(async () => {
    bytes = await buildUpack({ name: "digest", version: "1.0.0" });
    wrong = randomBytes(32);
  });
  const b64 = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest("base64");
  const hex = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest("hex");

  const headerSets: Array<[string, (data: Buffer) => Record<string, string>]> = [
    ["X-Checksum-Sha1", (data) => ({ "x-checksum-sha1": hex("sha1", data).toUpperCase() })],
    ["X-Checksum-Sha256", (data) => ({ "x-checksum-sha256": hex("sha256", data) })],
    ["Digest SHA-256", (data) => ({ digest: `SHA-256=${b64("sha256", data)}` })],
    ["Digest sha (SHA-1)", (data) => ({ digest: `sha=${b64("sha1", data)}, unknown=abc` })],
    ["Content-Digest sha-256", (data) => ({ "content-digest": `sha-256=:${b64("sha256", data)}:` })],
    ["Content-Digest sha-512", (data) => ({ "content-digest": `sha-512=:${b64("sha512", data)}:` })],
  ];

  it.each(headerSets)("%s: a mismatch is a 400 and stores nothing; a match is a 201", async (_name, headers) => {
    const before = (await storedBlobs()).length;
    expectText(await send("PUT", "/upack/main/upload", bytes, headers(wrong)), 400, /mismatch/);
    expect(await versionRows("main", "digest")).toHaveLength(0);
    if (deletesBlobsAtOnce) expect((await storedBlobs()).length).toBe(before);

    expect((await send("PUT", "/upack/main/upload", bytes, headers(bytes))).statusCode).toBe(201);
    expect(await versionRows("main", "digest")).toHaveLength(1);
    expect((await send("DELETE", "/upack/main/delete/digest/1.0.0")).statusCode).toBe(200);
  });

  it("malformed or disagreeing digest headers are a 400", async () => {
    expectText(await send("PUT", "/upack/main/upload", bytes, { "x-checksum-sha1": "abc" }), 400, /40 hexadecimal/);
    expectText(await send("PUT", "/upack/main/upload", bytes, { digest: "SHA-256=%%%" }), 400, /malformed/);
    expectText(
      await send("PUT", "/upack/main/upload", bytes, { "content-digest": `sha-256=${b64("sha256", bytes)}` }),
      400,
      /:<base64>:/,
    );
    const disagree = { "x-checksum-sha256": hex("sha256", bytes), digest: `SHA-256=${b64("sha256", wrong)}` };
    expectText(await send("PUT", "/upack/main/upload", bytes, disagree), 400, /disagrees/);
  });

  it("with content-b64, the digests describe the decoded package", async () => {
    const res = await send(
      "POST",
      "/upack/main/upload",
      { "content-b64": bytes.toString("base64") },
      {
        "x-checksum-sha1": hex("sha1", bytes),
      },
    );
    expect(res.statusCode, res.body).toBe(201);
  });
});

describe("size limit (WHARF_MAX_UPLOAD_BYTES)", () => {
  let small: TestApp;
  beforeAll(async () => {
    small = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: "4096" } });
    await createUpackFixtures(small).createFeed("main");
  });
  afterAll(async () => small.close());
  const upload = (payload: InjectOptions["payload"], headers: Record<string, string> = {}) =>
    small.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { "x-apikey": small.adminKey, ...headers },
      payload,
    });
  const big = () =>
    buildUpack({ name: "big", version: "1.0.0", files: { "data.bin": { content: randomBytes(8000) } } });

  it("a declared Content-Length past the limit is refused before reading", async () => {
    const body = watchedBody(await big());
    const res = await upload(body.stream, { "content-length": "8500", "content-type": "application/zip" });
    expectText(res, 413, /limit of 4096 bytes/);
    expect(body.wasRead()).toBe(false);
  });

  it("a chunked body is cut off at the limit while streaming, leaving nothing behind", async () => {
    const bytes = await big();
    const res = await upload(Readable.from([bytes.subarray(0, 3000), bytes.subarray(3000)]), {
      "transfer-encoding": "chunked",
    });
    expectText(res, 413, /limit of 4096 bytes/);
    // Cut off before the whole body was in: no blob was stored, on either store.
    expect(await storedBlobs(createUpackFixtures(small))).toEqual([]);
    expect(await versionCount(small)).toBe(0);
  });

  it("content-b64 past the limit is a 413 too", async () => {
    const res = await upload({ "content-b64": (await big()).toString("base64") });
    expect(res.statusCode).toBe(413);
  });

  it("a JSON body past the route's body limit (base64 of more than the upload limit) names the setting", async () => {
    const res = await upload({ "content-b64": "A".repeat(80_000) });
    expectText(res, 413, "WHARF_MAX_UPLOAD_BYTES", "raw body");
    expect(res.headers["x-wharf-error"]).toBe("BODY_TOO_LARGE");
  });

  it("a JSON body past a plain route's limit is a 413 saying so, with no setting to name", async () => {
    const res = await small.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": small.adminKey, "content-type": "application/json" },
      payload: JSON.stringify({ name: "x", feedType: "universal", description: "d".repeat(2 * 1024 * 1024) }),
    });
    expectText(res, 413, "too large for this endpoint (1048576 bytes at most).");
  });

  it("a package under the limit is fine", async () => {
    expect((await upload(await buildUpack({ name: "fits", version: "1.0.0" }))).statusCode).toBe(201);
  });
});

describe("re-uploading a version (docs/PRODUCT.md: overwrite needs the overwrite/delete permission)", () => {
  it("an admin replaces it: one row, the new bytes, the old blob gone", async () => {
    const first = await buildUpack({ name: "over", version: "1.0.0", files: { "a.txt": "one" } });
    const second = await buildUpack({ name: "Over", version: "1.0.0", files: { "a.txt": "two" } });
    expect((await send("PUT", "/upack/main/upload", first)).json()).toMatchObject({ replaced: false });
    const res = await send("PUT", "/upack/main/upload", second);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: "Over", replaced: true });
    expect((await versionRows("main", "over")).map((r) => r.sha1)).toEqual([sha1Hex(second)]);
    const blobs = await storedBlobs();
    expect(blobs).toContain(sha256Hex(second));
    if (deletesBlobsAtOnce) expect(blobs).not.toContain(sha256Hex(first));
    // The package takes the spelling of the latest upload.
    expect(await readOne(t.database, "SELECT name FROM upack_packages WHERE name_key = 'over'")).toEqual({
      name: "Over",
    });
  });

  it("an add-only feed key adds new versions but gets 409 for an existing one, however it is spelled", async () => {
    const key = { "x-apikey": await createFeedKey(t.database, "main", ["view", "add"]) };
    const bytes = await buildUpack({ group: "keys", name: "add-only", version: "1.0.0-RC.1" });
    expect((await send("PUT", "/upack/main/upload", bytes, key)).statusCode).toBe(201);
    expect((await versionRows("main", "add-only"))[0]?.published_by).toBe("Feed key (test)");
    const again = await buildUpack({ group: "KEYS", name: "ADD-ONLY", version: "1.0.0-rc.1", files: { x: "y" } });
    const refused = await send("PUT", "/upack/main/upload", again, key);
    expectText(refused, 409, /already exists; overwriting it needs the overwrite\/delete permission/);
    expect((await versionRows("main", "add-only")).map((r) => r.sha1)).toEqual([sha1Hex(bytes)]);
    // When the path names the version, the 409 comes before the body is read.
    const body = watchedBody(again);
    const early = await send("PUT", "/upack/main/upload/keys/add-only/1.0.0-rc.1", body.stream, {
      ...key,
      "transfer-encoding": "chunked",
    });
    expectText(early, 409, /already exists/);
    expect(body.wasRead()).toBe(false);
  });

  it("a feed key with add and overwrite/delete replaces", async () => {
    const key = { "x-apikey": await createFeedKey(t.database, "main", ["add", "delete"]) };
    const bytes = await buildUpack({ name: "add-delete", version: "1.0.0" });
    expect((await send("PUT", "/upack/main/upload", bytes, key)).statusCode).toBe(201);
    const res = await send(
      "PUT",
      "/upack/main/upload",
      await buildUpack({ name: "add-delete", version: "1.0.0", files: { b: "b" } }),
      key,
    );
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ replaced: true });
  });
});

describe("privileges (docs/compat.md 2.14)", () => {
  let bytes: Buffer;
  beforeAll(async () => {
    bytes = await buildUpack({ name: "priv", version: "1.0.0" });
  });
  const upload = (headers: Record<string, string>, payload: InjectOptions["payload"] = bytes) =>
    t.app.inject({ method: "PUT", url: "/upack/main/upload", headers, payload });

  it("anonymous: 401 with a Basic challenge, before the body is read", async () => {
    const body = watchedBody(bytes);
    const res = await upload({ "content-type": "application/zip", "transfer-encoding": "chunked" }, body.stream);
    expectText(res, 401);
    expect(res.headers["www-authenticate"]).toMatch(/^Basic /);
    expect(body.wasRead()).toBe(false);
  });

  it("a view-only feed key, and an add key of another feed: 403 before the body is read", async () => {
    for (const key of [
      await createFeedKey(t.database, "main", ["view"]),
      await createFeedKey(t.database, "other", ["view", "add", "delete"]),
    ]) {
      const body = watchedBody(bytes);
      const res = await upload({ "x-apikey": key, "transfer-encoding": "chunked" }, body.stream);
      expectText(res, 403, PERMISSION_DENIED_MESSAGE);
      expect(body.wasRead()).toBe(false);
    }
    expect(await versionRows("main", "priv")).toHaveLength(0);
  });

  it("users need Feeds_AddPackage on the feed; System keys the feeds scope", async () => {
    const alice = await createUser(t.database, "alice-upload", "pw-alice");
    await grant(t.database, { user: alice, attributes: ["Feeds_ViewFeed"], feed: "main" });
    expectText(await upload(basic("alice-upload", "pw-alice")), 403);
    await grant(t.database, { user: alice, attributes: ["Feeds_AddPackage"], feed: "main" });
    expect((await upload(basic("alice-upload", "pw-alice"))).statusCode).toBe(201);
    expect((await versionRows("main", "priv"))[0]?.published_by).toBe("alice-upload");
    // Alice may not overwrite what she added.
    expectText(await upload(basic("alice-upload", "pw-alice")), 409);

    expectText(await upload({ "x-apikey": await createSystemKey(t.database, ["configuration"]) }), 403);
    const feedsKey = await createSystemKey(t.database, ["feeds"], { displayName: "CI robot" });
    const res = await t.app.inject({
      method: "PUT",
      url: "/upack/main/upload",
      headers: { "x-apikey": feedsKey },
      payload: await buildUpack({ name: "priv", version: "2.0.0" }),
    });
    expect(res.statusCode).toBe(201);
    expect((await versionRows("main", "priv"))[0]?.published_by).toBe("CI robot");
  });
});

describe("concurrency (docs/PRODUCT.md: concurrent uploads never produce a 500)", () => {
  it("20 parallel uploads of one new version by an admin: all 201, one row", async () => {
    const uploads = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        send(
          "PUT",
          "/upack/main/upload",
          await buildUpack({ name: "race-a", version: "1.0.0", files: { n: String(i) } }),
        ),
      ),
    );
    expect(uploads.map((res) => res.statusCode)).toEqual(Array(20).fill(201));
    const rows = await versionRows("main", "race-a");
    expect(rows).toHaveLength(1);
    expect(await storedBlobs()).toContain(rows[0]?.blob_sha256);
  });

  it("20 parallel uploads of one new version by an add-only key: one 201, the rest 409", async () => {
    const key = { "x-apikey": await createFeedKey(t.database, "main", ["add"]) };
    const uploads = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        send(
          "PUT",
          "/upack/main",
          await buildUpack({ name: "race-b", version: "1.0.0", files: { n: String(i % 3) } }),
          key,
        ),
      ),
    );
    const statuses = uploads.map((res) => res.statusCode).sort();
    expect(statuses).toEqual([201, ...Array(19).fill(409)]);
    const [row] = await versionRows("main", "race-b");
    const winner = uploads.find((res) => res.statusCode === 201)?.json() as { sha256: string };
    expect(row?.blob_sha256).toBe(winner.sha256);
  });

  it("20 parallel uploads of different versions all land, versions_desc highest first", async () => {
    const versions = Array.from(
      { length: 20 },
      (_, i) => ["1.0.0", `1.${i}.0`, `2.0.0-beta.${i}`, `0.${i}.1+b${i}`][i % 4] ?? "",
    );
    const uploads = await Promise.all(
      versions.map(async (version) => send("PUT", "/upack/main/upload", await buildUpack({ name: "race-c", version }))),
    );
    expect(uploads.map((res) => res.statusCode)).toEqual(Array(20).fill(201));
    const unique = [...new Set(versions)];
    const expected = unique
      .map((text) => parseVersion(text) as UpackVersion)
      .sort((a, b) => compareVersions(b, a))
      .map((v) => versions.find((text) => compareVersions(parseVersion(text) as UpackVersion, v) === 0));
    const pkg = await readOne<{ versions_desc: string; latest_version_id: number }>(
      t.database,
      "SELECT versions_desc, latest_version_id FROM upack_packages WHERE name_key = 'race-c'",
    );
    expect(JSON.parse(pkg?.versions_desc ?? "")).toEqual(expected);
    const latest = await readOne(t.database, "SELECT version FROM upack_versions WHERE id = ?", pkg?.latest_version_id);
    expect(latest).toEqual({ version: expected[0] });
  });
});

describe("large uploads stream", () => {
  it("a 50 MiB package is stored whole and byte for byte", async () => {
    const zip = new yazl.ZipFile();
    zip.addBuffer(Buffer.from(JSON.stringify({ name: "large", version: "1.0.0" })), "upack.json");
    const content = randomBytes(50 * 1024 * 1024);
    zip.addBuffer(content, "package/blob.bin", { compress: false });
    zip.end();
    const chunks: Buffer[] = [];
    for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
    const bytes = Buffer.concat(chunks);
    const pieces = Array.from({ length: Math.ceil(bytes.length / 65536) }, (_, i) =>
      bytes.subarray(i * 65536, (i + 1) * 65536),
    );
    const res = await send("PUT", "/upack/main/upload", Readable.from(pieces), {
      "content-type": "application/zip",
      "transfer-encoding": "chunked",
      "x-checksum-sha256": sha256Hex(bytes),
    });
    expect(res.statusCode, res.body).toBe(201);
    const [row] = await versionRows("main", "large");
    expect(row).toMatchObject({ size: bytes.length, sha1: sha1Hex(bytes), blob_sha256: sha256Hex(bytes) });
    expect(JSON.parse(row?.file_list ?? "[]")).toContainEqual(
      expect.objectContaining({ name: "package/blob.bin", size: content.length }),
    );
  }, 60_000);
});

describe("content-url uploads, when an administrator enabled them", () => {
  let enabled: TestApp;
  let origin: Server;
  let base: string;
  let bytes: Buffer;

  beforeAll(async () => {
    bytes = await buildUpack({ name: "fetched", version: "1.0.0" });
    origin = createServer((request, response) => {
      if (request.url === "/pkg.upack") response.writeHead(200).end(bytes);
      else response.writeHead(404).end("nope");
    });
    await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(origin.address() as AddressInfo).port}`;
    // Content-url uploads and loopback fetches enabled.
    enabled = await buildTestApp({
      env: {
        WHARF_CONTENT_URL_UPLOADS: "true",
        WHARF_FETCH_ALLOW_PRIVATE: "true",
        WHARF_FETCH_TIMEOUT_MS: "5000",
      },
    });
    await createUpackFixtures(enabled).createFeed("main");
  });
  afterAll(async () => {
    await enabled?.close();
    await new Promise((resolve) => origin.close(resolve));
  });

  const upload = (payload: Record<string, string>) =>
    enabled.app.inject({
      method: "POST",
      url: "/upack/main/upload",
      headers: { "x-apikey": enabled.adminKey },
      payload,
    });

  it("fetches the package and stores it unchanged", async () => {
    const res = await upload({ "content-url": `${base}/pkg.upack` });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ name: "fetched", sha1: sha1Hex(bytes) });
  });

  it("an upstream error is a 502; a refused URL a 400", async () => {
    expectText(await upload({ "content-url": `${base}/missing` }), 502, /HTTP 404/);
    expectText(await upload({ "content-url": "file:///etc/passwd" }), 400);
  });
});

describe("blob keeper: a failed upload's blob is deleted only when nobody uses it", () => {
  it("keeps held and referenced blobs, deletes the rest", async () => {
    const blobs = createFileBlobStore(t.dataDir);
    const referenced = new Set<string>();
    const keeper = createBlobKeeper(blobs, async (sha) => referenced.has(sha));
    const info = await blobs.put(Readable.from([randomBytes(64)]));
    const release = await keeper.hold(info.sha256);
    await keeper.discardIfUnused(info.sha256);
    expect(await blobs.stat(info.sha256)).toBeDefined();
    release();
    referenced.add(info.sha256);
    await keeper.discardIfUnused(info.sha256);
    expect(await blobs.stat(info.sha256)).toBeDefined();
    referenced.clear();
    await keeper.discardIfUnused(info.sha256);
    expect(await blobs.stat(info.sha256)).toBeUndefined();
  });

  it("a hold taken while the reference check runs wins over the deletion", async () => {
    const blobs = createFileBlobStore(t.dataDir);
    const info = await blobs.put(Readable.from([randomBytes(64)]));
    let holding: Promise<() => void> | undefined;
    const keeper = createBlobKeeper(blobs, async () => {
      holding = keeper.hold(info.sha256); // another upload of the same bytes arrives meanwhile
      return false;
    });
    await keeper.discardIfUnused(info.sha256);
    (await holding)?.();
    expect(await blobs.stat(info.sha256)).toBeDefined();
  });

  it("a hold on content deleted under it fails with a retryable 503", async () => {
    const blobs = createFileBlobStore(t.dataDir);
    const keeper = createBlobKeeper(blobs, async () => false);
    await expect(keeper.hold("0".repeat(64))).rejects.toMatchObject({ kind: "unavailable" });
  });
});
