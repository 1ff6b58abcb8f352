import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createEndpointsServices,
  type EndpointsServices,
  removeOrphanMultipartSpools,
} from "../../src/areas/endpoints/index.js";
import { createFeedService, type Feed, type FeedService } from "../../src/areas/management/index.js";
import { loadConfig } from "../../src/config.js";
import { parseAssetPath } from "../../src/domain/asset-path.js";
import { createBlobKeeper } from "../../src/storage/blob-keeper.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { bytesOf } from "../helpers/blob-bytes.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { domainErrorOf } from "../helpers/responses.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The asset directory services built on PostgreSQL (cluster mode) by createEndpointsServices, as
 * app.ts builds them: files, folders and listings, multipart uploads with their sweep and start-up
 * clean-up, and a second node on the same database (with a data directory of its own) taking
 * parts and completions of the first one's uploads.
 */

const PART_SIZE = 1024;
const HOUR = 3_600_000;

const partQuery = (id: string, file: Buffer, index: number) => ({
  multipart: "upload",
  id,
  index: String(index),
  offset: String(index * PART_SIZE),
  totalSize: String(file.length),
  partSize: String(Math.min(PART_SIZE, file.length - index * PART_SIZE)),
  totalParts: String(Math.ceil(file.length / PART_SIZE)),
});
const partBody = (file: Buffer, index: number) => () =>
  Readable.from([file.subarray(index * PART_SIZE, (index + 1) * PART_SIZE)]);
const completion = { contentType: "application/octet-stream", mayReplace: async () => true };

