import { beforeAll, describe, expect, it } from "vitest";
import {
  createPackagesApiRepository,
  type PackagesApiRepository,
} from "../../../src/areas/upack/packages-api/repository.js";
import { createPostgresPackagesApiRepository } from "../../../src/areas/upack/packages-api/repository-postgres.js";
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
import { versionSortKey } from "../../../src/domain/upack-version-sort.js";
import { parseVersion } from "../../../src/domain/upack-version.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const DOWNLOADED = "2026-11-30T08:00:00.000Z";
const clock = { now: () => new Date(DOWNLOADED) };
const UPLOAD = { actor: "ann" };

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
  readonly api: PackagesApiRepository;
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
        api: createPackagesApiRepository(database.sqlite),
      }
    : {
        write: createPostgresUpackWriteRepository(database.postgres, clock),
        query: createPostgresUpackQueryRepository(database.postgres, watchOf(database), clock),
        api: createPostgresPackagesApiRepository(database.postgres),
      };

describeOnBothDatabases("Universal package reads", (database) => {
  let write: UpackWriteRepository;
  let query: UpackQueryRepository;
  let api: PackagesApiRepository;
  let feeds = 0;
  let main: number;
  let other: number;
  /** Version ids by "group/name version", package ids by "group/name". */
  const versionIds = new Map<string, number>();
  const packageIds = new Map<string, number>();

  const newFeed = (name = `feed${++feeds}`) => insertFeed(database().exec, name, T0);

  async function save(...versions: NewVersion[]): Promise<void> {
    const outcomes = await write.saveVersions(versions, { replace: false, cause: UPLOAD });
    for (const [i, version] of versions.entries()) {
      versionIds.set(`${version.group}/${version.name} ${version.version}`, outcomes[i]?.versionId ?? 0);
      const [row] = (await database().exec("SELECT package_id FROM upack_versions WHERE id = ?", [
        outcomes[i]?.versionId,
      ])) as [{ package_id: number }];
      packageIds.set(`${version.group}/${version.name}`, row.package_id);
    }
  }

  const vid = (key: string) => versionIds.get(key) as number;
  const pid = (key: string) => packageIds.get(key) as number;

  const ALPHA = [
    newVersion(0, "", "Alpha", "1.0.0"),
    newVersion(0, "", "Alpha", "1.10.0", { title: "Alpha tool" }),
    newVersion(0, "", "Alpha", "1.2.0-beta"),
  ];

  beforeAll(async () => {
    ({ write, query, api } = repositoriesOn(database()));
    main = await newFeed("main");
    other = await newFeed("other");
    const at = (version: NewVersion) => ({ ...version, feedId: main });
    await save(...ALPHA.map(at));
    await save(newVersion(main, "", "alpha-widgets", "2.0.0", { title: "Widgets" }));
    await save(newVersion(main, "Apps", "my_alpha", "1.0.0"), newVersion(main, "zz", "my_alpha", "1.0.0"));
    await save(newVersion(main, "tools", "Gadget", "1.0.0", { title: "Super ALPHA gadget" }));
    await save(
      newVersion(main, "tools", "Helper", "1.0.0", { description: "100% pure", shortDescription: "an Alpha helper" }),
    );
    await save(newVersion(main, "tools", "Tagged", "1.0.0", { tags: ["beta", "ALPHA-tag"] }));
    await save(newVersion(main, "tools", "Umlaut", "1.0.0", { title: "ÄPFEL und Birnen" }));
    await save(newVersion(main, "pulled", "Cached", "1.0.0", {}, { isCached: true, isVirtual: true }));
    await save(newVersion(other, "", "Elsewhere", "1.0.0"));
  });

  describe("UpackQueryRepository", () => {
    it("finds one package with its latest version, and nothing for an unknown one", async () => {
      expect(await query.findPackage(main, "", "alpha")).toEqual({
        package_id: pid("/Alpha"),
        group_name: "",
        name: "Alpha",
        latest_version: "1.10.0",
        versions_desc: '["1.10.0","1.2.0-beta","1.0.0"]',
        downloads: 0,
        manifest: ALPHA[1]?.manifest,
        is_cached: 0,
        is_virtual: 0,
      });
      expect(await query.findPackage(main, "pulled", "cached")).toMatchObject({ is_cached: 1, is_virtual: 1 });
      expect(await query.findPackage(main, "", "nope")).toBeUndefined();
      expect(await query.findPackage(other, "", "alpha")).toBeUndefined();
    });

    it("lists packages by group, then name, up to the limit", async () => {
      const names = async (groupKey: string | undefined, limit: number) =>
        (await query.listPackages(main, groupKey, limit)).map((row) => `${row.group_name}/${row.name}`);
      expect(await names(undefined, 100)).toEqual([
        "/Alpha",
        "/alpha-widgets",
        "Apps/my_alpha",
        "pulled/Cached",
        "tools/Gadget",
        "tools/Helper",
        "tools/Tagged",
        "tools/Umlaut",
        "zz/my_alpha",
      ]);
      expect(await names(undefined, 2)).toEqual(["/Alpha", "/alpha-widgets"]);
      expect(await names("tools", 3)).toEqual(["tools/Gadget", "tools/Helper", "tools/Tagged"]);
      expect(await names("", 100)).toEqual(["/Alpha", "/alpha-widgets"]);
      expect(await names("none", 100)).toEqual([]);
      const [first] = await query.listPackages(main, undefined, 1);
      expect(first).toEqual(await query.findPackage(main, "", "alpha"));
    });

    it("ranks a search: name, prefix, infix, title, descriptions, tags; ASCII case ignored", async () => {
      const rows = await query.searchPackages(main, "alpha", 100);
      expect(rows.map((row) => [row.group_name, row.name, (row as unknown as { rank: number }).rank])).toEqual([
        ["", "Alpha", 0],
        ["", "alpha-widgets", 1],
        ["Apps", "my_alpha", 2],
        ["zz", "my_alpha", 2],
        ["tools", "Gadget", 3],
        ["tools", "Helper", 4],
        ["tools", "Tagged", 5],
      ]);
      // The row as listed, with the ranking's own columns, as SQLite's SELECT * gives them.
      expect(rows[0]).toEqual({
        ...(await query.findPackage(main, "", "alpha")),
        group_key: "",
        name_key: "alpha",
        rank: 0,
      });
      expect((await query.searchPackages(main, "alpha", 2)).map((row) => row.name)).toEqual(["Alpha", "alpha-widgets"]);
    });

    it("matches LIKE's wildcards as themselves and folds no letter case beyond ASCII", async () => {
      const names = async (term: string) => (await query.searchPackages(main, term, 100)).map((row) => row.name);
      expect(await names("_")).toEqual(["my_alpha", "my_alpha"]);
      expect(await names("%")).toEqual(["Helper"]);
      expect(await names("\\")).toEqual([]);
      expect(await names("pfel")).toEqual(["Umlaut"]);
      expect(await names("äpfel")).toEqual([]);
      expect(await names("birnen")).toEqual(["Umlaut"]);
      expect(await names("beta")).toEqual(["Tagged"]);
      expect(await names("nothing")).toEqual([]);
    });

    it("never fails a search over a manifest jsonb cannot hold: PostgreSQL ranks it by its name alone", async () => {
      const feed = await newFeed();
      await save(
        newVersion(feed, "", "Pill", "1.0.0", { title: "Poison", description: "nul \u0000 inside" }),
        newVersion(feed, "", "Escaped", "1.0.0", { title: "Control \u0001 poison" }),
      );
      const ranked = async (term: string) =>
        (await query.searchPackages(feed, term, 10)).map((row) => [
          row.name,
          (row as unknown as { rank: number }).rank,
        ]);
      expect(await ranked("poison")).toEqual(
        database().kind === "sqlite"
          ? [
              ["Escaped", 3],
              ["Pill", 3],
            ]
          : [["Escaped", 3]],
      );
      expect(await ranked("pill")).toEqual([["Pill", 0]]);
    });

    it("lists versions newest first within each package, with or without files", async () => {
      const alpha = await query.listVersions(main, { groupKey: "", nameKey: "alpha" }, 1, false);
      expect(alpha.map((row) => row.version)).toEqual(["1.10.0", "1.2.0-beta", "1.0.0"]);
      expect(alpha[0]).toEqual({
        package_id: pid("/Alpha"),
        group_name: "",
        name: "Alpha",
        version: "1.10.0",
        manifest: ALPHA[1]?.manifest,
        downloads: 0,
        published_at: T0,
        size: 1000,
        sha1: "sha1 1.10.0",
        is_cached: 0,
        is_virtual: 0,
      });
      const withFiles = await query.listVersions(main, { nameKey: "alpha" }, 1, true);
      expect(withFiles[0]).toEqual({ ...alpha[0], file_list: `[{"name":"Alpha.txt","size":1,"date":"${T0}"}]` });
      expect(withFiles).toHaveLength(3);

      const all = await query.listVersions(main, {}, 100, false);
      expect(all.map((row) => `${row.group_name}/${row.name} ${row.version}`)).toEqual([
        "/Alpha 1.10.0",
        "/Alpha 1.2.0-beta",
        "/Alpha 1.0.0",
        "/alpha-widgets 2.0.0",
        "Apps/my_alpha 1.0.0",
        "pulled/Cached 1.0.0",
        "tools/Gadget 1.0.0",
        "tools/Helper 1.0.0",
        "tools/Tagged 1.0.0",
        "tools/Umlaut 1.0.0",
        "zz/my_alpha 1.0.0",
      ]);
      expect((await query.listVersions(main, {}, 2, false)).map((row) => row.version)).toEqual([
        "1.10.0",
        "1.2.0-beta",
      ]);
      expect(
        (await query.listVersions(main, { groupKey: "tools" }, 2, false)).map((row) => `${row.name} ${row.version}`),
      ).toEqual(["Gadget 1.0.0", "Helper 1.0.0"]);
      expect(await query.listVersions(main, { groupKey: "tools", nameKey: "alpha" }, 100, false)).toEqual([]);
    });

    it("finds one version, its download, its manifest; nothing for unknown ones", async () => {
      const [, beta] = await query.listVersions(main, { nameKey: "alpha" }, 0, true);
      expect(await query.findVersion(main, "", "alpha", "1.2.0-beta", true)).toEqual(beta);
      const { file_list: _files, ...plain } = beta ?? {};
      expect(await query.findVersion(main, "", "alpha", "1.2.0-beta", false)).toEqual(plain);
      expect(await query.findVersion(main, "", "alpha", "9.0.0", false)).toBeUndefined();

      const download = {
        version_id: vid("/Alpha 1.10.0"),
        package_id: pid("/Alpha"),
        group_name: "",
        name: "Alpha",
        version: "1.10.0",
        blob_sha256: "sha256 /Alpha 1.10.0",
        sha1: "sha1 1.10.0",
        size: 1000,
        published_at: T0,
        is_virtual: 0,
      };
      expect(await query.findDownload(main, "", "alpha", "1.10.0")).toEqual(download);
      expect(await query.findDownload(main, "", "alpha", undefined)).toEqual(download);
      expect(await query.findDownload(main, "", "alpha", "1.0.0")).toMatchObject({ version_id: vid("/Alpha 1.0.0") });
      expect(await query.findDownload(main, "", "alpha", "2.0.0")).toBeUndefined();
      expect(await query.findDownload(main, "x", "alpha", undefined)).toBeUndefined();

      expect(await query.manifestOf(vid("/Alpha 1.10.0"))).toBe(ALPHA[1]?.manifest);
      expect(await query.manifestOf(999_999)).toBeUndefined();
    });

    it("tells whether a package exists and whether the feed owns it, and counts a feed's packages", async () => {
      expect(await query.packageExists(main, "", "alpha")).toBe(true);
      expect(await query.packageExists(main, "pulled", "cached")).toBe(true);
      expect(await query.packageExists(main, "", "cached")).toBe(false);
      expect(await query.ownsPackage(main, "", "alpha")).toBe(true);
      expect(await query.ownsPackage(main, "pulled", "cached")).toBe(false);
      expect(await query.ownsPackage(main, "", "nope")).toBe(false);
      expect(await query.counts(main)).toEqual({ packages: 9, versions: 11 });
      expect(await query.counts(other)).toEqual({ packages: 1, versions: 1 });
      expect(await query.counts(999_999)).toEqual({ packages: 0, versions: 0 });
    });

    it("counts downloads, shown by the next read, and moves only the downloaded feed's generation", async () => {
      const feed = await newFeed();
      await save(newVersion(feed, "", "Counted", "1.0.0"), newVersion(feed, "", "Counted", "2.0.0"));
      const unchanged = query.generation(feed);
      expect(query.generation(feed)).toBe(unchanged);
      const elsewhere = query.generation(other);
      const [one, two, pkg] = [vid("/Counted 1.0.0"), vid("/Counted 2.0.0"), pid("/Counted")];
      for (let i = 0; i < 3; i += 1) await query.recordDownload(feed, two, pkg);
      await query.recordDownload(feed, one, pkg);
      const moved = query.generation(feed);
      expect(moved).not.toBe(unchanged);
      expect(query.generation(other)).toBe(elsewhere);

      expect((await query.listVersions(feed, { nameKey: "counted" }, 0, false)).map((row) => row.downloads)).toEqual([
        3, 1,
      ]);
      expect(query.generation(feed)).toBe(moved);
      expect(query.generation(other)).toBe(elsewhere);
      expect(await query.findPackage(feed, "", "counted")).toMatchObject({ downloads: 4 });
      expect(
        await database().exec(
          "SELECT version, last_downloaded_at FROM upack_versions WHERE package_id = ? ORDER BY id",
          [pkg],
        ),
      ).toEqual([
        { version: "1.0.0", last_downloaded_at: DOWNLOADED },
        { version: "2.0.0", last_downloaded_at: DOWNLOADED },
      ]);
      // The Common Packages API shows the same counts, written before it reads.
      await query.recordDownload(feed, one, pkg);
      expect(await api.findVersion(feed, "", "counted", "1.0.0")).toMatchObject({ downloads: 2, total_downloads: 5 });

      // A write moves every feed's generation.
      await save(newVersion(feed, "", "Counted", "3.0.0"));
      expect(query.generation(other)).not.toBe(elsewhere);
    });

    it("forgets the download of a version deleted before its count was written", async () => {
      const feed = await newFeed();
      await save(newVersion(feed, "", "Brief", "1.0.0"), newVersion(feed, "", "Brief", "2.0.0"));
      await query.recordDownload(feed, vid("/Brief 2.0.0"), pid("/Brief"));
      await query.recordDownload(feed, vid("/Brief 1.0.0"), pid("/Brief"));
      await write.deleteVersion(feed, { group: "", name: "Brief", version: "2.0.0" }, UPLOAD);
      expect(await query.findPackage(feed, "", "brief")).toMatchObject({ downloads: 1, latest_version: "1.0.0" });
      await query.recordDownload(feed, vid("/Brief 1.0.0"), pid("/Brief"));
      await write.deleteVersion(feed, { group: "", name: "Brief", version: "1.0.0" }, UPLOAD);
      expect(await query.findPackage(feed, "", "brief")).toBeUndefined();
      expect(await query.listVersions(feed, {}, 100, false)).toEqual([]);
    });

    it("writes download counts quietly: no node's cache version moves (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const before = db.commits();
      await query.recordDownload(main, vid("/Alpha 1.0.0"), pid("/Alpha"));
      expect(await query.findVersion(main, "", "alpha", "1.0.0", false)).toMatchObject({ downloads: 1 });
      expect(db.commits()).toBe(before);
    });

    it("keeps the counts of a package another transaction holds for later, without waiting (PostgreSQL)", async () => {
      const db = database();
      if (db.kind !== "postgres") return;
      const feed = await newFeed();
      await save(newVersion(feed, "", "Held", "1.0.0"), newVersion(feed, "", "Free", "1.0.0"));
      const holder = await db.postgres.pool.connect();
      try {
        await holder.query("BEGIN");
        await holder.query("SELECT id FROM upack_packages WHERE id = $1 FOR UPDATE", [pid("/Held")]);
        await query.recordDownload(feed, vid("/Held 1.0.0"), pid("/Held"));
        await query.recordDownload(feed, vid("/Free 1.0.0"), pid("/Free"));
        const asked = query.generation(feed);
        expect((await query.listPackages(feed, undefined, 10)).map((row) => [row.name, row.downloads])).toEqual([
          ["Free", 1],
          ["Held", 0],
        ]);
        // What was read is not to be served once the kept count is written.
        expect(query.generation(feed)).not.toBe(asked);
        await holder.query("COMMIT");
      } finally {
        holder.release();
      }
      expect((await query.listPackages(feed, undefined, 10)).map((row) => [row.name, row.downloads])).toEqual([
        ["Free", 1],
        ["Held", 1],
      ]);
    });

    describe("races between nodes (PostgreSQL)", () => {
      /** Each on a pool of its own, as the nodes of a cluster, each with its own download counter. */
      let nodes: Array<{ write: UpackWriteRepository; query: UpackQueryRepository }> = [];
      const otherNode = otherNodesForBlock(database);
      beforeAll(() => {
        if (database().kind !== "postgres") return;
        nodes = Array.from({ length: 4 }, () => {
          const node = otherNode();
          return {
            write: createPostgresUpackWriteRepository(node, clock),
            query: createPostgresUpackQueryRepository(node, { version: () => "0" }, clock),
          };
        });
      });

      it("loses no count and never deadlocks while the counted versions are replaced (PostgreSQL)", async () => {
        if (database().kind !== "postgres") return;
        const feed = await newFeed();
        await save(newVersion(feed, "", "Hot", "1.0.0"), newVersion(feed, "", "Warm", "1.0.0"));
        const targets = [
          [vid("/Hot 1.0.0"), pid("/Hot")],
          [vid("/Warm 1.0.0"), pid("/Warm")],
        ] as const;
        const rounds = 5;
        await Promise.all(
          nodes.map(async (node, n) => {
            for (let round = 0; round < rounds; round += 1) {
              for (const [versionId, packageId] of targets) await node.query.recordDownload(feed, versionId, packageId);
              await Promise.all([
                node.query.listPackages(feed, undefined, 10),
                node.write.saveVersions(
                  n % 2 === 0
                    ? [newVersion(feed, "", "Hot", "1.0.0"), newVersion(feed, "", "Warm", "1.0.0")]
                    : [newVersion(feed, "", "Warm", "1.0.0"), newVersion(feed, "", "Hot", "1.0.0")],
                  { replace: true, cause: UPLOAD },
                ),
              ]);
            }
          }),
        );
        // A count kept for later (its package was busy) is written by the next read of its node.
        for (const node of nodes) await node.query.listPackages(feed, undefined, 10);
        const total = nodes.length * rounds;
        expect((await query.listPackages(feed, undefined, 10)).map((row) => [row.name, row.downloads])).toEqual([
          ["Hot", total],
          ["Warm", total],
        ]);
        expect(
          await database().exec(
            "SELECT sum(v.downloads) AS n FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id WHERE p.feed_id = ?",
            [feed],
          ),
        ).toEqual([{ n: String(2 * total) }]);
      });
    });
  });

  describe("PackagesApiRepository", () => {
    let feed: number;
    beforeAll(async () => {
      feed = await newFeed();
      await save(
        newVersion(feed, "", "Lib", "1.0.0"),
        newVersion(feed, "", "Lib", "2.0.0-rc.1"),
        newVersion(feed, "", "Lib", "1.5.0+build-7"),
        newVersion(feed, "", "Lib", "1.5.0-beta+b"),
      );
      await save(newVersion(feed, "grp", "Pre", "1.0.0-alpha"));
      await save(
        newVersion(feed, "grp", "App", "3.0.0", {}, { md5: "md5", sha512: "sha512", publishedBy: "bob", size: 7 }),
      );
      await database().exec("UPDATE upack_versions SET downloads = 2 WHERE id = ?", [vid("/Lib 1.0.0")]);
      await database().exec("UPDATE upack_packages SET downloads = 2 WHERE id = ?", [pid("/Lib")]);
    });

    const ids = (rows: Array<{ group_name: string; name: string; version: string }>) =>
      rows.map((row) => `${row.group_name}/${row.name} ${row.version}`);

    it("lists versions by group, name, newest first, under each combination of filters", async () => {
      expect(ids(await api.listVersions(feed, {}))).toEqual([
        "/Lib 2.0.0-rc.1",
        "/Lib 1.5.0+build-7",
        "/Lib 1.5.0-beta+b",
        "/Lib 1.0.0",
        "grp/App 3.0.0",
        "grp/Pre 1.0.0-alpha",
      ]);
      expect(ids(await api.listVersions(feed, { groupKey: "grp" }))).toEqual(["grp/App 3.0.0", "grp/Pre 1.0.0-alpha"]);
      expect(ids(await api.listVersions(feed, { nameKey: "app" }))).toEqual(["grp/App 3.0.0"]);
      expect(ids(await api.listVersions(feed, { versionKey: "1.0.0" }))).toEqual(["/Lib 1.0.0"]);
      expect(ids(await api.listVersions(feed, { groupKey: "", nameKey: "lib", versionKey: "1.5.0+build-7" }))).toEqual([
        "/Lib 1.5.0+build-7",
      ]);
      expect(ids(await api.listVersions(feed, { groupKey: "grp", versionKey: "1.0.0-alpha" }))).toEqual([
        "grp/Pre 1.0.0-alpha",
      ]);
      expect(await api.listVersions(feed, { groupKey: "nope" })).toEqual([]);
    });

    it("shows every column of a version, and finds one", async () => {
      const app = {
        group_name: "grp",
        name: "App",
        version: "3.0.0",
        total_downloads: 0,
        downloads: 0,
        published_at: T0,
        published_by: "bob",
        size: 7,
        sha1: "sha1 3.0.0",
        blob_sha256: "sha256 grp/App 3.0.0",
        md5: "md5",
        sha512: "sha512",
      };
      expect(await api.listVersions(feed, { groupKey: "grp", nameKey: "app" })).toEqual([app]);
      expect(await api.findVersion(feed, "grp", "app", "3.0.0")).toEqual(app);
      expect(await api.findVersion(feed, "", "lib", "1.0.0")).toEqual({
        group_name: "",
        name: "Lib",
        version: "1.0.0",
        total_downloads: 2,
        downloads: 2,
        published_at: T0,
        published_by: null,
        size: 1000,
        sha1: "sha1 1.0.0",
        blob_sha256: "sha256 /Lib 1.0.0",
        md5: null,
        sha512: null,
      });
      expect(await api.findVersion(feed, "", "app", "3.0.0")).toBeUndefined();
      expect(await api.findVersion(feed, "grp", "app", "3.0.1")).toBeUndefined();
    });

    it("lists each package's latest version, or its latest release, ignoring a version filter", async () => {
      expect(ids(await api.listLatest(feed, {}, false))).toEqual([
        "/Lib 2.0.0-rc.1",
        "grp/App 3.0.0",
        "grp/Pre 1.0.0-alpha",
      ]);
      expect(ids(await api.listLatest(feed, {}, true))).toEqual(["/Lib 1.5.0+build-7", "grp/App 3.0.0"]);
      expect(ids(await api.listLatest(feed, { groupKey: "grp", versionKey: "9.9.9" }, true))).toEqual([
        "grp/App 3.0.0",
      ]);
      expect(ids(await api.listLatest(feed, { nameKey: "pre" }, true))).toEqual([]);
      expect(ids(await api.listLatest(feed, { groupKey: "", nameKey: "lib" }, false))).toEqual(["/Lib 2.0.0-rc.1"]);
    });
  });
});
