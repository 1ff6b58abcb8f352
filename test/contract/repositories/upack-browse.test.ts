import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VirtualPackageVersion } from "../../../src/areas/upack/download/service.js";
import {
  createUpackBrowseQueries,
  type PackagePageQuery,
  type UpackBrowseQueries,
} from "../../../src/areas/upack/read/browse-queries.js";
import { createPostgresUpackBrowseQueries } from "../../../src/areas/upack/read/browse-queries-postgres.js";
import {
  createUpackQueryRepository,
  type UpackQueryRepository,
} from "../../../src/areas/upack/read/query-repository.js";
import { createPostgresUpackQueryRepository } from "../../../src/areas/upack/read/query-repository-postgres.js";
import {
  createUpackWriteRepository,
  type NewVersion,
  type UpackWriteRepository,
} from "../../../src/areas/upack/repository.js";
import { createPostgresUpackWriteRepository } from "../../../src/areas/upack/repository-postgres.js";
import { type AssembledCache, createAssembledCache } from "../../../src/areas/upack/virtual/cache.js";
import { createPostgresAssembledCache } from "../../../src/areas/upack/virtual/cache-postgres.js";
import { createVirtualDownloads } from "../../../src/areas/upack/virtual/download.js";
import { createFeedTotals, type FeedTotals } from "../../../src/areas/web-ui/pages/feeds-page.js";
import { createPostgresFeedTotals } from "../../../src/areas/web-ui/pages/feeds-page-postgres.js";
import { versionSortKey } from "../../../src/domain/upack-version-sort.js";
import { parseVersion } from "../../../src/domain/upack-version.js";
import { createGuardedFetch } from "../../../src/net/fetch-guard.js";
import { createFileBlobStore } from "../../../src/storage/file-blob-store.js";
import { isForeignKeyViolation } from "../../../src/storage/sqlite-errors.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";
import { buildUpack } from "../../helpers/upack-fixtures.js";

const T0 = "2026-11-29T10:00:00.000Z";
const day = (n: number) => `2026-12-${String(n).padStart(2, "0")}T10:00:00.000Z`;
const ASSEMBLED = "2026-12-20T08:00:00.000Z";
const clock = { now: () => new Date(ASSEMBLED) };
const UPLOAD = { actor: "ann" };
const INFO = { sha256: "a".repeat(64), sha1: "b".repeat(40), size: 42 };

function newVersion(
  feedId: number,
  group: string,
  name: string,
  version: string,
  manifest: Record<string, unknown> = {},
  fields: Partial<NewVersion> = {},
): NewVersion {
  const parsed = parseVersion(version);
  if (parsed === undefined) throw new Error(`bad version ${version}`);
  return {
    feedId,
    group,
    name,
    version,
    sortKey: versionSortKey(parsed),
    manifest: JSON.stringify({ group, name, version, ...manifest }),
    blobSha256: `sha256 ${group}/${name} ${version}`,
    sha1: `sha1 ${version}`,
    size: 1000,
    fileList: `[{"name":"${name}.txt","size":1,"date":"${T0}"}]`,
    isVirtual: false,
    publishedAt: T0,
    publishedBy: undefined,
    ...fields,
  };
}

interface Repositories {
  readonly write: UpackWriteRepository;
  readonly query: UpackQueryRepository;
  readonly browse: UpackBrowseQueries;
  readonly assembled: AssembledCache;
  readonly totals: () => Promise<ReadonlyMap<number, FeedTotals>>;
}

/** On PostgreSQL, the watch a node would pass: here, one that moves with each of this pool's commits. */
const watchOf = (database: Extract<TestDatabase, { kind: "postgres" }>) => ({
  version: () => String(database.commits()),
});

const repositoriesOn = (database: TestDatabase): Repositories =>
  database.kind === "sqlite"
    ? {
        write: createUpackWriteRepository(database.sqlite, clock),
        query: createUpackQueryRepository(database.sqlite, clock),
        browse: createUpackBrowseQueries(database.sqlite),
        assembled: createAssembledCache(database.sqlite, clock),
        totals: createFeedTotals(database.sqlite),
      }
    : {
        write: createPostgresUpackWriteRepository(database.postgres, clock),
        query: createPostgresUpackQueryRepository(database.postgres, watchOf(database), clock),
        browse: createPostgresUpackBrowseQueries(database.postgres, watchOf(database)),
        assembled: createPostgresAssembledCache(database.postgres, clock),
        totals: createPostgresFeedTotals(database.postgres, watchOf(database)),
      };

