import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createFeedService, type Feed, type FeedService } from "../../src/areas/management/index.js";
import { packagesApiRepositoryOf } from "../../src/areas/upack/packages-api/index.js";
import { createUpackQueries, createUpackServices, type UpackServices } from "../../src/areas/upack/services.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import type { Principal } from "../../src/domain/principal.js";
import { createBlobKeeper } from "../../src/storage/blob-keeper.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { bytesOf } from "../helpers/blob-bytes.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { domainErrorOf } from "../helpers/responses.js";
import { testPostgres } from "../helpers/shared-postgres.js";
import { buildUpack, sha1Hex } from "../helpers/upack-fixtures.js";

/**
 * The universal feed services built on PostgreSQL (cluster mode) by their factories, as app.ts
 * builds them (services.ts: the write, query, browse, download and virtual assembly pieces on the
 * node's database, caches on its change feed), and a second node's services on the same database
 * following the first one's writes through the change feed.
 */

const principal: Principal = { type: "anonymous" };
const log = { warn: () => undefined, error: () => undefined, info: () => undefined, debug: () => undefined };

describe.skipIf(!postgresInstalled())("universal feed services on PostgreSQL", () => {
  let dir: string;
  let node: NodeDatabase;
  let other: NodeDatabase;
  let config: Config;
  let blobs: BlobStore;
  let feeds: FeedService;
  let feed: Feed;
  let services: UpackServices;
  let otherServices: UpackServices;

  /** What app.ts builds the area from, on one node's database. */
  const options = (db: MetadataDb, feedService: FeedService) => {
    // Cluster mode deletes no blob eagerly (garbage collection does): every blob counts as referenced.
    const keeper = createBlobKeeper(blobs, async () => true);
    return { db, blobs, keepers: { keeperFor: () => keeper }, clock: systemClock, config, feeds: feedService };
  };
  const servicesOn = (db: MetadataDb, feedService: FeedService) => createUpackServices(options(db, feedService));
  const put = (bytes: Buffer, on: UpackServices = services, canOverwrite = false) =>
    on.write.importPackage({
      feedId: feed.id,
      principal,
      canOverwrite: async () => canOverwrite,
      source: { open: () => Readable.from([bytes]) },
    });
  const rows = async (sql: string, params: unknown[] = []) => (await node.db.pool.query(sql, params)).rows;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "wharf-upack-pg-"));
    const url = await testPostgres().createDatabase();
    node = await openNodeDatabase({ url, nodeId: "test", migrate: true });
    other = await openNodeDatabase({ url, nodeId: "other" });
    config = loadConfig({ WHARF_DATA_DIR: dir, WHARF_LOG_LEVEL: "silent" });
    blobs = createFileBlobStore(path.join(dir, "blobs"));
    feeds = createFeedService({ db: node.db, clock: systemClock, config });
    feed = await feeds.createFeed({ name: "main", feedType: "universal" });
    services = servicesOn(node.db, feeds);
    otherServices = servicesOn(other.db, createFeedService({ db: other.db, clock: systemClock, config }));
  });

  afterAll(async () => {
    await other?.close();
    await node?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("stores uploads, lists, searches and serves them", async () => {
    const first = await buildUpack({ name: "lib-a", version: "1.0.0", manifest: { title: "Library A" } });
    const second = await buildUpack({ name: "lib-a", version: "2.0.0" });
    expect(await put(first)).toMatchObject({ name: "lib-a", version: "1.0.0", sha1: sha1Hex(first) });
    await put(second);
    await put(await buildUpack({ group: "tools", name: "cli", version: "0.1.0" }));

    const queries = createUpackQueries({ ...options(node.db, feeds), virtualPackages: true }, log);
    const listed = JSON.parse((await queries.listPackages("main", { count: 10 })).toString()) as Array<{
      name: string;
      latestVersion: string;
      versions: string[];
    }>;
    expect(listed.map((p) => [p.name, p.latestVersion, p.versions])).toEqual([
      ["lib-a", "2.0.0", ["2.0.0", "1.0.0"]],
      ["cli", "0.1.0", ["0.1.0"]],
    ]);
    const found = JSON.parse((await queries.search("main", "cli", 10)).toString()) as Array<{ name: string }>;
    expect(found.map((p) => p.name)).toEqual(["cli"]);

    const { feed: resolved, target } = await services.downloads.resolve("main", "lib-a/1.0.0", false);
    const file = await services.downloads.packageFile(resolved, target);
    expect(await bytesOf(blobs, file.sha256)).toEqual(first);
    const latest = await services.downloads.resolve("main", "lib-a", true);
    expect(latest.target.version).toBe("2.0.0");
    expect((await domainErrorOf(services.downloads.resolve("main", "lib-a/3.0.0", false))).code).toBe(
      "VERSION_NOT_FOUND",
    );
  });

  it("refuses a second upload of a version without the overwrite privilege; replaces it with it", async () => {
    const again = await buildUpack({ name: "lib-a", version: "1.0.0", files: { "other.txt": "x" } });
    expect((await domainErrorOf(put(again))).code).toBe("VERSION_EXISTS");
    expect(await put(again, services, true)).toMatchObject({ version: "1.0.0", sha1: sha1Hex(again) });
    expect(await rows("SELECT type FROM lifecycle_events WHERE package_name = 'lib-a' ORDER BY id")).toEqual([
      { type: "package.added" },
      { type: "package.added" },
      { type: "package.overwritten" },
    ]);
  });

  it("deletes a version for retention only while it has the blob retention saw, also after another node's upload", async () => {
    const purge = { actor: "retention", as: "package.purged" as const };
    const seen = (await put(await buildUpack({ name: "kept", version: "1.0.0", files: { "a.txt": "one" } }))).sha256;
    // Uploaded again on the other node, with other bytes, after retention read the version.
    const again = await buildUpack({ name: "kept", version: "1.0.0", files: { "a.txt": "two" } });
    const current = (await put(again, otherServices, true)).sha256;
    expect(current).not.toBe(seen);

    expect(await services.write.deleteVersion(feed.id, "kept/1.0.0", purge, { expectedBlob: seen })).toBe(false);
    const blobOfKept =
      "SELECT v.blob_sha256 FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id WHERE p.name = 'kept'";
    expect(await rows(blobOfKept)).toEqual([{ blob_sha256: current }]);
    expect(await services.write.deleteVersion(feed.id, "kept/1.0.0", purge, { expectedBlob: current })).toBe(true);
    expect(await rows(blobOfKept)).toEqual([]);
    // Gone: false for retention, as for other bytes; a 404 for everyone else, as before.
    expect(await services.write.deleteVersion(feed.id, "kept/1.0.0", purge, { expectedBlob: current })).toBe(false);
    expect((await domainErrorOf(services.write.deleteVersion(feed.id, "kept/1.0.0", { actor: "test" }))).code).toBe(
      "PACKAGE_NOT_FOUND",
    );
    expect(await rows("SELECT type FROM lifecycle_events WHERE package_name = 'kept' ORDER BY id")).toEqual([
      { type: "package.added" },
      { type: "package.overwritten" },
      { type: "package.purged" },
    ]);
  });

  it("counts downloads, shown by the next read of the native API, the packages API and the browse pages", async () => {
    const { target } = await services.downloads.resolve("main", "tools/cli/0.1.0", false);
    await services.downloads.countDownload(target);
    await services.downloads.countDownload(target);
    expect(await services.queries.findVersion(feed.id, "tools", "cli", "0.1.0", false)).toMatchObject({
      downloads: 2,
    });
    expect(await packagesApiRepositoryOf(node.db).findVersion(feed.id, "tools", "cli", "0.1.0")).toMatchObject({
      downloads: 2,
      total_downloads: 2,
    });
    const page = await services.browse.packagesPage(feed.id, { order: "name", offset: 0, limit: 10 });
    expect(page.rows.map((row) => [row.name, row.downloads])).toEqual([
      ["lib-a", 0],
      ["cli", 2],
    ]);
    expect((await services.browse.findVersion(feed.id, "tools", "cli"))?.version).toBe("0.1.0");
    // The same write stamps the last download (retention reads it).
    expect(
      await rows(
        "SELECT downloads, last_downloaded_at IS NOT NULL AS stamped FROM upack_versions WHERE version = '0.1.0'",
      ),
    ).toEqual([{ downloads: 2, stamped: true }]);
  });

  it("another node's lookups follow this node's uploads and deletes through the change feed", async () => {
    // Cached on the other node (download/cache.ts), keyed on its change feed.
    expect((await otherServices.downloads.resolve("main", "lib-a/2.0.0", false)).target.version).toBe("2.0.0");
    await services.write.deleteVersion(feed.id, "lib-a/2.0.0", { actor: "test" });
    await vi.waitFor(
      async () => {
        expect((await domainErrorOf(otherServices.downloads.resolve("main", "lib-a/2.0.0", false))).code).toBe(
          "VERSION_NOT_FOUND",
        );
      },
      { timeout: 5_000, interval: 20 },
    );
    await put(await buildUpack({ name: "late", version: "1.0.0" }), otherServices);
    await vi.waitFor(
      async () => {
        expect((await services.downloads.resolve("main", "late/1.0.0", false)).target.name).toBe("late");
      },
      { timeout: 5_000, interval: 20 },
    );
    const names = (await services.browse.packagesPage(feed.id, { order: "name", offset: 0, limit: 10 })).rows.map(
      (row) => row.name,
    );
    expect(names).toContain("late");
    expect(await rows("SELECT type FROM lifecycle_events WHERE package_version = '2.0.0'")).toEqual([
      { type: "package.added" },
      { type: "package.deleted" },
    ]);
    expect((await domainErrorOf(services.write.deleteVersion(feed.id, "lib-a/2.0.0", { actor: "test" }))).code).toBe(
      "PACKAGE_NOT_FOUND",
    );
  });

  it("assembles a virtual package once, caches it, and forgets it when a source changes", async () => {
    await put(await buildUpack({ name: "part", version: "1.0.0", files: { "p.txt": "P1" } }));
    await put(
      await buildUpack({ name: "bundle", version: "1.0.0", manifest: { contents: ["part:1.0.0"] }, files: {} }),
    );
    const assembled = () =>
      rows(
        `SELECT a.blob_sha256 FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id
           JOIN upack_packages p ON p.id = v.package_id WHERE p.name = 'bundle'`,
      );
    const { feed: resolved, target } = await services.downloads.resolve("main", "bundle/1.0.0", false);
    expect(target.isVirtual).toBe(true);
    const file = await services.downloads.packageFile(resolved, target);
    expect(await assembled()).toEqual([{ blob_sha256: file.sha256 }]);
    expect((await services.downloads.packageFile(resolved, target)).sha256).toBe(file.sha256);

    await put(await buildUpack({ name: "part", version: "1.0.0", files: { "p.txt": "P2" } }), services, true);
    expect(await assembled()).toEqual([]);
    const again = await services.downloads.packageFile(resolved, target);
    expect(again.sha256).not.toBe(file.sha256);
    expect(await assembled()).toEqual([{ blob_sha256: again.sha256 }]);
  });
});
