import { createHash } from "node:crypto";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { feedRowSchema, packageRowSchema, versionRowSchema } from "../../src/areas/native/proget-rows.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { basic, createFeedKey, createSystemKey, createUser, feedIdOf, grant } from "../helpers/fixtures.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Native API, ProGet methods (docs/compat.md 5.5; issue 14 sections 1 and 5): the Jenkins ProGet
 * plugin's connection check and pickers and the bower resolver's short-name install, replayed as
 * they send them; shapes, privileges, empty tables for unknown ids, and a delete that is the
 * universal feed's own.
 */
let t: TestApp;
let nativeKey: string;
let bowerId: number;
let upackId: number;
let bowerBytes: Buffer;

type Row = Record<string, unknown>;

async function upload(feed: string, bytes: Buffer): Promise<void> {
  const res = await t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: { "x-apikey": t.adminKey, "content-type": "application/zip" },
    payload: bytes,
  });
  expect(res.statusCode, res.body).toBe(201);
}

async function createFeed(name: string, feedType: string, extra: Row = {}): Promise<void> {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: { "x-apikey": t.adminKey },
    payload: { name, feedType, ...extra },
  });
  expect(res.statusCode, res.body).toBe(201);
}

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: "GET", url, headers });
const json = (res: LightMyRequestResponse) => res.json<Row[]>();

beforeAll(async () => {
  t = await buildTestApp();
  nativeKey = await createSystemKey(t.database, ["native"]);
  await createFeed("bower", "universal", { description: "Bower components" });
  await createFeed("upack", "universal");
  await createFeed("retired", "universal", { active: false });
  await createFeed("files", "asset");
  bowerId = await feedIdOf(t.database, "bower");
  upackId = await feedIdOf(t.database, "upack");
  bowerBytes = await buildUpack({ group: "bower", name: "jquery", version: "3.7.1", manifest: { title: "jQuery" } });
  await upload("bower", bowerBytes);
  await upload("bower", await buildUpack({ group: "bower", name: "jquery", version: "3.6.0" }));
  await upload(
    "upack",
    await buildUpack({
      group: "apps/web",
      name: "site",
      version: "1.0.0",
      manifest: { description: "The site", icon: "package://1UP.ico" },
    }),
  );
  await upload("upack", await buildUpack({ name: "tool", version: "2.0.0" }));
});
afterAll(async () => t.close());