const fullName = (row: { group_name: string; name: string }) =>
  row.group_name === "" ? row.name : `${row.group_name}/${row.name}`;

describeOnBothDatabases("Universal package browsing, assembled virtual packages and feed totals", (database) => {
  let write: UpackWriteRepository;
  let query: UpackQueryRepository;
  let browse: UpackBrowseQueries;
  let assembled: AssembledCache;
  let totals: () => Promise<ReadonlyMap<number, FeedTotals>>;
  let feeds = 0;
  let main: number;
  let other: number;
  const versionIds = new Map<string, number>();

  const newFeed = (name = `feed${++feeds}`) => insertFeed(database().exec, name, T0);
  async function save(...versions: NewVersion[]): Promise<void> {
    const outcomes = await write.saveVersions(versions, { replace: true, cause: UPLOAD });
    for (const [i, version] of versions.entries()) {
      versionIds.set(`${version.group}/${version.name} ${version.version}`, outcomes[i]?.versionId ?? 0);
    }
  }
  const vid = (key: string) => versionIds.get(key) as number;
  const page = async (feedId: number, query: PackagePageQuery) => {
    const { rows, more } = await browse.packagesPage(feedId, query);
    return { names: rows.map(fullName), more };
  };

  const ALPHA_LATEST = () =>
    newVersion(main, "", "Alpha", "1.10.0", { title: "Alpha tool" }, { publishedAt: day(3), publishedBy: "bob" });

  beforeAll(async () => {
    ({ write, query, browse, assembled, totals } = repositoriesOn(database()));
    main = await newFeed("main");
    other = await newFeed("other");
    await save(
      newVersion(main, "", "Alpha", "1.0.0", {}, { publishedAt: day(1) }),
      ALPHA_LATEST(),
      newVersion(main, "", "Alpha", "1.2.0-beta", {}, { publishedAt: day(5) }),
    );
    await save(newVersion(main, "", "alpha-widgets", "2.0.0", { title: "Widgets" }, { publishedAt: day(4) }));
    await save(
      newVersion(main, "Apps", "my_alpha", "1.0.0", {}, { publishedAt: day(2) }),
      newVersion(main, "zz", "my_alpha", "1.0.0", {}, { publishedAt: day(2) }),
    );
    await save(newVersion(main, "tools", "Gadget", "1.0.0", { title: "Super ALPHA gadget" }, { publishedAt: day(6) }));
    await save(
      newVersion(
        main,
        "tools",
        "Helper",
        "1.0.0",
        { description: "100% pure", shortDescription: "an Alpha helper" },
        { publishedAt: day(7) },
      ),
    );
    await save(newVersion(main, "tools", "Tagged", "1.0.0", { tags: ["beta", "ALPHA-tag"] }, { publishedAt: day(8) }));
    await save(newVersion(main, "tools", "Umlaut", "1.0.0", { title: "ÄPFEL und Birnen" }, { publishedAt: day(9) }));
    await save(newVersion(other, "", "Alpha", "9.0.0"));
  });

  describe("UpackBrowseQueries", () => {
    it("pages packages by name, each with its latest version, saying whether more follow", async () => {
      const first = await browse.packagesPage(main, { order: "name", offset: 0, limit: 3 });
      expect(first).toEqual({
        rows: [
          {
            group_name: "",
            name: "Alpha",
            latest_version: "1.10.0",
            manifest: ALPHA_LATEST().manifest,
            downloads: 0,
            published_at: day(3),
          },
          expect.objectContaining({ name: "alpha-widgets", latest_version: "2.0.0", published_at: day(4) }),
          expect.objectContaining({ group_name: "Apps", name: "my_alpha" }),
        ],
        more: true,
      });
      expect(await page(main, { order: "name", offset: 3, limit: 3 })).toEqual({
        names: ["tools/Gadget", "tools/Helper", "tools/Tagged"],
        more: true,
      });
      expect(await page(main, { order: "name", offset: 6, limit: 3 })).toEqual({
        names: ["tools/Umlaut", "zz/my_alpha"],
        more: false,
      });
      expect(await page(main, { order: "name", offset: 100, limit: 3 })).toEqual({ names: [], more: false });
      // "relevance" without a term lists by name.
      expect(await page(main, { termKey: " ", order: "relevance", offset: 0, limit: 2 })).toEqual({
        names: ["Alpha", "alpha-widgets"],
        more: true,
      });
    });

    it("orders by the latest version's publication, newest first, ties by name, in pages", async () => {
      const all = await page(main, { order: "updated", offset: 0, limit: 100 });
      expect(all.names).toEqual([
        "tools/Umlaut",
        "tools/Tagged",
        "tools/Helper",
        "tools/Gadget",
        "alpha-widgets",
        "Alpha",
        "Apps/my_alpha",
        "zz/my_alpha",
      ]);
      expect(await page(main, { order: "updated", offset: 4, limit: 2 })).toEqual({
        names: ["alpha-widgets", "Alpha"],
        more: true,
      });
      const [row] = (await browse.packagesPage(main, { order: "updated", offset: 5, limit: 1 })).rows;
      expect(row).toEqual((await browse.packagesPage(main, { order: "name", offset: 0, limit: 1 })).rows[0]);
    });

    it("searches as the API's search ranks, in every order, wildcards literal, ASCII case only", async () => {
      const relevance = await page(main, { termKey: "alpha", order: "relevance", offset: 0, limit: 100 });
      expect(relevance).toEqual({
        names: [
          "Alpha",
          "alpha-widgets",
          "Apps/my_alpha",
          "zz/my_alpha",
          "tools/Gadget",
          "tools/Helper",
          "tools/Tagged",
        ],
        more: false,
      });
      expect(relevance.names).toEqual((await query.searchPackages(main, "alpha", 100)).map(fullName));
      expect(await page(main, { termKey: "alpha", order: "relevance", offset: 2, limit: 2 })).toEqual({
        names: ["Apps/my_alpha", "zz/my_alpha"],
        more: true,
      });
      expect((await page(main, { termKey: "alpha", order: "name", offset: 0, limit: 100 })).names).toEqual([
        "Alpha",
        "alpha-widgets",
        "Apps/my_alpha",
        "tools/Gadget",
        "tools/Helper",
        "tools/Tagged",
        "zz/my_alpha",
      ]);
      expect((await page(main, { termKey: "alpha", order: "updated", offset: 0, limit: 3 })).names).toEqual([
        "tools/Tagged",
        "tools/Helper",
        "tools/Gadget",
      ]);
      const names = async (termKey: string) =>
        (await page(main, { termKey, order: "relevance", offset: 0, limit: 100 })).names;
      expect(await names("_")).toEqual(["Apps/my_alpha", "zz/my_alpha"]);
      expect(await names("%")).toEqual(["tools/Helper"]);
      expect(await names("pfel")).toEqual(["tools/Umlaut"]);
      expect(await names("äpfel")).toEqual([]);
      expect(await names("alpha-tag")).toEqual(["tools/Tagged"]);
      expect(await names("zzz")).toEqual([]);
      const [row] = (await browse.packagesPage(main, { termKey: "gadget", order: "relevance", offset: 0, limit: 1 }))
        .rows;
      expect(row).toEqual({
        group_name: "tools",
        name: "Gadget",
        latest_version: "1.0.0",
        manifest: newVersion(main, "tools", "Gadget", "1.0.0", { title: "Super ALPHA gadget" }).manifest,
        downloads: 0,
        published_at: day(6),
      });
    });

    it("ranks a package whose search text is not known, and finds text behind JSON escapes", async () => {
      await save(newVersion(main, "hidden", "Escaped", "1.0.0", {}, { publishedAt: day(10) }));
      await database().exec("UPDATE upack_versions SET manifest = ? WHERE id = ?", [
        String.raw`{"name":"Escaped","version":"1.0.0","title":"Secret \u0057idget \u00e9t\u00e9"}`,
        vid("hidden/Escaped 1.0.0"),
      ]);
      await database().exec("UPDATE upack_packages SET search_text = NULL WHERE name_key = 'tagged'");
      const names = async (termKey: string) =>
        (await page(main, { termKey, order: "relevance", offset: 0, limit: 100 })).names;
      expect(await names("secret widget")).toEqual(["hidden/Escaped"]);
      expect(await names("été")).toEqual(["hidden/Escaped"]);
      expect(await names("\\u0057")).toEqual([]);
      // A term not searched before (orders are kept until the next write through a repository).
      expect(await names("beta")).toEqual(["tools/Tagged"]);
    });

    it("sees a new latest version at once in the orders it keeps between writes", async () => {
      const before = await page(main, { order: "updated", offset: 0, limit: 2 });
      const searched = await page(main, { termKey: "widgets", order: "relevance", offset: 0, limit: 10 });
      expect(searched.names).toEqual(["alpha-widgets"]);
      await save(newVersion(main, "", "Beta", "1.0.0", { title: "More widgets" }, { publishedAt: day(20) }));
      expect((await page(main, { order: "updated", offset: 0, limit: 2 })).names).toEqual(["Beta", before.names[0]]);
      expect((await page(main, { termKey: "widgets", order: "relevance", offset: 0, limit: 10 })).names).toEqual([
        "alpha-widgets",
        "Beta",
      ]);
    });

    it("finds one package with its version count, and nothing elsewhere", async () => {
      expect(await browse.findPackage(main, "", "alpha")).toEqual({
        group_name: "",
        name: "Alpha",
        latest_version: "1.10.0",
        downloads: 0,
        version_count: 3,
      });
      expect(await browse.findPackage(other, "", "alpha")).toEqual({
        group_name: "",
        name: "Alpha",
        latest_version: "9.0.0",
        downloads: 0,
        version_count: 1,
      });
      expect(await browse.findPackage(main, "", "nope")).toBeUndefined();
      expect(await browse.findPackage(main, "tools", "alpha")).toBeUndefined();
    });

    it("pages versions newest first, and finds one version or the latest", async () => {
      const latest = {
        version: "1.10.0",
        manifest: ALPHA_LATEST().manifest,
        downloads: 0,
        published_at: day(3),
        published_by: "bob",
        size: 1000,
        sha1: "sha1 1.10.0",
        sha256: "sha256 /Alpha 1.10.0",
        is_cached: 0,
        is_virtual: 0,
      };
      const versions = await browse.versionsPage(main, "", "alpha", 0, 10);
      expect(versions.map((row) => row.version)).toEqual(["1.10.0", "1.2.0-beta", "1.0.0"]);
      expect(versions[0]).toEqual(latest);
      expect((await browse.versionsPage(main, "", "alpha", 1, 1)).map((row) => row.version)).toEqual(["1.2.0-beta"]);
      expect(await browse.versionsPage(main, "", "alpha", 3, 10)).toEqual([]);
      expect(await browse.versionsPage(main, "", "nope", 0, 10)).toEqual([]);
      expect(await browse.findVersion(main, "", "alpha")).toEqual(latest);
      expect(await browse.findVersion(main, "", "alpha", "1.10.0")).toEqual(latest);
      expect((await browse.findVersion(main, "", "alpha", "1.2.0-beta"))?.published_by).toBeNull();
      expect(await browse.findVersion(main, "", "alpha", "9.9.9")).toBeUndefined();
      expect(await browse.findVersion(main, "", "nope")).toBeUndefined();
    });

    it("gives a version's file list as stored", async () => {
      expect(await browse.fileListOf(main, "", "alpha", "1.0.0")).toBe(
        `[{"name":"Alpha.txt","size":1,"date":"${T0}"}]`,
      );
      expect(await browse.fileListOf(main, "", "alpha", "2.0.0")).toBeUndefined();
      expect(await browse.fileListOf(other, "tools", "gadget", "1.0.0")).toBeUndefined();
    });

    it("tells which packages of a list the feed holds, in the order asked", async () => {
      const found = await browse.existing(main, [
        { groupKey: "tools", nameKey: "helper" },
        { groupKey: "", nameKey: "elsewhere" },
        { groupKey: "", nameKey: "alpha" },
        { groupKey: "tools", nameKey: "HELPER" },
      ]);
      expect([...found]).toEqual(["tools\0helper", "\0alpha"]);
      expect([...(await browse.existing(other, [{ groupKey: "tools", nameKey: "helper" }]))]).toEqual([]);
      expect(await browse.existing(main, [])).toEqual(new Set());
    });

    it("shows downloads counted just before, on pages and on packages", async () => {
      const [row] = await database().exec("SELECT package_id FROM upack_versions WHERE id = ?", [
        vid("tools/Gadget 1.0.0"),
      ]);
      await query.recordDownload(main, vid("tools/Gadget 1.0.0"), Number(row?.package_id));
      expect((await browse.findPackage(main, "tools", "gadget"))?.downloads).toBe(1);
      await query.recordDownload(main, vid("tools/Gadget 1.0.0"), Number(row?.package_id));
      expect((await browse.findVersion(main, "tools", "gadget"))?.downloads).toBe(2);
      await query.recordDownload(main, vid("tools/Gadget 1.0.0"), Number(row?.package_id));
      const listed = await browse.packagesPage(main, { termKey: "gadget", order: "relevance", offset: 0, limit: 1 });
      expect(listed.rows[0]?.downloads).toBe(3);
      await query.recordDownload(main, vid("tools/Gadget 1.0.0"), Number(row?.package_id));
      expect((await browse.versionsPage(main, "tools", "gadget", 0, 1))[0]?.downloads).toBe(4);
    });
  });

  describe("AssembledCache", () => {
    let feed: number;
    beforeAll(async () => {
      feed = await newFeed();
      await save(
        newVersion(feed, "", "V", "1.0.0", {}, { isVirtual: true }),
        newVersion(feed, "", "V", "2.0.0", {}, { isVirtual: true }),
        newVersion(feed, "", "V", "3.0.0", {}, { isVirtual: true }),
      );
    });

    it("finds, saves, replaces and forgets one version's assembly", async () => {
      const v1 = vid("/V 1.0.0");
      expect(await assembled.find(v1)).toBeUndefined();
      const saved = await assembled.save(v1, INFO);
      expect(saved).toEqual({
        versionId: v1,
        blobSha256: INFO.sha256,
        sha1: INFO.sha1,
        size: 42,
        assembledAt: ASSEMBLED,
      });
      expect(await assembled.find(v1)).toEqual(saved);
      await assembled.save(v1, { ...INFO, sha256: "c".repeat(64), size: 43 });
      expect(await assembled.find(v1)).toEqual({ ...saved, blobSha256: "c".repeat(64), size: 43 });
      await assembled.forget(v1);
      expect(await assembled.find(v1)).toBeUndefined();
      await assembled.forget(v1);
    });

    it("forgets a feed's assemblies and no other's, and says how many", async () => {
      const mainVersion = vid("/Alpha 1.0.0");
      await assembled.save(mainVersion, INFO);
      await assembled.save(vid("/V 1.0.0"), INFO);
      await assembled.save(vid("/V 2.0.0"), INFO);
      expect(await assembled.forgetFeed(feed)).toBe(2);
      expect(await assembled.forgetFeed(feed)).toBe(0);
      expect(await assembled.find(vid("/V 2.0.0"))).toBeUndefined();
      expect((await assembled.find(mainVersion))?.versionId).toBe(mainVersion);
      await assembled.forget(mainVersion);
    });

    it("goes with its version, and refuses one for a version that is gone with a foreign key violation", async () => {
      const v3 = vid("/V 3.0.0");
      await assembled.save(v3, INFO);
      expect(await write.deleteVersion(feed, { group: "", name: "V", version: "3.0.0" }, UPLOAD)).toMatchObject({
        id: v3,
      });
      expect(await assembled.find(v3)).toBeUndefined();
      const refused = await assembled.save(v3, INFO).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(isForeignKeyViolation(refused)).toBe(true);
      expect(await assembled.find(v3)).toBeUndefined();
    });

    it("tells the node's caches of each write at once (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const before = db.commits();
      await assembled.save(vid("/V 1.0.0"), INFO);
      await assembled.forget(vid("/V 1.0.0"));
      await assembled.forgetFeed(feed);
      expect(db.commits()).toBe(before + 3);
    });

    describe("races between nodes (PostgreSQL)", () => {
      const otherNode = otherNodesForBlock(database);

      it("keeps one row when nodes save one version at once, and no raw error when it is deleted meanwhile", async () => {
        if (database().kind !== "postgres") return;
        const racers = Array.from({ length: 4 }, () => createPostgresAssembledCache(otherNode(), clock));
        const v1 = vid("/V 1.0.0");
        const saved = await Promise.all(racers.map((cache, n) => cache.save(v1, { ...INFO, size: n })));
        expect(saved.map((row) => row.size)).toEqual([0, 1, 2, 3]);
        expect([0, 1, 2, 3]).toContain((await assembled.find(v1))?.size);
        expect(
          await database().exec("SELECT count(*)::int AS n FROM upack_assembled WHERE version_id = ?", [v1]),
        ).toEqual([{ n: 1 }]);

        const v2 = vid("/V 2.0.0");
        const [deleted, ...results] = await Promise.allSettled([
          write.deleteVersion(feed, { group: "", name: "V", version: "2.0.0" }, UPLOAD),
          ...racers.map((cache) => cache.save(v2, INFO)),
        ]);
        expect(deleted.status).toBe("fulfilled");
        for (const result of results) {
          if (result.status === "rejected") expect(isForeignKeyViolation(result.reason)).toBe(true);
        }
        expect(await assembled.find(v2)).toBeUndefined();
      });
    });
  });

  describe("virtual downloads on the cache", () => {
    let root: string;
    afterAll(async () => {
      if (root !== undefined) await rm(root, { recursive: true, force: true });
    });

    it("does not keep an assembly whose save reached the database after a change's forgetting", async () => {
      root = await mkdtemp(join(tmpdir(), "wharf-upack-browse-"));
      const blobs = createFileBlobStore(join(root, "blobs"));
      const feed = await newFeed();
      const source = await blobs.put(Readable.from([await buildUpack({ name: "Src", version: "1.0.0" })]));
      await save(newVersion(feed, "", "Src", "1.0.0", {}, { blobSha256: source.sha256, sha1: source.sha1 }));
      const manifest = JSON.stringify({ name: "Virt", version: "1.0.0", contents: ["Src:1.0.0"] });
      await save(newVersion(feed, "", "Virt", "1.0.0", {}, { manifest, isVirtual: true }));
      const versionId = vid("/Virt 1.0.0");

      // The save is sent, and reaches the database only after forgetFeed's delete (as it can on PostgreSQL).
      let release = () => undefined as void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let saving = () => undefined as void;
      const saveSent = new Promise<void>((resolve) => (saving = resolve));
      const slow: AssembledCache = {
        ...assembled,
        save: async (id, info) => {
          saving();
          await gate;
          return assembled.save(id, info);
        },
      };
      const virtual = createVirtualDownloads({
        assembled: slow,
        repository: query,
        blobs,
        fetch: createGuardedFetch({ allowPrivate: false, timeoutMs: 1000, maxBytes: 1e6, maxRedirects: 0 }),
        tmpDir: join(root, "tmp"),
        clock,
      });
      const version: VirtualPackageVersion = {
        feed: { id: feed } as VirtualPackageVersion["feed"],
        versionId,
        group: "",
        name: "Virt",
        version: "1.0.0",
        manifest,
        publishedAt: new Date(T0),
      };
      const download = virtual.assemble(version);
      await saveSent;
      await virtual.forgetFeed(feed);
      release();
      const served = await download;
      expect(served.sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(await assembled.find(versionId)).toBeUndefined();

      // An assembly that started after the change is kept.
      expect((await virtual.assemble(version)).sha256).toBe(served.sha256);
      expect(await assembled.find(versionId)).toMatchObject({ versionId, blobSha256: served.sha256 });
    });
  });

  describe("feed totals", () => {
    it("counts each feed's packages with a version and their versions' sizes, and asset files", async () => {
      const feed = await newFeed();
      const assets = await insertFeed(database().exec, "files", T0, "asset");
      await save(
        newVersion(feed, "", "One", "1.0.0", {}, { size: 10 }),
        newVersion(feed, "", "One", "2.0.0", {}, { size: 20 }),
        newVersion(feed, "g", "Two", "1.0.0", {}, { size: 2 ** 40 }),
      );
      const insertItem = (path: string, folder: boolean, size: number | null) =>
        database().exec(
          `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
                                    created_at, modified_at)
           VALUES (?, ?, ?, '', ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            assets,
            path,
            path.toLowerCase(),
            folder ? 1 : 0,
            ...(folder ? [null, null, null, null, null] : ["x".repeat(64), size, "m", "s1", "s512"]),
            T0,
            T0,
          ],
        );
      await insertItem("a.txt", false, 5);
      await insertItem("b.txt", false, 7);
      await insertItem("dir", true, null);
      // A write through a repository: the totals kept before it are read again.
      await save(newVersion(feed, "", "One", "3.0.0", {}, { size: 30 }));
      const byFeed = await totals();
      expect(byFeed.get(feed)).toEqual({ items: 2, bytes: 60 + 2 ** 40 });
      expect(byFeed.get(assets)).toEqual({ items: 2, bytes: 12 });
      expect(byFeed.get(main)).toEqual({ items: 10, bytes: 12 * 1000 });
      expect(byFeed.get(999_999)).toBeUndefined();
      expect(await totals()).toBe(byFeed);

      await write.deleteVersion(feed, { group: "g", name: "Two", version: "1.0.0" }, UPLOAD);
      expect((await totals()).get(feed)).toEqual({ items: 1, bytes: 60 });
    });
  });
});
