import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, realpath, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { blobReferenceCheck } from "../../src/storage/blob-keeper.js";
import { postgresBlobReferenceCheck } from "../../src/storage/blob-keeper-postgres.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { byDatabase, type MetadataDb } from "../../src/storage/metadata-db.js";
import { createObjectStore } from "../../src/storage/store-factory.js";
import { buildTestApp, noSqlite, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createFeedKey, createPersonalKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { joinTestCluster, postgresTestEnv, testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import {
  buildUpack,
  buildZip,
  createUpackFixtures,
  sha1Hex,
  storedBlobAddresses,
  type UpackFixtures,
} from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * Import stories (docs/compat.md 2.9, 2.14): a package file in an asset directory or in the server's
 * import folder becomes a version exactly as an upload of its bytes would, an asset's content is
 * shared rather than copied, and the source is deleted only when asked and allowed. On one machine
 * (SQLite, the disk store) and on a cluster node (PostgreSQL, its object store on Azurite), where
 * a blob no row needs any more is left to garbage collection (docs/cluster-mode.md, Blobs).
 */

const sha256Hex = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/**
 * buildTestApp, with package stores that count puts: content addressing makes a copy of a blob
 * invisible in a store, so "not copied" is proven by no store ever being asked to write. On
 * PostgreSQL it is a cluster node, as buildTestApp builds one, whose stores are object stores.
 */
async function buildCountingApp(env: Record<string, string>): Promise<{ t: TestApp; puts: () => number }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "wharf-test-"));
  const adminKey = `test-admin-${randomBytes(12).toString("hex")}`;
  const cluster = testsRunOnPostgres() ? await postgresTestEnv() : {};
  const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", ...cluster, ...env });
  const node = config.databaseUrl === undefined ? undefined : await joinTestCluster(config);
  const database: MetadataDb = node?.db ?? openDatabase(path.join(dataDir, "wharf.sqlite"));
  let count = 0;
  const counting = (store: BlobStore): BlobStore => ({
    ...store,
    put: async (source, options) => {
      count++;
      return store.put(source, options);
    },
  });
  await bootstrapAdminKey(database, dataDir, adminKey, systemClock);
  const app = await buildApp(config, {
    db: database,
    ...(node ? { node: node.node } : {}),
    blobs: counting(createFileBlobStore(dataDir)),
    createObjectStore: (...args) => counting(createObjectStore(...args)),
    logger: false,
  });
  await app.ready();
  const close = async () => {
    await app.close();
    if (node) await node.close();
    else (database as Db).close();
    await rm(dataDir, { recursive: true, force: true });
  };
  const db = node ? noSqlite : (database as Db);
  return { t: { app, db, database, config, dataDir, adminKey, close }, puts: () => count };
}

let t: TestApp;
let fixtures: UpackFixtures;
let puts: () => number;
let importRoot: string;
let outside: string;
const admin = () => ({ "x-apikey": t.adminKey });

