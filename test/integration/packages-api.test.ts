import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { InjectOptions, LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageVersionInfoSchema } from "../../src/areas/upack/packages-api/present.js";
import { PERMISSION_DENIED_MESSAGE } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createFeedKey, createSystemKey, createUser, grant } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures, readZip, sha1Hex, type PackageSpec } from "../helpers/upack-fixtures.js";
import { insertLegacyFeed } from "../helpers/legacy-feed.js";
import { expectText } from "../helpers/responses.js";

/**
 * Common Packages API stories for universal feeds (docs/compat.md 3, 2.14; docs/clients.md 3.4): pgutil's
 * exact request shapes, both directions between this API and /upack, the PackageVersionInfo
 * contract (case-sensitive names, no nulls), purl addressing, and the privilege matrix.
 */

let t: TestApp;
let admin: Record<string, string>;

beforeAll(async () => {
  t = await buildTestApp();
  admin = { "x-apikey": t.adminKey };
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("main");
  await fixtures.createFeed("other");
  // A feed of a type Wharf does not serve, as an older Wharf could create it.
  await insertLegacyFeed(t, "nugets", "nuget");
});
afterAll(async () => t.close());

type Method = NonNullable<InjectOptions["method"]>;
const call = (
  method: Method,
  url: string,
  headers: Record<string, string> = admin,
  payload?: InjectOptions["payload"],
) => t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
const get = (url: string, headers?: Record<string, string>) => call("GET", url, headers);
const sha256Hex = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** pgutil's upload: PUT, raw body, no Content-Type, the local file name appended. */
async function pgutilUpload(spec: PackageSpec, feed = "main", headers = admin): Promise<LightMyRequestResponse> {
  const file = `${spec.name}.${spec.version}.upack`;
  return call("PUT", `/api/packages/${feed}/upload/${file}`, headers, await buildUpack(spec));
}

/** A JSON list as pgutil reads it: top-level array, every item a strict PackageVersionInfo, no nulls. */
function versionList(res: LightMyRequestResponse): Array<Record<string, unknown>> {
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(res.body).not.toContain("null");
  const items = res.json() as unknown;
  expect(Array.isArray(items)).toBe(true);
  for (const item of items as unknown[]) packageVersionInfoSchema.strict().parse(item);
  return items as Array<Record<string, unknown>>;
}
const ids = (items: Array<Record<string, unknown>>) =>
  items.map((item) => `${item.group ? `${String(item.group)}/` : ""}${String(item.name)}@${String(item.version)}`);

describe("feed info (GET /api/packages/<feed>)", () => {
  it("answers BasicFeedInfo with packageType upack, by any spelling of the name", async () => {
    for (const url of ["/api/packages/main", "/api/packages/MAIN/"]) {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^application\/json/);
      expect(res.json()).toEqual({ name: "main", feedType: "universal", packageType: "upack" });
    }
  });

  it("a feed of another type and an unknown feed: 404 text", async () => {
    expectText(await get("/api/packages/nugets"), 404, "feed not found");
    expectText(await get("/api/packages/nope"), 404, "feed not found");
    expectText(await get("/api/packages/nugets/versions"), 404);
  });

  it("every route is described in /openapi.json", async () => {
    const res = await get("/openapi.json", {});
    expect(res.statusCode, res.body).toBe(200);
    const paths = (res.json() as { paths: Record<string, Record<string, { summary?: string }>> }).paths;
    for (const [url, method] of [
      ["/api/packages/{feed}", "get"],
      ["/api/packages/{feed}/latest", "get"],
      ["/api/packages/{feed}/versions", "get"],
      ["/api/packages/{feed}/download", "get"],
      ["/api/packages/{feed}/upload", "put"],
      ["/api/packages/{feed}/delete", "post"],
    ] as const) {
      expect(paths[url]?.[method]?.summary, `${method} ${url}`).toBeTruthy();
    }
  });
});

