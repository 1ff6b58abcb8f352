import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createUser, grant } from "../helpers/fixtures.js";
import { type AddedVersion, buildUpack, createUpackFixtures, readTgz, readZip } from "../helpers/upack-fixtures.js";

/**
 * Replay of every read request real clients send to `/upack/<feed>/...`, byte for byte as
 * docs/clients.md section 3 records them (paths, query spelling, `%2F`, `/?`, bare `?latest`, headers),
 * each checked against what that client needs back (docs/clients.md section 4 items 3-7 and 12).
 */

type Json = Record<string, unknown>;
type Headers = Record<string, string>;

describe("universal feed reads as real clients send them", () => {
  let t: TestApp;
  let key: string;
  let pkg: AddedVersion;
  let jquery: Buffer;
  const user = { name: "builder", password: "builder-password-1" };
  const apiKey = () => ({ "X-ApiKey": key });
  const send = (url: string, headers: Headers = {}) => t.app.inject({ method: "GET", url, headers });
  const json = async (url: string, headers: Headers) => {
    const res = await send(url, headers);
    expect(res.statusCode, `${url}: ${res.body}`).toBe(200);
    // Inedo.UPack only checks that the type starts with application/json (docs/clients.md 3.1).
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    return res.json() as unknown;
  };

  beforeAll(async () => {
    t = await buildTestApp();
    const u = createUpackFixtures(t);
    await u.createFeed("feed1");
    key = await createFeedKey(t.database, "feed1", ["view"]);
    const userId = await createUser(t.database, user.name, user.password);
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_DownloadPackage"], feed: "feed1" });
    pkg = await u.addVersion("feed1", {
      group: "my/group",
      name: "pkg",
      version: "1.2.3",
      files: { "x.txt": "x" },
      manifest: { title: "Pkg", dependencies: ["other:1.0.0"] },
    });
    await u.addVersion("feed1", { group: "my/group", name: "pkg", version: "1.3.0-beta+build.7" });
    await u.addVersion("feed1", { name: "plain", version: "2.0.0", files: { "readme.txt": "hello" } });
    // Pushed the way Go upack and ProGetAutomation do (PUT on the feed URL itself), then read back.
    const jqueryBytes = await buildUpack({ group: "bower", name: "jquery", version: "3.7.1" });
    const push = await t.app.inject({
      method: "PUT",
      url: "/upack/feed1",
      headers: { ...basic("api", t.adminKey), "content-type": "application/octet-stream" },
      payload: jqueryBytes,
    });
    expect(push.statusCode, push.body).toBe(201);
    jquery = jqueryBytes;
  });
  afterAll(async () => t?.close());

  describe("Inedo.UPack UniversalFeedClient and the upack CLI (docs/clients.md 3.1, 3.2)", () => {
    const auth = () => basic(user.name, user.password); // pre-emptive Basic

    it("lists packages of a group as an array with name, latestVersion and versions", async () => {
      const list = (await json("/upack/feed1/packages?group=my%2Fgroup&count=100", auth())) as Json[];
      expect(list).toEqual([
        expect.objectContaining({
          group: "my/group",
          name: "pkg",
          latestVersion: "1.3.0-beta+build.7",
          versions: ["1.3.0-beta+build.7", "1.2.3"],
        }),
      ]);
      expect(await json("/upack/feed1/packages?count=1000", auth())).toHaveLength(3);
      expect(await json("/upack/feed1/search?term=pk", auth())).toEqual([expect.objectContaining({ name: "pkg" })]);
    });

    it("lists versions with includeFileList=False/True, and one version as an object", async () => {
      const list = (await json(
        "/upack/feed1/versions?group=my%2Fgroup&name=pkg&includeFileList=False",
        auth(),
      )) as Json[];
      expect(list.map((v) => v.version)).toEqual(["1.3.0-beta+build.7", "1.2.3"]);
      expect(list[0]).not.toHaveProperty("fileList");
      const one = (await json(
        "/upack/feed1/versions?group=my%2Fgroup&name=pkg&version=1.2.3&includeFileList=True",
        basic("api", key),
      )) as Json;
      expect(one).toMatchObject({ name: "pkg", version: "1.2.3", size: pkg.bytes.length, sha1: pkg.sha1 });
      expect(one.fileList).toEqual([{ name: "x.txt", size: 1, date: expect.any(String) }]);
      expect(Number.isNaN(Date.parse(String(one.published)))).toBe(false);
      expect(one.dependencies).toEqual(["other:1.0.0"]);
    });

    it("downloads by version (raw slashes, literal '+') and by bare ?latest; 404 for unknown", async () => {
      const exact = await send("/upack/feed1/download/my/group/pkg/1.2.3", auth());
      expect(exact.statusCode).toBe(200);
      expect(exact.rawPayload.equals(pkg.bytes)).toBe(true);
      expect((await send("/upack/feed1/download/my/group/pkg/1.3.0-beta+build.7", auth())).statusCode).toBe(200);
      const latest = await send("/upack/feed1/download/my/group/pkg?latest", auth());
      expect(latest.headers["content-disposition"]).toBe('attachment; filename="pkg.1.3.0-beta+build.7.upack"');
      expect((await send("/upack/feed1/download/my/group/nope/1.0.0", auth())).statusCode).toBe(404);
    });

    it("reads single files: upack.json by version, content with ?latest and an escaped path", async () => {
      const manifest = await json("/upack/feed1/download-file/my/group/pkg/1.2.3?path=upack.json", auth());
      expect(manifest).toMatchObject({ group: "my/group", name: "pkg", version: "1.2.3" });
      const file = await send("/upack/feed1/download-file/plain?latest&path=package%2Freadme.txt", auth());
      expect([file.statusCode, file.body]).toEqual([200, "hello"]);
    });
  });

  describe("Go upack 2.2.2 (docs/clients.md 3.3, wire capture)", () => {
    const auth = () => basic("api", key);

    it("install: packages?group=<escaped>&name= is one object, then download with %2F in the group", async () => {
      const found = (await json("/upack/feed1/packages?group=my%2Fgroup&name=pkg", auth())) as Json;
      expect(Array.isArray(found)).toBe(false);
      expect(found).toMatchObject({ group: "my/group", name: "pkg", versions: ["1.3.0-beta+build.7", "1.2.3"] });
      const res = await send("/upack/feed1/download/my%2Fgroup/pkg/1.2.3", auth());
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(pkg.bytes)).toBe(true);
    });

    it("metadata: the whole id escaped in one segment", async () => {
      const manifest = await json("/upack/feed1/download-file/my%2Fgroup%2Fpkg/1.2.3?path=upack.json", auth());
      expect(manifest).toMatchObject({ name: "pkg", title: "Pkg" });
    });

    it("verify: the sha1 string-equals the lowercase hex SHA-1", async () => {
      const one = (await json("/upack/feed1/versions?group=my%2Fgroup&name=pkg&version=1.2.3", auth())) as Json;
      expect(one.sha1).toBe(pkg.sha1);
      expect(one.sha1).toMatch(/^[0-9a-f]{40}$/);
    });
  });

  describe("pgutil upack install/update (docs/clients.md 3.4)", () => {
    it("versions?group=&name= is an array of {group?, name, version}, with a key or user:password", async () => {
      for (const headers of [apiKey(), { "X-ApiKey": `${user.name}:${user.password}` }]) {
        const list = (await json("/upack/feed1/versions?group=&name=plain", headers)) as Json[];
        expect(list).toEqual([expect.objectContaining({ name: "plain", version: "2.0.0" })]);
        expect(list[0]).not.toHaveProperty("group");
        const grouped = (await json("/upack/feed1/versions?group=my%2Fgroup&name=pkg", headers)) as Json[];
        expect(grouped[0]).toMatchObject({ group: "my/group", name: "pkg" });
      }
      const res = await send("/upack/feed1/download/my/group/pkg/1.2.3", apiKey());
      expect(res.rawPayload.equals(pkg.bytes)).toBe(true);
    });
  });

  describe("Jenkins inedo-proget-plugin (docs/clients.md 3.7)", () => {
    const java = () => ({
      ...basic(user.name, user.password),
      Accept: "text/html, image/gif, image/jpeg, */*; q=0.2",
    });

    it("downloads by version and ?latest&contentOnly=zip|tgz, always with a quoted filename", async () => {
      const exact = await send("/upack/feed1/download/my/group/pkg/1.2.3", java());
      expect(exact.headers["content-disposition"]).toBe('attachment; filename="pkg.1.2.3.upack"');
      const zip = await send("/upack/feed1/download/my/group/pkg?latest&contentOnly=zip", java());
      expect(zip.headers["content-disposition"]).toBe('attachment; filename="pkg.1.3.0-beta+build.7.zip"');
      expect([...(await readZip(zip.rawPayload)).keys()]).toEqual(["readme.txt"]);
      const tgz = await send("/upack/feed1/download/my/group/pkg?latest&contentOnly=tgz", java());
      expect(tgz.headers["content-type"]).toBe("application/x-compressed");
      expect(tgz.headers["content-disposition"]).toBe('attachment; filename="pkg.1.3.0-beta+build.7.tgz"');
      expect([...(await readTgz(tgz.rawPayload)).keys()]).toEqual(["readme.txt"]);
    });
  });

  describe("ProGetAutomation (docs/clients.md 3.9)", () => {
    it("gets a package as an object, and a missing one as an error saying 'package was not found'", async () => {
      expect(await json("/upack/feed1/packages?name=pkg&group=my%2Fgroup", apiKey())).toMatchObject({ name: "pkg" });
      const missing = await send("/upack/feed1/packages?name=missing&group=my%2Fgroup", apiKey());
      expect(missing.statusCode).toBe(404);
      expect(missing.headers["content-type"]).toBe("text/plain");
      expect(missing.body).toContain("package was not found");
    });

    it("reads a file with the '/?' spelling, by version and with ?latest", async () => {
      const headers = { ...basic(user.name, user.password), "X-ApiKey": `${user.name}:${user.password}` };
      const byVersion = await send("/upack/feed1/download-file/plain/2.0.0/?path=package/readme.txt", headers);
      expect([byVersion.statusCode, byVersion.body]).toEqual([200, "hello"]);
      const latest = await send("/upack/feed1/download-file/plain/?latest&path=upack.json", headers);
      expect(latest.json()).toMatchObject({ name: "plain", version: "2.0.0" });
    });
  });

  describe("proget-universal-bower-resolver (docs/clients.md 3.12)", () => {
    it("gets 401 with a Basic challenge anonymously, then the whole package with Basic", async () => {
      const url = "/upack/feed1/download/bower/jquery/3.7.1";
      const anonymous = await send(url);
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers["www-authenticate"]).toMatch(/^Basic /);
      const retry = await send(url, basic(user.name, user.password));
      expect(retry.statusCode).toBe(200);
      expect(retry.headers["content-length"]).toBe(String(retry.rawPayload.length));
      expect(retry.rawPayload.equals(jquery)).toBe(true);
    });
  });

  describe("lvermeulen/ProGet.Net (docs/clients.md 3.13)", () => {
    it("authenticates with ?key= on every call", async () => {
      const list = (await json(
        `/upack/feed1/versions?group=&name=plain&includeFileList=true&key=${key}`,
        {},
      )) as Json[];
      expect(list[0]?.fileList).toEqual([{ name: "readme.txt", size: 5, date: expect.any(String) }]);
      const zip = await send(`/upack/feed1/download/plain?contentOnly=zip&latest&key=${key}`);
      expect(zip.headers["content-disposition"]).toBe('attachment; filename="plain.2.0.0.zip"');
      const meta = (await json(`/upack/feed1/meta?key=${key}`, {})) as Json;
      expect(meta).toMatchObject({ name: "feed1", packageCount: 3, packageVersionCount: 4 });
      expect(meta.services).toEqual(expect.arrayContaining(["UploadPackage", "DownloadContents"]));
    });
  });

  describe("Blackvote/proget-updater (docs/clients.md 3.16)", () => {
    it("reads packages as an array whose versions are newest first, then downloads each", async () => {
      const list = (await json("/upack/feed1/packages", apiKey())) as Array<{
        group?: string;
        name: string;
        versions: string[];
      }>;
      const mine = list.find((item) => item.name === "pkg");
      expect(mine?.versions).toEqual(["1.3.0-beta+build.7", "1.2.3"]);
      for (const item of list) {
        const group = item.group === undefined ? "" : `${item.group}/`;
        const res = await send(`/upack/feed1/download/${group}${item.name}/${item.versions[0]}`, apiKey());
        expect(res.statusCode, item.name).toBe(200);
      }
    });
  });
});