beforeAll(async () => {
  importRoot = await mkdtemp(path.join(tmpdir(), "wharf-import-root-"));
  outside = await mkdtemp(path.join(tmpdir(), "wharf-import-outside-"));
  ({ t, puts } = await buildCountingApp({ WHARF_IMPORT_ROOT: importRoot }));
  fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await createAssetDirectory(t, "dir");
});
afterAll(async () => {
  await t.close();
  await rm(importRoot, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

function importInto(feed: string, body: unknown, headers: Record<string, string> = admin()) {
  return t.app.inject({
    method: "POST",
    url: `/upack/${feed}/import`,
    headers: { "content-type": "application/json", ...headers },
    payload: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** The addresses in the app's package store (the disk store, or a cluster node's object store). */
const blobFiles = () => storedBlobAddresses(t);

/**
 * A blob no row needs any more: deleted at once on one machine; on a cluster node, which deletes
 * none eagerly (another node may be storing the same bytes), referenced by no row, so that garbage
 * collection takes it.
 */
async function expectDiscarded(sha256: string): Promise<void> {
  if (testsRunOnPostgres()) {
    const isReferenced = byDatabase(t.database, blobReferenceCheck, postgresBlobReferenceCheck);
    expect(await isReferenced(sha256)).toBe(false);
  } else {
    expect(await blobFiles()).not.toContain(sha256);
  }
}

async function addAsset(assetPath: string, bytes: Buffer | string): Promise<void> {
  const res = await putAsset(t, "dir", assetPath, bytes);
  expect(res.statusCode, res.body).toBe(201);
}

const getAsset = (assetPath: string) =>
  t.app.inject({ method: "GET", url: `/endpoints/dir/content/${assetPath}`, headers: admin() });
const download = (id: string) => t.app.inject({ method: "GET", url: `/upack/main/download/${id}`, headers: admin() });

interface VersionRow {
  blob_sha256: string;
  sha1: string;
  is_virtual: number;
}

function versionRow(name: string, version: string): Promise<VersionRow | undefined> {
  return readOne<VersionRow>(
    t.database,
    `SELECT v.blob_sha256, v.sha1, v.is_virtual FROM upack_versions v
       JOIN upack_packages p ON p.id = v.package_id JOIN feeds f ON f.id = p.feed_id
      WHERE f.name = 'main' AND p.name_key = ? AND v.version_key = ?`,
    name.toLowerCase(),
    version.toLowerCase(),
  );
}

/** A Personal key of a new user with these grants per feed. */
async function userKey(name: string, grants: Record<string, readonly string[]>): Promise<{ "x-apikey": string }> {
  const user = await createUser(t.database, name);
  for (const [feed, attributes] of Object.entries(grants)) await grant(t.database, { user, attributes, feed });
  return { "x-apikey": await createPersonalKey(t.database, user) };
}

describe("import from an asset directory", () => {
  it("moves a .upack into the feed without copying a byte, and deletes the asset by default", async () => {
    const bytes = await buildUpack({ group: "libs", name: "moved", version: "1.2.3", files: { "a.txt": "A" } });
    await addAsset("incoming/moved-1.2.3.upack", bytes);
    const before = await blobFiles();
    const putsBefore = puts();

    const res = await importInto("main", { assetDirectory: "dir", from: "incoming/moved-1.2.3.upack" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    expect(res.json()).toEqual({
      group: "libs",
      name: "moved",
      version: "1.2.3",
      sha1: sha1Hex(bytes),
      sha256: sha256Hex(bytes),
      size: bytes.length,
      replaced: false,
    });
    // One blob, shared: the version references the asset's blob, and nothing new was written.
    expect((await versionRow("moved", "1.2.3"))?.blob_sha256).toBe(sha256Hex(bytes));
    expect((await blobFiles()).sort()).toEqual(before.sort());
    expect(puts()).toBe(putsBefore);
    expect(await fixtures.blobs.stat(sha256Hex(bytes))).toEqual({ size: bytes.length });

    expectText(await getAsset("incoming/moved-1.2.3.upack"), 404, "The specified asset was not found.");
    const served = await download("libs/moved/1.2.3");
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(bytes)).toBe(true);
  });

  it("keeps the asset with deleteFromSource=false; the shared blob outlives the package, then the asset", async () => {
    const bytes = await buildUpack({ name: "kept", version: "1.0.0" });
    await addAsset("kept.upack", bytes);
    // Member names in any case, the flag as C#-style text.
    const res = await importInto("main", { AssetDirectory: "DIR", FROM: "kept.upack", DeleteFromSource: "False" });
    expect(res.statusCode, res.body).toBe(200);
    expect((await getAsset("kept.upack")).rawPayload.equals(bytes)).toBe(true);
    expect((await download("kept/1.0.0")).rawPayload.equals(bytes)).toBe(true);

    const removed = await t.app.inject({ method: "DELETE", url: "/upack/main/delete/kept/1.0.0", headers: admin() });
    expect(removed.statusCode).toBe(200);
    expect((await download("kept/1.0.0")).statusCode).toBe(404);
    const asset = await getAsset("kept.upack");
    expect(asset.statusCode).toBe(200);
    expect(asset.rawPayload.equals(bytes)).toBe(true);

    // Once nothing references it, the blob goes with the last user.
    const gone = await t.app.inject({ method: "DELETE", url: "/endpoints/dir/content/kept.upack", headers: admin() });
    expect(gone.statusCode).toBeLessThan(300);
    await expectDiscarded(sha256Hex(bytes));
  });

  it("reads backslashes in `from` as separators and also accepts a leading one", async () => {
    const bytes = await buildUpack({ name: "example-lib", version: "3.0.0" });
    await addAsset("myFolder/sub/example-lib.upack", bytes);
    const res = await importInto("main", {
      assetDirectory: "dir",
      from: "\\myFolder\\sub\\example-lib.upack",
      deleteFromSource: true,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ name: "example-lib", version: "3.0.0" });
    expect((await getAsset("myFolder/sub/example-lib.upack")).statusCode).toBe(404);
  });

  it("imports virtual packages: a zipped .vpack as it is, a JSON .vpack wrapped as an upload would be", async () => {
    const contents = ["main/moved:1.2.3"];
    const zipped = await buildUpack({ name: "virt-zip", version: "1.0.0", manifest: { contents } });
    await addAsset("virt-zip.vpack", zipped);
    const zipRes = await importInto("main", { assetDirectory: "dir", from: "virt-zip.vpack" });
    expect(zipRes.statusCode, zipRes.body).toBe(200);
    expect(await versionRow("virt-zip", "1.0.0")).toEqual({
      blob_sha256: sha256Hex(zipped),
      sha1: sha1Hex(zipped),
      is_virtual: 1,
    });

    const json = JSON.stringify({ name: "virt-json", version: "1.0.0", contents });
    await addAsset("virt-json.vpack", json);
    const jsonRes = await importInto("main", { assetDirectory: "dir", from: "virt-json.vpack" });
    expect(jsonRes.statusCode, jsonRes.body).toBe(200);
    const row = await versionRow("virt-json", "1.0.0");
    expect(row?.is_virtual).toBe(1);
    expect(row?.blob_sha256).not.toBe(sha256Hex(json));
    const vpack = await t.app.inject({
      method: "GET",
      url: "/upack/main/download-vpack/virt-json/1.0.0",
      headers: admin(),
    });
    expect(vpack.statusCode).toBe(200);
    expect(JSON.parse(vpack.body)).toEqual({ name: "virt-json", version: "1.0.0", contents });
    // The JSON text itself is referenced by nothing once its asset is deleted.
    await expectDiscarded(sha256Hex(json));
  });

  it("refuses what an upload would refuse (400) and leaves the asset untouched", async () => {
    await addAsset("bad/not-a-package.upack", "just text");
    expectText(await importInto("main", { assetDirectory: "dir", from: "bad/not-a-package.upack" }), 400);
    expect((await getAsset("bad/not-a-package.upack")).body).toBe("just text");

    const plainZip = await buildZip({ "readme.txt": "no manifest" });
    await addAsset("bad/plain.zip", plainZip);
    expectText(
      await importInto("main", { assetDirectory: "dir", from: "bad/plain.zip" }),
      400,
      "upack.json not found in package: only universal packages (.upack) and virtual packages (.vpack)",
    );
    expect((await getAsset("bad/plain.zip")).rawPayload.equals(plainZip)).toBe(true);

    const badName = await buildZip({ "upack.json": JSON.stringify({ name: "bad name!", version: "1.0.0" }) });
    await addAsset("bad/bad-name.upack", badName);
    expectText(await importInto("main", { assetDirectory: "dir", from: "bad/bad-name.upack" }), 400, "upack.json");
    expect((await getAsset("bad/bad-name.upack")).statusCode).toBe(200);
    expect(await blobFiles()).toContain(sha256Hex(badName));
  });

  it("refuses to replace an existing version without Feeds_OverwritePackage (409); with it, replaces", async () => {
    const first = await buildUpack({ name: "exists", version: "1.0.0" });
    const upload = await t.app.inject({ method: "PUT", url: "/upack/main/upload", headers: admin(), payload: first });
    expect(upload.statusCode).toBe(201);
    const second = await buildUpack({ name: "EXISTS", version: "1.0.0", files: { "new.txt": "new" } });
    await addAsset("exists.upack", second);

    const adder = await userKey("import-adder", {
      main: ["Feeds_ViewFeed", "Feeds_AddPackage"],
      dir: ["Feeds_ViewFeed", "Feeds_DownloadPackage", "Feeds_DeletePackage"],
    });
    expectText(
      await importInto("main", { assetDirectory: "dir", from: "exists.upack" }, adder),
      409,
      /already exists; overwriting it needs the overwrite\/delete permission/,
    );
    expect((await versionRow("exists", "1.0.0"))?.sha1).toBe(sha1Hex(first));
    expect((await getAsset("exists.upack")).statusCode).toBe(200);

    const replaced = await importInto("main", { assetDirectory: "dir", from: "exists.upack" });
    expect(replaced.statusCode, replaced.body).toBe(200);
    expect(replaced.json()).toMatchObject({ name: "EXISTS", replaced: true, sha1: sha1Hex(second) });
    expect((await download("exists/1.0.0")).rawPayload.equals(second)).toBe(true);
    // The replaced upload's blob is referenced by nothing any more.
    await expectDiscarded(sha256Hex(first));
  });

  it("needs download (and, to delete the source, delete) permission on the directory", async () => {
    const bytes = await buildUpack({ name: "guarded", version: "1.0.0" });
    await addAsset("guarded.upack", bytes);
    const body = { assetDirectory: "dir", from: "guarded.upack" };

    // A key for the feed only: no view on the directory.
    const feedOnly = { "x-apikey": await createFeedKey(t.database, "main", ["view", "add"]) };
    expectText(await importInto("main", body, feedOnly), 403, PERMISSION_DENIED_MESSAGE);

    // May read the directory but not delete there: refused before anything is stored.
    const reader = await userKey("import-reader", {
      main: ["Feeds_ViewFeed", "Feeds_AddPackage"],
      dir: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
    });
    expectText(await importInto("main", body, reader), 403, PERMISSION_DENIED_MESSAGE);
    expect(await versionRow("guarded", "1.0.0")).toBeUndefined();
    expect((await getAsset("guarded.upack")).statusCode).toBe(200);
    // Keeping the source needs no delete permission.
    const kept = await importInto("main", { ...body, deleteFromSource: false }, reader);
    expect(kept.statusCode, kept.body).toBe(200);
    expect((await getAsset("guarded.upack")).statusCode).toBe(200);

    // Feeds_AddPackage on the feed is checked first, whatever the body says.
    const viewer = { "x-apikey": await createFeedKey(t.database, "main", ["view"]) };
    expectText(await importInto("main", body, viewer), 403, PERMISSION_DENIED_MESSAGE);
    const anonymous = await importInto("main", body, {});
    expectText(anonymous, 401);
    expect(anonymous.headers["www-authenticate"]).toMatch(/^Basic/);
    // A key that does not exist is refused as ProGet refuses it, and nothing is imported.
    expectText(await importInto("main", body, { "x-apikey": "no-such-key" }), 403, PERMISSION_DENIED_MESSAGE);
    expect((await getAsset("guarded.upack")).statusCode).toBe(200);
  });

  it("answers 404 for an unknown feed, directory or asset, and 400 for a folder", async () => {
    await addAsset("folder/inner.upack", await buildUpack({ name: "inner", version: "1.0.0" }));
    expectText(await importInto("nope", { assetDirectory: "dir", from: "folder/inner.upack" }), 404, "feed not found");
    // An asset directory is not a universal feed, and a universal feed is not an asset directory.
    expectText(await importInto("dir", { assetDirectory: "dir", from: "folder/inner.upack" }), 404);
    expectText(
      await importInto("main", { assetDirectory: "missing", from: "folder/inner.upack" }),
      404,
      "asset directory not found",
    );
    expectText(await importInto("main", { assetDirectory: "main", from: "folder/inner.upack" }), 404);
    expectText(
      await importInto("main", { assetDirectory: "dir", from: "folder/missing.upack" }),
      404,
      "The specified asset was not found.",
    );
    expectText(await importInto("main", { assetDirectory: "dir", from: "folder" }), 400, "is a folder");
    expectText(await importInto("main", { assetDirectory: "dir", from: "folder/../inner.upack" }), 400, "'..'");
    expectText(await importInto("main", { assetDirectory: "dir", from: "folder\\..\\..\\x.upack" }), 400, "'..'");
    expectText(await importInto("main", { assetDirectory: "dir", from: "%2e%2e/folder/inner.upack" }), 400, "'..'");
    expectText(await importInto("main", { assetDirectory: "../dir", from: "folder/inner.upack" }), 404);
    // Traversal in the URL reaches no feed.
    const encoded = await t.app.inject({
      method: "POST",
      url: "/upack/%2e%2e/import",
      headers: { ...admin(), "content-type": "application/json" },
      payload: JSON.stringify({ assetDirectory: "dir", from: "folder/inner.upack" }),
    });
    expectText(encoded, 404);
    expect((await getAsset("folder/inner.upack")).statusCode).toBe(200);
  });
});

describe("the request body", () => {
  it("requires `from`, a JSON object and a true/false deleteFromSource", async () => {
    expectText(await importInto("main", { assetDirectory: "dir" }), 400, "'from' is required");
    expectText(await importInto("main", { assetDirectory: "dir", from: "" }), 400, "'from' is required");
    expectText(await importInto("main", ""), 400, "'from' is required");
    expectText(await importInto("main", "{not json"), 400);
    expectText(await importInto("main", "[1]"), 400, "JSON object");
    expectText(
      await importInto("main", { assetDirectory: "dir", from: "x.upack", deleteFromSource: "maybe" }),
      400,
      "'deleteFromSource' must be true or false",
    );
    const text = await t.app.inject({
      method: "POST",
      url: "/upack/main/import",
      headers: { ...admin(), "content-type": "text/plain" },
      payload: "from=x.upack",
    });
    expectText(text, 415, "JSON");
  });

  it("refuses a body far larger than a request: 413 for JSON, 415 unread for anything else", async () => {
    const huge = { assetDirectory: "dir", from: "a".repeat(2 * 1024 * 1024) };
    expectText(await importInto("main", huge), 413, "too large");
    // Anonymous: a key could be in the JSON, but one this large is not read at all (pre-auth-body.ts).
    expectText(await importInto("main", huge, {}), 401, "X-ApiKey header");
    const raw = await t.app.inject({
      method: "POST",
      url: "/upack/main/import",
      headers: { ...admin(), "content-type": "application/octet-stream" },
      payload: Buffer.alloc(2 * 1024 * 1024),
    });
    expectText(raw, 415, "JSON");
    expect(raw.headers.connection).toBe("close");
  });

  it("is described in /openapi.json with its 200 answer", async () => {
    const doc = (await t.app.inject({ method: "GET", url: "/openapi.json" })).json() as {
      paths: Record<string, Record<string, { summary?: string; responses?: Record<string, unknown> }>>;
    };
    const operation = doc.paths["/upack/{feed}/import"]?.post;
    expect(operation?.summary).toMatch(/Import a package/);
    expect(Object.keys(operation?.responses ?? {})).toEqual(expect.arrayContaining(["200", "403", "404", "409"]));
  });
});

describe("import from a server path", () => {
  it("copies a file from the import folder into the store and deletes it by default", async () => {
    const bytes = await buildUpack({ group: "srv", name: "from-disk", version: "2.0.0" });
    await mkdir(path.join(importRoot, "drop"), { recursive: true });
    const file = path.join(importRoot, "drop", "from-disk.upack");
    await writeFile(file, bytes);

    const res = await importInto("main", { from: "drop/from-disk.upack" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ group: "srv", name: "from-disk", version: "2.0.0", sha256: sha256Hex(bytes) });
    await expect(stat(file)).rejects.toThrow();
    expect((await download("srv/from-disk/2.0.0")).rawPayload.equals(bytes)).toBe(true);
    expect(await blobFiles()).toContain(sha256Hex(bytes));
  });

  it("takes an absolute path inside the folder, and a link to a file in it; keeps the file when asked", async () => {
    const bytes = await buildUpack({ name: "absolute", version: "1.0.0" });
    const file = path.join(importRoot, "absolute.upack");
    await writeFile(file, bytes);
    const res = await importInto("main", { from: file, deleteFromSource: false });
    expect(res.statusCode, res.body).toBe(200);
    expect((await stat(file)).size).toBe(bytes.length);

    const linked = await buildUpack({ name: "linked", version: "1.0.0" });
    await writeFile(path.join(importRoot, "linked-target.upack"), linked);
    await symlink(path.join(importRoot, "linked-target.upack"), path.join(importRoot, "link.upack"));
    const viaLink = await importInto("main", { from: "link.upack", deleteFromSource: "false" });
    expect(viaLink.statusCode, viaLink.body).toBe(200);
    expect(viaLink.json()).toMatchObject({ name: "linked", sha256: sha256Hex(linked) });
  });

  it("refuses paths that lead outside the folder, by '..' or by a symbolic link, without touching them", async () => {
    const secret = await buildUpack({ name: "secret", version: "1.0.0" });
    const target = path.join(outside, "secret.upack");
    await writeFile(target, secret);
    const relative = path.relative(importRoot, target);
    expect(relative.startsWith("..")).toBe(true);

    expectText(await importInto("main", { from: relative }), 403, "outside the server's import folder");
    expectText(await importInto("main", { from: `../${path.basename(outside)}/missing.upack` }), 403, "outside");
    expectText(await importInto("main", { from: target }), 403, "outside");
    await symlink(target, path.join(importRoot, "escape.upack"));
    expectText(await importInto("main", { from: "escape.upack" }), 403, "outside");
    await symlink(outside, path.join(importRoot, "escape-dir"));
    expectText(await importInto("main", { from: "escape-dir/secret.upack" }), 403, "outside");

    expect((await stat(target)).size).toBe(secret.length);
    expect(await versionRow("secret", "1.0.0")).toBeUndefined();
    expect(await realpath(target)).toBe(await realpath(path.join(importRoot, "escape.upack")));
  });

  it("answers 404 for a missing file and 400 for a folder or an invalid package (kept in place)", async () => {
    expectText(await importInto("main", { from: "nothing-here.upack" }), 404, "not found");
    await mkdir(path.join(importRoot, "a-folder"), { recursive: true });
    expectText(await importInto("main", { from: "a-folder" }), 400, "folder");
    const bad = path.join(importRoot, "bad.upack");
    await writeFile(bad, "not a zip");
    expectText(await importInto("main", { from: "bad.upack" }), 400);
    expect((await stat(bad)).size).toBe(9);
    await expectDiscarded(sha256Hex("not a zip"));
  });

  it("is refused when no import folder is configured", async () => {
    const plain = await buildTestApp();
    try {
      await createUpackFixtures(plain).createFeed("main");
      const res = await plain.app.inject({
        method: "POST",
        url: "/upack/main/import",
        headers: { "x-apikey": plain.adminKey, "content-type": "application/json" },
        payload: { from: path.join(importRoot, "absolute.upack") },
      });
      expectText(res, 400, "Imports from server paths are not enabled");
      expect((await stat(path.join(importRoot, "absolute.upack"))).isFile()).toBe(true);
    } finally {
      await plain.close();
    }
  });
});