describe("the Jenkins ProGet plugin's calls (docs/clients.md 3.7)", () => {
  it("connection check and feed picker: GET Feeds_GetFeeds?API_Key=..&IncludeInactive_Indicator=N", async () => {
    const res = await get(`/api/json/Feeds_GetFeeds?API_Key=${nativeKey}&IncludeInactive_Indicator=N`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const rows = json(res);
    for (const row of rows) feedRowSchema.strict().parse(row);
    expect(rows.map((r) => r.Feed_Name)).toEqual(["bower", "files", "upack"]);
    expect(rows[0]).toEqual({
      Feed_Id: bowerId,
      Feed_Name: "bower",
      Feed_Description: "Bower components",
      FeedType_Name: "ProGet",
      Active_Indicator: true,
      Cache_Connectors_Indicator: true,
    });
    expect(rows[1]?.FeedType_Name).toBe("Asset");
  });

  it("inactive feeds are listed unless IncludeInactive_Indicator is N (also false)", async () => {
    const all = json(await get(`/api/json/Feeds_GetFeeds?API_Key=${nativeKey}`));
    expect(all.find((r) => r.Feed_Name === "retired")?.Active_Indicator).toBe(false);
    const active = json(await get(`/api/json/feeds_getfeeds?api_key=${nativeKey}&includeinactive_indicator=false`));
    expect(active.map((r) => r.Feed_Name)).not.toContain("retired");
  });

  it("Feeds_GetFeed by name answers one object", async () => {
    const res = await get(`/api/json/Feeds_GetFeed?API_Key=${nativeKey}&Feed_Name=BOWER`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ Feed_Id: bowerId, Feed_Name: "bower", FeedType_Name: "ProGet" });
  });

  it("Feeds_GetFeed with FeedType_Name (ProGetAutomation's Test-ProGetFeed) answers only a feed of that type", async () => {
    for (const type of ["ProGet", "universal"]) {
      const res = await get(`/api/json/Feeds_GetFeed?API_Key=${nativeKey}&Feed_Name=bower&FeedType_Name=${type}`);
      expect(res.body).toContain('"Feed_Id"');
    }
    const other = await get(`/api/json/Feeds_GetFeed?API_Key=${nativeKey}&Feed_Name=bower&FeedType_Name=NuGet`);
    expect(other.statusCode).toBe(200);
    expect(other.body).toBe("");
  });

  it("package picker: ProGetPackages_GetPackages?API_Key=..&Feed_Id=..&IncludeVersions_Indicator=Y", async () => {
    const res = await get(
      `/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}&Feed_Id=${upackId}&IncludeVersions_Indicator=Y`,
    );
    expect(res.statusCode, res.body).toBe(200);
    const rows = json(res);
    for (const row of rows) packageRowSchema.strict().parse(row);
    expect(rows).toEqual([
      {
        ProGetPackage_Id: expect.any(Number),
        Feed_Id: upackId,
        Group_Name: "",
        Package_Name: "tool",
        LatestVersion_Text: "2.0.0",
        Download_Count: 0,
      },
      {
        ProGetPackage_Id: expect.any(Number),
        Feed_Id: upackId,
        Group_Name: "apps/web",
        Package_Name: "site",
        Description_Text: "The site",
        IconUrl_Text: "package://1UP.ico",
        LatestVersion_Text: "1.0.0",
        Download_Count: 0,
      },
    ]);
    const inGroup = json(
      await get(`/api/json/ProGetPackages_GetPackages?key=${nativeKey}&Feed_Id=${upackId}&Group_Name=apps/web`),
    );
    expect(inGroup.map((r) => r.Package_Name)).toEqual(["site"]);
  });

  it("version picker: ProGetPackages_GetPackageVersions with Feed_Id, Group_Name and Package_Name", async () => {
    const res = await get(
      `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${bowerId}&Group_Name=bower&Package_Name=jquery`,
    );
    expect(res.statusCode, res.body).toBe(200);
    const rows = json(res);
    for (const row of rows) versionRowSchema.strict().parse(row);
    expect(rows.map((r) => r.Version_Text)).toEqual(["3.7.1", "3.6.0"]);
    const [latest] = rows;
    const sha1 = createHash("sha1").update(bowerBytes).digest();
    expect(latest?.PackageHash_Bytes).toBe(sha1.toString("base64"));
    expect(JSON.parse(Buffer.from(String(latest?.PackageMetadata_Bytes), "base64").toString("utf8"))).toMatchObject({
      group: "bower",
      name: "jquery",
      version: "3.7.1",
      title: "jQuery",
    });
    expect(latest).toMatchObject({
      Feed_Id: bowerId,
      Group_Name: "bower",
      Package_Name: "jquery",
      Package_Size: bowerBytes.length,
      Download_Count: 0,
      Cached_Indicator: false,
      Virtual_Indicator: false,
    });
    expect(String(latest?.Published_Date)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });
});

describe("download counts", () => {
  it("a download through the feed shows in Download_Count of the version and the package", async () => {
    await createFeed("counted", "universal");
    const counted = await feedIdOf(t.database, "counted");
    await upload("counted", await buildUpack({ name: "lib", version: "1.0.0" }));
    const download = await get("/upack/counted/download/lib/1.0.0", { "x-apikey": t.adminKey });
    expect(download.statusCode).toBe(200);
    const versions = json(
      await get(`/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${counted}&Package_Name=lib`),
    );
    expect(versions.map((v) => v.Download_Count)).toEqual([1]);
    const packages = json(await get(`/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}&Feed_Id=${counted}`));
    expect(packages.map((p) => p.Download_Count)).toEqual([1]);
  });
});

describe("the bower resolver's short-name install (docs/clients.md 3.12)", () => {
  it("POST Feeds_GetFeed?Feed_Name=bower&API_Key=.. with an empty body, then the versions by Feed_Id", async () => {
    const feed = await t.app.inject({
      method: "POST",
      url: `/api/json/Feeds_GetFeed?Feed_Name=bower&API_Key=${nativeKey}`,
    });
    expect(feed.statusCode, feed.body).toBe(200);
    const feedId = (JSON.parse(feed.body) as { Feed_Id: number }).Feed_Id;
    expect(feedId).toBe(bowerId);
    const versions = await t.app.inject({
      method: "POST",
      url: `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${feedId}&Group_Name=bower&Package_Name=jquery`,
    });
    expect(versions.statusCode, versions.body).toBe(200);
    expect(json(versions).map((r) => r.Version_Text)).toEqual(["3.7.1", "3.6.0"]);
  });

  it("an unknown feed name is an empty 200 body, which the resolver (and Gson) read as 'not found'", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: `/api/json/Feeds_GetFeed?Feed_Name=nope&API_Key=${nativeKey}`,
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("");
  });
});