describe.skipIf(!postgresInstalled())("asset directory services on PostgreSQL", () => {
  let dir: string;
  let node: NodeDatabase;
  let other: NodeDatabase;
  let blobs: BlobStore;
  let directory: Feed;
  let endpoints: EndpointsServices;
  let otherEndpoints: EndpointsServices;
  let now = new Date();
  const clock = { now: () => now };

  const servicesOn = (db: MetadataDb, dataDir: string, feeds: FeedService) => {
    const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent" });
    // Cluster mode deletes no blob eagerly (garbage collection does): every blob counts as referenced.
    const keeper = createBlobKeeper(blobs, async () => true);
    return createEndpointsServices({ db, blobs, keepers: { keeperFor: () => keeper }, clock, config, feeds });
  };
  const spoolDir = (dataDir: string) => path.join(dataDir, "multipart");
  const spools = async (dataDir: string) => readdir(spoolDir(dataDir)).catch(() => [] as string[]);
  const uploads = async () =>
    (await node.db.pool.query<{ upload_key: string }>("SELECT upload_key FROM asset_multipart_uploads ORDER BY id"))
      .rows;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "wharf-endpoints-pg-"));
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    blobs = createFileBlobStore(path.join(dir, "blobs"));
    const config = loadConfig({ WHARF_DATA_DIR: path.join(dir, "a"), WHARF_LOG_LEVEL: "silent" });
    const feeds = createFeedService({ db: node.db, clock, config });
    directory = await feeds.createFeed({ name: "files", feedType: "asset" });
    endpoints = servicesOn(node.db, path.join(dir, "a"), feeds);
    otherEndpoints = servicesOn(other.db, path.join(dir, "b"), createFeedService({ db: other.db, clock, config }));
  });

  afterAll(async () => {
    endpoints?.multipart.stop();
    otherEndpoints?.multipart.stop();
    await other?.close();
    await node?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("stores, lists, serves and deletes files and folders", async () => {
    const { assets } = endpoints;
    const put = (raw: string, text: string) =>
      assets.putFile(directory, parseAssetPath(raw), {
        body: () => Readable.from([Buffer.from(text)]),
        contentType: "text/plain",
        mode: "create-or-replace",
        mayReplace: async () => true,
      });
    await put("docs/readme.txt", "hello");
    await put("docs/deep/notes.txt", "notes");
    await assets.createFolder(directory, parseAssetPath("empty"));
    const listed = await assets.list(directory, parseAssetPath("", { allowRoot: true }), true);
    expect(listed.map((item) => [item.path, item.isFolder])).toEqual([
      ["docs", true],
      ["docs/deep", true],
      ["docs/deep/notes.txt", false],
      ["docs/readme.txt", false],
      ["empty", true],
    ]);
    const item = await assets.item(directory, parseAssetPath("docs/readme.txt"));
    const served = await assets.serve(directory, item);
    expect((await bytesOf(blobs, served.item.file?.sha256 ?? "")).toString()).toBe("hello");

    // Another node reads the same tree.
    const seen = await otherEndpoints.assets.item(directory, parseAssetPath("docs/deep/notes.txt"));
    expect(seen.file?.size).toBe(5);

    await assets.delete(directory, parseAssetPath("docs"), { recursive: true, filesOnly: false });
    expect(
      (await assets.list(directory, parseAssetPath("", { allowRoot: true }), true)).map((entry) => entry.path),
    ).toEqual(["empty"]);
    expect((await domainErrorOf(otherEndpoints.assets.item(directory, parseAssetPath("docs/readme.txt")))).code).toBe(
      "ASSET_NOT_FOUND",
    );
  });

  it("keeps large listings until the next write of any node (the change feed)", async () => {
    let builds = 0;
    const big = "x".repeat(300 * 1024);
    const build = async () => {
      builds++;
      return big;
    };
    await endpoints.listings.get("files/", build);
    await endpoints.listings.get("files/", build);
    expect(builds).toBe(1);
    await otherEndpoints.assets.createFolder(directory, parseAssetPath("from-other"));
    const until = Date.now() + 5_000;
    while (builds === 1 && Date.now() < until) {
      await endpoints.listings.get("files/", build);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(builds).toBe(2);
  });

  it("assembles a multipart upload into the file", async () => {
    const file = randomBytes(3 * PART_SIZE + 100);
    const id = randomBytes(16).toString("hex");
    const target = parseAssetPath("big/file.bin");
    for (let index = 3; index >= 0; index--) {
      await endpoints.multipart.uploadPart(directory, target, partQuery(id, file, index), partBody(file, index));
    }
    expect(await uploads()).toEqual([{ upload_key: id }]);
    const item = await endpoints.multipart.complete(directory, target, { multipart: "complete", id }, completion);
    expect(item.file?.size).toBe(file.length);
    expect(await bytesOf(blobs, item.file?.sha256 ?? "")).toEqual(file);
    expect(await uploads()).toEqual([]);
    expect(await spools(path.join(dir, "a"))).toEqual([]);
  });

  it("takes the parts and the completion of one upload on either node", async () => {
    const file = randomBytes(2 * PART_SIZE);
    const id = randomBytes(16).toString("hex");
    const target = parseAssetPath("split.bin");
    await endpoints.multipart.uploadPart(directory, target, partQuery(id, file, 0), partBody(file, 0));
    await otherEndpoints.multipart.uploadPart(directory, target, partQuery(id, file, 1), partBody(file, 1));
    const item = await otherEndpoints.multipart.complete(directory, target, { multipart: "complete", id }, completion);
    expect(await bytesOf(blobs, item.file?.sha256 ?? "")).toEqual(file);
    // The parts are blobs of the package store: neither node spooled them on its disk.
    expect(await spools(path.join(dir, "a"))).toEqual([]);
    expect(await spools(path.join(dir, "b"))).toEqual([]);
    expect(await uploads()).toEqual([]);
  });

  it("sweeps abandoned uploads from any node, and removes orphan spools at start-up", async () => {
    const file = randomBytes(2 * PART_SIZE);
    const id = randomBytes(16).toString("hex");
    await endpoints.multipart.uploadPart(
      directory,
      parseAssetPath("left.bin"),
      partQuery(id, file, 0),
      partBody(file, 0),
    );
    // A file left in the spool directory (a crash, or a node that ran before cluster mode spooled nothing).
    const orphan = "00000000-0000-4000-8000-000000000000.spool";
    await mkdir(spoolDir(path.join(dir, "a")), { recursive: true });
    await writeFile(path.join(spoolDir(path.join(dir, "a")), orphan), "stale");
    const old = new Date(now.getTime() - HOUR);
    await utimes(path.join(spoolDir(path.join(dir, "a")), orphan), old, old);
    expect(await removeOrphanMultipartSpools(node.db, path.join(dir, "a"))).toMatchObject({ files: 1 });
    expect(await spools(path.join(dir, "a"))).toEqual([]);

    // Past the maximum age, either node's sweep removes the upload, once.
    expect(await uploads()).toEqual([{ upload_key: id }]);
    now = new Date(now.getTime() + 48 * HOUR);
    expect(await otherEndpoints.multipart.removeAbandoned()).toBe(1);
    expect(await uploads()).toEqual([]);
    expect(await endpoints.multipart.removeAbandoned()).toBe(0);
  });
});