describe("upload, pgutil's way, then read through both APIs", () => {
  it("PUT upload/<file> with no Content-Type: 200 with the PackageVersionInfo, stored byte for byte", async () => {
    const spec = { group: "tools/cli", name: "pg-up", version: "1.2.3+build.7" };
    const bytes = await buildUpack(spec);
    const res = await call("PUT", "/api/packages/main/upload/pg-up.1.2.3.upack", admin, bytes);
    expect(res.statusCode, res.body).toBe(200);
    const info = res.json() as Record<string, unknown>;
    expect(info).toEqual({
      purl: "pkg:upack/tools/cli/pg-up@1.2.3%2Bbuild.7",
      group: "tools/cli",
      name: "pg-up",
      version: "1.2.3+build.7",
      totalDownloads: 0,
      downloads: 0,
      published: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      publishedBy: "Administrator (WHARF_ADMIN_API_KEY)",
      size: bytes.length,
      listed: true,
      sha1: sha1Hex(bytes),
      sha256: sha256Hex(bytes),
      allowDownload: true,
      deprecated: false,
    });
    const upack = await get("/upack/main/download/tools/cli/pg-up/1.2.3+build.7");
    expect(upack.statusCode).toBe(200);
    expect(upack.rawPayload.equals(bytes)).toBe(true);
    const listed = await get("/upack/main/versions?group=tools/cli&name=pg-up");
    expect((listed.json() as Array<{ version: string }>).map((v) => v.version)).toEqual(["1.2.3+build.7"]);
  });

  it("POST and a bare upload URL work too; any declared Content-Type is still the raw file", async () => {
    for (const [patch, method, url, type] of [
      [1, "POST", "/api/packages/main/upload", undefined],
      [2, "PUT", "/api/packages/main/upload", "application/x-www-form-urlencoded"],
      [3, "POST", "/api/packages/main/upload/whatever.bin", "application/json"],
    ] as const) {
      const version = `1.0.${patch}`;
      const headers = type === undefined ? admin : { ...admin, "content-type": type };
      const res = await call(method, url, headers, await buildUpack({ name: "shapes", version }));
      expect(res.statusCode, `${method} ${url} ${type}: ${res.body}`).toBe(200);
      expect(res.json()).toMatchObject({ name: "shapes", version });
    }
  });

  it("claimed digests are verified as on /upack; MD5 and SHA-512 are reported once computed", async () => {
    const bytes = await buildUpack({ name: "digests", version: "1.0.0" });
    const md5 = createHash("md5").update(bytes).digest("hex");
    const sha512 = createHash("sha512").update(bytes).digest("hex");
    const claims = { ...admin, "x-checksum-md5": md5, "x-checksum-sha512": sha512.toUpperCase() };
    const res = await call("PUT", "/api/packages/main/upload", claims, bytes);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ md5, sha512, sha1: sha1Hex(bytes) });
    const [listed] = versionList(await get("/api/packages/main/versions?name=digests"));
    expect(listed).toMatchObject({ md5, sha512 });
    const wrong = { ...admin, "x-checksum-sha1": "0".repeat(40) };
    expectText(
      await call("PUT", "/api/packages/main/upload", wrong, await buildUpack({ name: "digests", version: "2.0.0" })),
      400,
    );
    expect(versionList(await get("/api/packages/main/versions?name=digests"))).toHaveLength(1);
  });

  it("bad uploads: 400 text (no body, not a package), 409 re-upload without overwrite, 404 feed", async () => {
    expectText(await call("PUT", "/api/packages/main/upload", admin), 400);
    expectText(await call("PUT", "/api/packages/main/upload", admin, Buffer.from("not a zip")), 400);
    expectText(await pgutilUpload({ name: "x", version: "1.0.0" }, "nugets"), 404, "feed not found");
    const adder = { "x-apikey": await createFeedKey(t.database, "main", ["view", "add"]) };
    expect((await pgutilUpload({ name: "once", version: "1.0.0" }, "main", adder)).statusCode).toBe(200);
    expectText(await pgutilUpload({ name: "once", version: "1.0.0" }, "main", adder), 409);
  });

  it("what /upack stored is listed, latest-resolved and downloaded here", async () => {
    const bytes = await buildUpack({ name: "from-upack", version: "3.0.0" });
    expect((await call("PUT", "/upack/main/upload", admin, bytes)).statusCode).toBe(201);
    const versions = versionList(await get("/api/packages/main/versions?name=from-upack"));
    expect(ids(versions)).toEqual(["from-upack@3.0.0"]);
    expect(versions[0]?.sha256).toBe(sha256Hex(bytes));
    expect(ids(versionList(await get("/api/packages/main/latest?name=from-upack")))).toEqual(["from-upack@3.0.0"]);
    const res = await get("/api/packages/main/download?name=from-upack&version=3.0.0");
    expect(res.rawPayload.equals(bytes)).toBe(true);
  });
});

