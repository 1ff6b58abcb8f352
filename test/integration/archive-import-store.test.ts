import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yazl from "yazl";
import { createEndpointsServices, type EndpointsServices } from "../../src/areas/endpoints/index.js";
import { createFeedService, type Feed } from "../../src/areas/management/index.js";
import { loadConfig } from "../../src/config.js";
import { parseAssetPath } from "../../src/domain/asset-path.js";
import { createBlobStores } from "../../src/storage/blob-stores.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { createSecretBox, generateSecretKey, parseSecretKey } from "../../src/storage/secrets.js";

/**
 * An archive import resolves the directory's package store once (AssetService.importContents,
 * BlobStores.pinnedKeeperFor), not once per file: on a cluster node each resolution reads the
 * feed's storage setting from PostgreSQL, a round trip per file before, thousands per import. The
 * reads are counted on SQLite, where the same rows are read through one prepared statement.
 */
describe("an archive import's package store", () => {
  let dir: string;
  let db: Db;
  let directory: Feed;
  let endpoints: EndpointsServices;
  /** Reads of a feed's storage setting (blob-stores.ts feedStorage). */
  let storageReads = 0;
  const clock = { now: () => new Date("2026-01-02T03:04:05Z") };

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "wharf-import-store-"));
    db = openDatabase(path.join(dir, "wharf.db"));
    const prepare = db.prepare.bind(db);
    db.prepare = ((sql: string) => {
      const statement = prepare(sql);
      if (!sql.includes("'$.storage'")) return statement;
      const get = statement.get.bind(statement);
      statement.get = ((...params: unknown[]) => {
        storageReads += 1;
        return get(...params);
      }) as typeof statement.get;
      return statement;
    }) as typeof db.prepare;
    const config = loadConfig({ WHARF_DATA_DIR: dir, WHARF_LOG_LEVEL: "silent" });
    const key = parseSecretKey(generateSecretKey());
    if (key === undefined) throw new Error("no secret key");
    const stores = await createBlobStores({
      db,
      disk: createFileBlobStore(path.join(dir, "packages")),
      secrets: createSecretBox(key),
      tempDir: path.join(dir, "tmp"),
      clock,
    });
    const feeds = createFeedService({ db, clock, config });
    directory = await feeds.createFeed({ name: "site", feedType: "asset" });
    endpoints = createEndpointsServices({ db, blobs: stores.reader, keepers: stores, clock, config, feeds });
  });

  afterAll(async () => {
    endpoints?.multipart.stop();
    db?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("is resolved once for all the files, and each file is stored", async () => {
    const zip = new yazl.ZipFile();
    for (let i = 0; i < 30; i++) zip.addBuffer(Buffer.from(`file ${i % 20}`), `docs/f${i}.txt`);
    zip.end();
    const chunks: Buffer[] = [];
    for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);

    const root = parseAssetPath("", { allowRoot: true });
    storageReads = 0;
    const imported = await endpoints.archives.import(directory, root, () => Readable.from([Buffer.concat(chunks)]), {
      format: "zip",
      overwrite: false,
      mayReplace: async () => false,
    });
    expect(imported).toEqual({ files: 30, skipped: 0 });
    expect(storageReads).toBe(1);

    const listed = await endpoints.assets.list(directory, root, true);
    expect(listed.filter((item) => !item.isFolder)).toHaveLength(30);
    const file = await endpoints.assets.item(directory, parseAssetPath("docs/f27.txt"));
    expect(file.file?.size).toBe("file 7".length);
    // A single upload still asks for the store at its call (a feed's store may change meanwhile).
    await endpoints.assets.putFile(directory, parseAssetPath("one.txt"), {
      body: () => Readable.from([Buffer.from("one")]),
      contentType: "text/plain",
      mode: "create",
      mayReplace: async () => false,
    });
    expect(storageReads).toBeGreaterThan(1);
  });
});