describe("arguments", () => {
  it("form and JSON bodies, any letter case; Y/N and true/false indicators", async () => {
    const form = await t.app.inject({
      method: "POST",
      url: "/api/json/ProGetPackages_GetPackageVersions",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `api_key=${nativeKey}&feed_id=${bowerId}&group_name=bower&package_name=JQUERY&version_text=3.6.0`,
    });
    expect(json(form).map((r) => r.Version_Text)).toEqual(["3.6.0"]);
    const body = await t.app.inject({
      method: "POST",
      url: "/api/json/Feeds_GetFeed",
      headers: { "content-type": "application/json" },
      payload: JSON.stringify({ API_Key: nativeKey, feed_id: upackId }),
    });
    expect(body.json()).toMatchObject({ Feed_Name: "upack" });
  });

  it("a missing required argument is 400 naming it; a wrong type is 400", async () => {
    const missing = await get(`/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}`);
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toContain("'Feed_Id'");
    const neither = await get(`/api/json/Feeds_GetFeed?API_Key=${nativeKey}`);
    expect(neither.statusCode).toBe(400);
    expect(neither.body).toContain("'Feed_Id' or 'Feed_Name'");
    const wrong = await get(`/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}&Feed_Id=abc`);
    expect(wrong.statusCode).toBe(400);
  });

  it("unknown ids give empty tables (also a feed of another type, and a package or version that is not there)", async () => {
    for (const url of [
      `/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}&Feed_Id=99999`,
      `/api/json/ProGetPackages_GetPackages?API_Key=${nativeKey}&Feed_Id=${await feedIdOf(t.database, "files")}`,
      `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=99999&Package_Name=jquery`,
      `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${bowerId}&Package_Name=nope`,
      `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${bowerId}&Group_Name=bower&Package_Name=jquery&Version_Text=9.9.9`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.json(), url).toEqual([]);
    }
    const feed = await get(`/api/json/Feeds_GetFeed?API_Key=${nativeKey}&Feed_Id=99999`);
    expect(feed.body).toBe("");
  });
});

describe("privileges", () => {
  it("a key without native access (feeds only, or a feed key) is 403 with the seed's sentence", async () => {
    const feedsOnly = await createSystemKey(t.database, ["feeds"]);
    const feedKey = await createFeedKey(t.database, "bower", ["view", "delete"]);
    for (const key of [feedsOnly, feedKey]) {
      const res = await get(`/api/json/Feeds_GetFeeds?API_Key=${key}&IncludeInactive_Indicator=N`);
      expect(res.statusCode).toBe(403);
      expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    }
  });

  it("a user sees only the feeds a grant lets them view, and gets empty tables for the others", async () => {
    const userId = await createUser(t.database, "viewer", "Viewer-pass-1");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"] });
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed"], feed: "upack", deny: true });
    const auth = basic("viewer", "Viewer-pass-1");
    const feeds = json(await get("/api/json/Feeds_GetFeeds", auth));
    expect(feeds.map((r) => r.Feed_Name)).not.toContain("upack");
    expect(feeds.map((r) => r.Feed_Name)).toContain("bower");
    expect(json(await get(`/api/json/ProGetPackages_GetPackages?Feed_Id=${upackId}`, auth))).toEqual([]);
    expect((await get(`/api/json/Feeds_GetFeed?Feed_Name=upack`, auth)).body).toBe("");
  });
});

describe("finding and deleting a package version", () => {
  it("ProGetPackages_DeletePackage deletes through the universal feed (gone from /upack and the native reads)", async () => {
    await upload("upack", await buildUpack({ group: "apps/web", name: "site", version: "1.1.0" }));
    const find = `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${upackId}&Group_Name=apps/web&Package_Name=site`;
    expect(json(await get(find)).map((r) => r.Version_Text)).toEqual(["1.1.0", "1.0.0"]);
    const res = await t.app.inject({
      method: "POST",
      url: `/api/json/ProGetPackages_DeletePackage?API_Key=${nativeKey}&Feed_Id=${upackId}&Group_Name=apps/web&Package_Name=site&Version_Text=1.1.0`,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe("");
    expect(json(await get(find)).map((r) => r.Version_Text)).toEqual(["1.0.0"]);
    const upackRead = await get("/upack/upack/versions?group=apps/web&name=site", { "x-apikey": t.adminKey });
    expect(upackRead.json<Row[]>().map((v) => v.version)).toEqual(["1.0.0"]);
  });

  it("a version that is not there is 404, as the feed's own delete answers", async () => {
    const res = await get(
      `/api/json/ProGetPackages_DeletePackage?API_Key=${nativeKey}&Feed_Id=${upackId}&Package_Name=tool&Version_Text=9.0.0`,
    );
    expect(res.statusCode).toBe(404);
    const noFeed = await get(
      `/api/json/ProGetPackages_DeletePackage?API_Key=${nativeKey}&Feed_Id=99999&Package_Name=tool&Version_Text=2.0.0`,
    );
    expect(noFeed.statusCode).toBe(404);
  });

  it("a user needs Feeds_DeletePackage on that feed: a deny there wins over a global grant (403, nothing deleted)", async () => {
    const userId = await createUser(t.database, "deleter", "Deleter-pass-1");
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_DeletePackage"] });
    await grant(t.database, { user: userId, attributes: ["Feeds_DeletePackage"], feed: "upack", deny: true });
    const auth = basic("deleter", "Deleter-pass-1");
    const res = await get(
      `/api/json/ProGetPackages_DeletePackage?Feed_Id=${upackId}&Package_Name=tool&Version_Text=2.0.0`,
      auth,
    );
    expect(res.statusCode).toBe(403);
    expect(res.body).toBe(PERMISSION_DENIED_MESSAGE);
    const still = await get(
      `/api/json/ProGetPackages_GetPackageVersions?API_Key=${nativeKey}&Feed_Id=${upackId}&Package_Name=tool`,
    );
    expect(json(still).map((r) => r.Version_Text)).toEqual(["2.0.0"]);
  });
});