describe("latest and versions", () => {
  beforeAll(async () => {
    const fixtures = createUpackFixtures(t);
    await fixtures.createFeed("lists");
    const add = (spec: PackageSpec) => fixtures.addVersion("lists", spec);
    for (const version of ["1.0.0", "1.1.0+build-5", "2.0.0-beta.1"]) await add({ name: "alpha", version });
    await add({ name: "pre", version: "0.1.0-rc.1" });
    await add({ group: "g", name: "alpha", version: "9.0.0" });
    await add({ group: "g/sub", name: "beta", version: "1.0.0" });
  });

  it("latest: the highest version of each package, prereleases included, by group then name", async () => {
    const all = versionList(await get("/api/packages/lists/latest"));
    // Rows with no recorded publisher, MD5 or SHA-512 leave those members out rather than send null.
    for (const member of ["publishedBy", "md5", "sha512", "group"]) expect(all[0]).not.toHaveProperty(member);
    expect(ids(all)).toEqual(["alpha@2.0.0-beta.1", "pre@0.1.0-rc.1", "g/alpha@9.0.0", "g/sub/beta@1.0.0"]);
  });

  it("latest?stableOnly=true (any case): the highest release; prerelease-only packages left out", async () => {
    for (const flag of ["true", "True"]) {
      const stable = versionList(await get(`/api/packages/lists/latest?stableOnly=${flag}`));
      // '-' inside build metadata does not make a prerelease.
      expect(ids(stable)).toEqual(["alpha@1.1.0+build-5", "g/alpha@9.0.0", "g/sub/beta@1.0.0"]);
    }
  });

  it("latest filters by group and name when given, case-insensitively", async () => {
    expect(ids(versionList(await get("/api/packages/lists/latest?name=ALPHA")))).toEqual([
      "alpha@2.0.0-beta.1",
      "g/alpha@9.0.0",
    ]);
    expect(ids(versionList(await get("/api/packages/lists/latest?group=G&name=alpha")))).toEqual(["g/alpha@9.0.0"]);
    expect(versionList(await get("/api/packages/lists/latest?name=nothing"))).toEqual([]);
  });

  it("versions: always an array, newest first; one match is still an array, no match an empty one", async () => {
    expect(ids(versionList(await get("/api/packages/lists/versions?group=&name=alpha")))).toEqual([
      "alpha@2.0.0-beta.1",
      "alpha@1.1.0+build-5",
      "alpha@1.0.0",
      "g/alpha@9.0.0",
    ]);
    expect(ids(versionList(await get("/api/packages/lists/versions?name=alpha&version=1.1.0%2Bbuild-5")))).toEqual([
      "alpha@1.1.0+build-5",
    ]);
    // A '+' sent unescaped arrives as a space.
    expect(versionList(await get("/api/packages/lists/versions?name=alpha&version=1.1.0+build-5"))).toHaveLength(1);
    expect(versionList(await get("/api/packages/lists/versions?name=alpha&version=7.0.0"))).toEqual([]);
    expect(versionList(await get("/api/packages/lists/versions?name=alpha&version=not-a-version"))).toEqual([]);
    expect(versionList(await get("/api/packages/lists/versions"))).toHaveLength(6);
    expect(ids(versionList(await get("/api/packages/lists/versions?group=g/sub")))).toEqual(["g/sub/beta@1.0.0"]);
  });
});

