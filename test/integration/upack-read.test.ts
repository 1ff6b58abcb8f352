import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { createFeedService } from "../../src/areas/management/index.js";
import { packageDataSchema, versionDataSchema } from "../../src/areas/upack/present.js";
import { upackQueryRepositoryOf } from "../../src/areas/upack/services.js";
import { createUpackQueryService } from "../../src/areas/upack/read/query-service.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant, readOne } from "../helpers/fixtures.js";
import { type AddedVersion, createUpackFixtures, type UpackFixtures } from "../helpers/upack-fixtures.js";
import { insertLegacyFeed } from "../helpers/legacy-feed.js";
import { expectJson, expectText } from "../helpers/responses.js";

/**
 * Universal feed listings (docs/seed-api.md area A: list packages, list versions, search, feed
 * metadata; docs/compat.md 2.2, 2.3, 2.10, 2.11, 2.14), as stories over rows written by the fixtures.
 */

type Json = Record<string, unknown>;

const PUBLISHED = new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 120));

describe("universal feed listings", () => {
  let t: TestApp;
  let u: UpackFixtures;
  const added: Record<string, AddedVersion> = {};
  const get = (url: string) => t.app.inject({ url, headers: { "x-apikey": t.adminKey } });
  const feedIdOf = async (name: string) =>
    (await readOne<{ id: number }>(t.database, "SELECT id FROM feeds WHERE name = ?", name))?.id ?? 0;

  beforeAll(async () => {
    t = await buildTestApp();
    u = createUpackFixtures(t);
    await u.createFeed("main");
    await u.createFeed("other");
    // A feed of a type Wharf does not serve, as an older Wharf could create it.
    await insertLegacyFeed(t, "nugets", "nuget");
    const tool = { name: "tool" };
    added["tool 1.0.0"] = await u.addVersion("main", { ...tool, version: "1.0.0" }, { publishedAt: PUBLISHED });
    added["tool 1.10.0"] = await u.addVersion("main", { ...tool, version: "1.10.0" }, { downloads: 3 });
    added["tool 2.0.0-beta"] = await u.addVersion("main", { ...tool, version: "2.0.0-beta" }, { isCached: true });
    added["tool 2.0.0"] = await u.addVersion(
      "main",
      {
        ...tool,
        version: "2.0.0",
        manifest: {
          title: "The Tool",
          icon: "package://icon.png",
          description: "Builds things.",
          tags: ["build", "cli"],
          dependencies: ["acme/libs/Core:1.0.0"],
          _sourceRoot: "C:\\src",
          _custom: { nested: [1, 2] },
          // A custom property named like a server field must not shadow it.
          downloads: "999",
        },
        files: { "bin/tool.exe": "MZ", "docs/": null, "docs/readme.md": "# Tool" },
      },
      { downloads: 2 },
    );
    await u.addVersion("main", { group: "acme/libs", name: "Core", version: "0.9.0" });
    await u.addVersion("main", { group: "acme/libs", name: "Core", version: "1.0.0+b2" });
    await u.addVersion("main", { group: "acme/libs", name: "Core", version: "1.0.0" });
    await u.addVersion("main", { group: "acme", name: "core", version: "3.0.0", manifest: { title: "Toolbox" } });
    await u.addVersion("main", { name: "gadget", version: "1.0.0", manifest: { description: "a handy tool" } });
    await u.addVersion("main", { name: "widget", version: "1.0.0", manifest: { tags: ["tooling"] } });
    await u.addVersion("other", { name: "tool", version: "5.0.0" });
  });
  afterAll(async () => t?.close());

  describe("packages", () => {
    it("lists every package, ordered by group then name, as PackageData built from the latest version", async () => {
      const list = expectJson(await get("/upack/main/packages")) as Json[];
      expect(list.map((p) => `${p.group ?? ""}/${p.name}`)).toEqual([
        "/gadget",
        "/tool",
        "/widget",
        "acme/core",
        "acme/libs/Core",
      ]);
      for (const item of list) expect(() => packageDataSchema.parse(item)).not.toThrow();
      const tool = list[1] as Json;
      expect(tool).not.toHaveProperty("group");
      expect(tool).toMatchObject({
        name: "tool",
        latestVersion: "2.0.0",
        versions: ["2.0.0", "2.0.0-beta", "1.10.0", "1.0.0"],
        title: "The Tool",
        icon: "package://icon.png",
        description: "Builds things.",
        tags: ["build", "cli"],
        dependencies: ["acme/libs/Core:1.0.0"],
        _sourceRoot: "C:\\src",
        _custom: { nested: [1, 2] },
        downloads: "5",
        isLocal: true,
        isCached: false,
        isVirtual: false,
      });
      // Build metadata is part of the version; the one without it sorts above (docs/compat.md 1.4).
      expect(list[4]).toMatchObject({
        group: "acme/libs",
        latestVersion: "1.0.0",
        versions: ["1.0.0", "1.0.0+b2", "0.9.0"],
      });
      expect(list[0]).toMatchObject({ tags: [], dependencies: [], downloads: "0" });
    });

    it("filters by exact group, case-insensitively; `group=` is the empty group", async () => {
      const names = async (query: string) =>
        (expectJson(await get(`/upack/main/packages?${query}`)) as Json[]).map((p) => p.name);
      expect(await names("group=acme/libs")).toEqual(["Core"]);
      expect(await names("GROUP=ACME/LIBS")).toEqual(["Core"]);
      expect(await names("group=acme")).toEqual(["core"]); // full match, no sub-groups
      expect(await names("group=")).toEqual(["gadget", "tool", "widget"]);
      expect(await names("group=acme%2Flibs")).toEqual(["Core"]);
      expect(await names("group=nope")).toEqual([]);
    });

    it("answers one object for `name`, in the given group or the empty group, ignoring case and count", async () => {
      const tool = expectJson(await get("/upack/main/packages?name=TOOL&count=0")) as Json;
      expect(tool).toMatchObject({ name: "tool", latestVersion: "2.0.0" });
      const core = expectJson(await get("/upack/main/packages?group=Acme/Libs&name=core")) as Json;
      expect(core).toMatchObject({ group: "acme/libs", name: "Core" });
      expectText(await get("/upack/main/packages?name=Core"), 404, "package was not found");
      expectText(await get("/upack/main/packages?group=acme&name=nothing"), 404, "package was not found");
    });

    it("caps the list at `count`; a count that is not a number is a 400", async () => {
      expect(expectJson(await get("/upack/main/packages?count=2"))).toHaveLength(2);
      expect(expectJson(await get("/upack/main/packages?count=0"))).toEqual([]);
      expect(expectJson(await get("/upack/main/packages?count=99999"))).toHaveLength(5);
      expectText(await get("/upack/main/packages?count=ten"), 400, "count");
      expectText(await get("/upack/main/packages?count=-1"), 400, "count");
    });
  });

  describe("versions", () => {
    it("lists a package's versions newest first as VersionData", async () => {
      const list = expectJson(await get("/upack/main/versions?name=tool")) as Json[];
      expect(list.map((v) => v.version)).toEqual(["2.0.0", "2.0.0-beta", "1.10.0", "1.0.0"]);
      for (const item of list) expect(() => versionDataSchema.parse(item)).not.toThrow();
      const latest = list[0] as Json;
      const stored = added["tool 2.0.0"] as AddedVersion;
      expect(latest).toMatchObject({
        name: "tool",
        version: "2.0.0",
        title: "The Tool",
        dependencies: ["acme/libs/Core:1.0.0"],
        tags: ["build", "cli"],
        _custom: { nested: [1, 2] },
        downloads: "2",
        size: stored.bytes.length,
        sha1: stored.sha1,
        isLocal: true,
        isCached: false,
        isVirtual: false,
      });
      expect(latest).not.toHaveProperty("group");
      expect(latest).not.toHaveProperty("fileList");
      expect(latest.sha1).toMatch(/^[0-9a-f]{40}$/);
      expect(latest.published).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(list[3]).toMatchObject({ version: "1.0.0", published: "2024-05-06T07:08:09.120Z" });
      expect(list[1]).toMatchObject({ version: "2.0.0-beta", isLocal: false, isCached: true });
    });

    it("adds the contents' file list for includeFileList=True, in any case", async () => {
      for (const flag of ["True", "true", "TRUE"]) {
        const [latest] = expectJson(await get(`/upack/main/versions?name=tool&includeFileList=${flag}`)) as Json[];
        expect(latest?.fileList).toEqual([
          { name: "bin/tool.exe", size: 2, date: "2024-01-02T03:04:06.000Z" },
          { name: "docs/readme.md", size: 6, date: "2024-01-02T03:04:06.000Z" },
        ]);
      }
      const [plain] = expectJson(await get("/upack/main/versions?name=tool&includeFileList=False")) as Json[];
      expect(plain).not.toHaveProperty("fileList");
    });

    it("answers one object for `version`, matching case and leading zeros loosely; 404 with a message", async () => {
      const beta = expectJson(await get("/upack/main/versions?name=tool&version=2.0.0-BETA")) as Json;
      expect(beta).toMatchObject({ name: "tool", version: "2.0.0-beta" });
      const padded = expectJson(await get("/upack/main/versions?name=tool&version=01.10.0")) as Json;
      expect(padded.version).toBe("1.10.0");
      const withFiles = expectJson(await get("/upack/main/versions?name=tool&version=1.0.0&includeFileList=true"));
      expect((withFiles as Json).fileList).toEqual([{ name: "readme.txt", size: 10, date: expect.any(String) }]);
      const core = expectJson(await get("/upack/main/versions?group=acme/libs&name=Core&version=1.0.0+b2")) as Json;
      expect(core).toMatchObject({ group: "acme/libs", version: "1.0.0+b2" });
      expectText(await get("/upack/main/versions?name=tool&version=9.9.9"), 404, "was not found");
      expectText(await get("/upack/main/versions?name=tool&version=banana"), 404, "was not found");
      expectText(await get("/upack/main/versions?name=nothing&version=1.0.0"), 404, "was not found");
      expectText(await get("/upack/main/versions?version=1.0.0"), 400, "name");
    });

    it("searches only the empty group for a name without a group, and filters by group without a name", async () => {
      expect(expectJson(await get("/upack/main/versions?name=Core"))).toEqual([]);
      const inGroup = expectJson(await get("/upack/main/versions?group=acme/libs")) as Json[];
      expect(inGroup.map((v) => v.version)).toEqual(["1.0.0", "1.0.0+b2", "0.9.0"]);
      const all = expectJson(await get("/upack/main/versions")) as Json[];
      expect(all).toHaveLength(10);
      expect(all.slice(0, 5).map((v) => `${v.name} ${v.version}`)).toEqual([
        "gadget 1.0.0",
        "tool 2.0.0",
        "tool 2.0.0-beta",
        "tool 1.10.0",
        "tool 1.0.0",
      ]);
      expect(expectJson(await get("/upack/main/versions?count=3"))).toHaveLength(3);
    });
  });

  describe("search", () => {
    it("ranks exact name, prefix, substring, then title, description and tags; `query` and `term` alike", async () => {
      for (const parameter of ["query", "term"]) {
        const list = expectJson(await get(`/upack/main/search?${parameter}=tool`)) as Json[];
        expect(list.map((p) => p.name)).toEqual(["tool", "core", "gadget", "widget"]);
      }
      const prefix = expectJson(await get("/upack/main/search?query=COR")) as Json[];
      expect(prefix.map((p) => `${p.group}/${p.name}`)).toEqual(["acme/core", "acme/libs/Core"]);
      expect(expectJson(await get("/upack/main/search?query=zzz"))).toEqual([]);
      expect(expectJson(await get("/upack/main/search?query=%25"))).toEqual([]); // LIKE wildcards are literal
      expect(expectJson(await get("/upack/main/search"))).toHaveLength(5);
      expect(expectJson(await get("/upack/main/search?query=t&count=1"))).toHaveLength(1);
    });
  });

  describe("meta", () => {
    it("describes the feed: API version, counts and the services it really offers", async () => {
      const meta = expectJson(await get("/upack/main/meta"));
      expect(meta).toEqual({
        apiVersion: "1.5.0",
        name: "main",
        description: "",
        version: "1.5.0",
        packageCount: 5,
        packageVersionCount: 10,
        services: ["VirtualPackages", "UploadPackage", "UploadContents", "Delete", "DownloadContents"],
      });
      expect(expectJson(await get("/upack/OTHER/meta"))).toMatchObject({ name: "other" });
    });
  });

  describe("large answers", () => {
    // Over the size from which answers are kept until the database changes (read/query-service.ts).
    const description = "x".repeat(70 * 1024);
    const versions = async () =>
      (expectJson(await get("/upack/other/versions?name=big")) as Json[]).map((v) => `${v.version}:${v.downloads}`);

    it("reflect every change, made here or by another process", async () => {
      await u.addVersion("other", { name: "big", version: "1.0.0", manifest: { description } });
      expect(await versions()).toEqual(["1.0.0:0"]);
      expect(await versions()).toEqual(["1.0.0:0"]);
      expect((await get("/upack/other/download/big/1.0.0")).statusCode).toBe(200);
      expect(await versions()).toEqual(["1.0.0:1"]);
      await u.addVersion("other", { name: "big", version: "1.1.0", manifest: { description } });
      expect(await versions()).toEqual(["1.1.0:0", "1.0.0:1"]);
      await writeFromOutside(t, "UPDATE upack_versions SET downloads = 7 WHERE version = '1.1.0'");
      expect(await versions()).toEqual(["1.1.0:7", "1.0.0:1"]);
    });

    it("are reused until their own feed changes: downloads elsewhere leave them be", async () => {
      const repository = upackQueryRepositoryOf(t.database, systemClock);
      const service = createUpackQueryService({
        repository,
        feeds: createFeedService({ db: t.database, clock: systemClock, config: t.config }),
        virtualPackages: false,
      });
      const query = { name: "big", includeFileList: false, count: 1000 };
      const first = await service.listVersions("other", query);
      expect(await service.listVersions("other", query)).toBe(first);
      await repository.recordDownload(
        await feedIdOf("main"),
        added["tool 1.0.0"]?.versionId ?? 0,
        added["tool 1.0.0"]?.packageId ?? 0,
      );
      expect(await service.listVersions("other", query)).toBe(first);
      const big = (await readOne<{ id: number; package_id: number }>(
        t.database,
        "SELECT id, package_id FROM upack_versions WHERE version = '1.0.0' AND manifest LIKE '%xxxx%'",
      )) ?? { id: 0, package_id: 0 };
      await repository.recordDownload(await feedIdOf("other"), big.id, big.package_id);
      const after = await service.listVersions("other", query);
      expect(after).not.toBe(first);
      expect(after.toString()).toContain('"downloads":"2"');
    });
  });

  it("answers 404 for an unknown feed and for a feed of another type", async () => {
    for (const url of ["/upack/nope/packages", "/upack/nugets/versions", "/upack/nugets/meta", "/upack/nope/search"]) {
      expectText(await get(url), 404, "feed not found");
    }
  });

  describe("privileges (docs/compat.md 2.14)", () => {
    const listUrl = "/upack/main/packages";
    const downloadUrl = "/upack/main/download/tool/1.0.0";

    it("asks anonymous callers to authenticate", async () => {
      for (const url of [
        listUrl,
        "/upack/main/versions?name=tool",
        "/upack/main/search",
        "/upack/main/meta",
        downloadUrl,
      ]) {
        const res = await t.app.inject({ url });
        expect(res.statusCode, url).toBe(401);
        expect(res.headers["www-authenticate"]).toMatch(/^Basic realm=/);
      }
    });

    it("lets a feed key with view/download list and download its own feed only", async () => {
      const key = await createFeedKey(t.database, "main", ["view"]);
      expect((await t.app.inject({ url: listUrl, headers: { "x-apikey": key } })).statusCode).toBe(200);
      expect((await t.app.inject({ url: downloadUrl, headers: basic("api", key) })).statusCode).toBe(200);
      const other = await createFeedKey(t.database, "other", ["view"]);
      for (const url of [listUrl, downloadUrl]) {
        expectText(await t.app.inject({ url, headers: { "x-apikey": other } }), 403, PERMISSION_DENIED_MESSAGE);
      }
    });

    it("lets a user with only Feeds_ViewFeed list but not download", async () => {
      const userId = await createUser(t.database, "viewer", "viewer-password-1");
      await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "main" });
      const headers = basic("viewer", "viewer-password-1");
      expect((await t.app.inject({ url: listUrl, headers })).statusCode).toBe(200);
      expect((await t.app.inject({ url: "/upack/main/meta", headers })).statusCode).toBe(200);
      expectText(await t.app.inject({ url: downloadUrl, headers }), 403, PERMISSION_DENIED_MESSAGE);
      expect((await t.app.inject({ url: "/upack/other/packages", headers })).statusCode).toBe(403);
    });

    it("lets Anonymous read what it was granted", async () => {
      await grant(t.database, { anonymous: true, attributes: ["Feeds_ViewFeed"], feed: "other" });
      expect((await t.app.inject({ url: "/upack/other/packages" })).statusCode).toBe(200);
      expect((await t.app.inject({ url: "/upack/other/download/tool/5.0.0" })).statusCode).toBe(401);
    });
  });
});