describe("download", () => {
  let bytes: Buffer;
  beforeAll(async () => {
    bytes = await buildUpack({ group: "dl/x", name: "getme", version: "1.0.0-rc.1+b" });
    expect((await call("PUT", "/api/packages/main/upload", admin, bytes)).statusCode).toBe(200);
  });
  const counts = async () => {
    const [info] = versionList(await get("/api/packages/main/versions?group=dl/x&name=getme"));
    return { downloads: info?.downloads, totalDownloads: info?.totalDownloads };
  };

  it("by name, version and group: the file as <name>.<version>.upack, counted like /upack", async () => {
    const res = await get("/api/packages/main/download?name=getme&version=1.0.0-rc.1%2Bb&group=dl/x");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers["content-type"]).toBe("application/zip");
    expect(res.headers["content-disposition"]).toBe('attachment; filename="getme.1.0.0-rc.1+b.upack"');
    expect(res.headers.etag).toBe(`"${sha256Hex(bytes)}"`);
    expect(res.rawPayload.equals(bytes)).toBe(true);
    expect(await counts()).toEqual({ downloads: 1, totalDownloads: 1 });
    const upackView = await get("/upack/main/versions?group=dl/x&name=getme&version=1.0.0-rc.1%2Bb");
    expect(upackView.json()).toMatchObject({ downloads: "1" });
  });

  it("by purl (as this API writes it); HEAD and ranges past byte 0 are not counted", async () => {
    const purl = encodeURIComponent("pkg:upack/dl/x/getme@1.0.0-rc.1%2Bb");
    const res = await get(`/api/packages/main/download?purl=${purl}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
    expect((await call("HEAD", `/api/packages/main/download?purl=${purl}`)).statusCode).toBe(200);
    // Unescaped, as a shell script might send it: the '+' arrives as a space, the name in any case.
    expect((await call("HEAD", "/api/packages/main/download?purl=pkg:UPACK/DL/x/GetMe@1.0.0-rc.1+b")).statusCode).toBe(
      200,
    );
    const part = await call("GET", `/api/packages/main/download?purl=${purl}`, { ...admin, range: "bytes=10-" });
    expect(part.statusCode).toBe(206);
    expect(await counts()).toEqual({ downloads: 2, totalDownloads: 2 });
  });

  it("anything that does not name exactly one version: 400 text", async () => {
    const bad: Array<[string, string]> = [
      ["name=getme&group=dl/x", "VERSION_REQUIRED"],
      ["version=1.0.0", "NAME_REQUIRED"],
      ["name=getme&version=latest&group=dl/x", "INVALID_VERSION"],
      ["name=get/me&version=1.0.0", "INVALID_NAME"],
      ["name=getme&version=1.0.0&qualifier=x", "INVALID_QUALIFIER"],
      [`purl=${encodeURIComponent("pkg:nuget/getme@1.0.0")}`, "INVALID_PURL"],
      [`purl=${encodeURIComponent("pkg:upack/getme@1.0.0?arch=x64")}`, "INVALID_PURL"],
      [`purl=${encodeURIComponent("pkg:upack/getme")}`, "INVALID_PURL"],
      [`purl=${encodeURIComponent("pkg:upack/getme@1.0.0")}&name=getme`, "CONFLICTING_PARAMETERS"],
    ];
    for (const [query, code] of bad) {
      const res = await get(`/api/packages/main/download?${query}`);
      expectText(res, 400);
      expect(res.headers["x-wharf-error"], query).toBe(code);
    }
  });

  it("a missing version, package or feed: 404 text", async () => {
    expectText(await get("/api/packages/main/download?name=getme&version=9.9.9&group=dl/x"), 404);
    expectText(await get("/api/packages/main/download?name=getme&version=1.0.0-rc.1%2Bb"), 404); // wrong group
    expectText(await get("/api/packages/nope/download?name=getme&version=1.0.0"), 404, "feed not found");
  });
});

describe("virtual packages", () => {
  it("download here assembles; a source replaced here is assembled again by /upack too", async () => {
    const lib = (text: string) => buildUpack({ name: "vlib", version: "1.0.0", files: { "a.txt": text } });
    expect((await call("PUT", "/api/packages/main/upload", admin, await lib("A1"))).statusCode).toBe(200);
    const vpack = { name: "vbundle", version: "1.0.0", manifest: { contents: ["vlib:1.0.0"] }, files: {} };
    expect((await pgutilUpload(vpack)).statusCode).toBe(200);
    const contentOf = async (url: string) => {
      const res = await get(url);
      expect(res.statusCode, res.body).toBe(200);
      return (await readZip(res.rawPayload)).get("package/a.txt");
    };
    const here = await get("/api/packages/main/download?name=vbundle&version=1.0.0");
    expect(here.headers["content-disposition"]).toBe('attachment; filename="vbundle.1.0.0.upack"');
    expect((await readZip(here.rawPayload)).get("package/a.txt")).toBe("A1");
    expect(await contentOf("/upack/main/download/vbundle/1.0.0")).toBe("A1");
    // The admin may overwrite: the replacement must not leave /upack serving the old assembly.
    expect((await call("PUT", "/api/packages/main/upload", admin, await lib("A2"))).statusCode).toBe(200);
    expect(await contentOf("/upack/main/download/vbundle/1.0.0")).toBe("A2");
    expect(await contentOf("/api/packages/main/download?name=vbundle&version=1.0.0")).toBe("A2");
  });
});

describe("delete", () => {
  it("pgutil's POST with no body: 200 empty, then gone from both APIs; DELETE and purl work too", async () => {
    await pgutilUpload({ group: "del", name: "gone", version: "1.0.0" });
    await pgutilUpload({ group: "del", name: "gone", version: "2.0.0" });
    const res = await call("POST", "/api/packages/main/delete?name=gone&version=1.0.0&group=del", {
      ...admin,
      "content-length": "0",
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).toBe("");
    expect(ids(versionList(await get("/api/packages/main/versions?group=del&name=gone")))).toEqual(["del/gone@2.0.0"]);
    expectText(await get("/upack/main/download/del/gone/1.0.0"), 404);
    const purl = encodeURIComponent("pkg:upack/del/gone@2.0.0");
    expect((await call("DELETE", `/api/packages/main/delete?purl=${purl}`)).statusCode).toBe(200);
    expect(versionList(await get("/api/packages/main/versions?group=del&name=gone"))).toEqual([]);
  });

  it("missing: 404 text; no single version named: 400 text", async () => {
    expectText(await call("POST", "/api/packages/main/delete?name=never&version=1.0.0"), 404, "not found");
    expectText(await call("POST", "/api/packages/main/delete?name=never"), 400);
  });
});

describe("privileges (docs/compat.md 2.14)", () => {
  beforeAll(async () => {
    await pgutilUpload({ name: "guarded", version: "1.0.0" });
  });
  const reads = ["/api/packages/main", "/api/packages/main/latest", "/api/packages/main/versions"];
  const download = "/api/packages/main/download?name=guarded&version=1.0.0";
  const remove = "/api/packages/main/delete?name=guarded&version=1.0.0";

  /** A body that records whether the server ever read it. */
  function watched(bytes: Buffer) {
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
  const upload = async (headers: Record<string, string>) => {
    const body = watched(await buildUpack({ name: "guarded", version: "5.0.0" }));
    const res = await call(
      "PUT",
      "/api/packages/main/upload/guarded.upack",
      { ...headers, "transfer-encoding": "chunked" },
      body.stream,
    );
    return { res, read: body.wasRead() };
  };

  it("anonymous: 401 with a Basic challenge everywhere, the upload body unread", async () => {
    for (const url of [...reads, download]) {
      const res = await get(url, {});
      expectText(res, 401);
      expect(res.headers["www-authenticate"]).toMatch(/^Basic /);
    }
    const { res, read } = await upload({});
    expectText(res, 401);
    expect(read).toBe(false);
    expectText(await call("POST", remove, {}), 401);
  });

  it("a view key reads and downloads, but cannot upload (body unread) or delete", async () => {
    const viewer = { "x-apikey": await createFeedKey(t.database, "main", ["view"]) };
    for (const url of [...reads, download]) expect((await get(url, viewer)).statusCode, url).toBe(200);
    const { res, read } = await upload(viewer);
    expectText(res, 403, PERMISSION_DENIED_MESSAGE);
    expect(read).toBe(false);
    expectText(await call("POST", remove, viewer), 403);
  });

  it("a key of another feed, even with every permission: 403 for everything", async () => {
    const stranger = { "x-apikey": await createFeedKey(t.database, "other", ["view", "add", "delete"]) };
    for (const url of [...reads, download]) expectText(await get(url, stranger), 403, PERMISSION_DENIED_MESSAGE);
    expectText((await upload(stranger)).res, 403);
    expectText(await call("DELETE", remove, stranger), 403);
  });

  it("a user sent as pgutil's pseudo-key: add then delete as granted; the publisher is the user", async () => {
    const userId = await createUser(t.database, "pg-user", "pg-pass");
    const asUser = { "x-apikey": "pg-user:pg-pass" };
    await grant(t.database, { user: userId, attributes: ["Feeds_ViewFeed", "Feeds_AddPackage"], feed: "main" });
    const { res } = await upload(asUser);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ version: "5.0.0", publishedBy: "pg-user" });
    expectText(await call("POST", remove, asUser), 403);
    await grant(t.database, { user: userId, attributes: ["Feeds_DeletePackage"], feed: "main" });
    expect((await call("POST", remove, asUser)).statusCode).toBe(200);
    const feedsKey = { "x-apikey": await createSystemKey(t.database, ["feeds"]) };
    expect((await call("POST", "/api/packages/main/delete?name=guarded&version=5.0.0", feedsKey)).statusCode).toBe(200);
  });
});
