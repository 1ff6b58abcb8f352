import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { filesLeftInTmp } from "../helpers/temp-files.js";
import { storedBlobAddresses } from "../helpers/upack-fixtures.js";

const sha = (algorithm: string, data: string | Buffer) => createHash(algorithm).update(data).digest("hex");

/**
 * A cluster node deletes no blob eagerly (another node may be storing the same bytes): a deleted
 * or refused file's blob waits for garbage collection there (docs/cluster-mode.md, Blobs).
 */
const blobsDeletedAtOnce = !testsRunOnPostgres();

describe("asset directory files (docs/compat.md 4.2)", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: "GET", url, headers: { ...admin(), ...headers } });

  beforeAll(async () => {
    t = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: "100000" } });
    await createAssetDirectory(t, "site");
    await createAssetDirectory(t, "web", { staticSite: true });
  });
  afterAll(async () => t.close());

  it("stores a file with POST, creating its folders, and serves it back like a web server", async () => {
    const created = await putAsset(t, "site", "docs/guide.txt", "hello assets", { "content-type": "text/plain" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      name: "guide.txt",
      parent: "docs",
      type: "text/plain",
      size: 12,
      md5: sha("md5", "hello assets"),
      sha1: sha("sha1", "hello assets"),
      sha256: sha("sha256", "hello assets"),
      sha512: sha("sha512", "hello assets"),
      content: "http://localhost:80/endpoints/site/content/docs/guide.txt",
      userMetadata: {},
      cacheHeader: { type: "Inherit" },
    });
    const res = await get("/endpoints/site/content/docs/guide.txt");
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("hello assets");
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.headers["content-length"]).toBe("12");
    expect(res.headers["cache-control"]).toBe("public");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["accept-ranges"]).toBe("bytes");
    expect(res.headers.etag).toBe(`"${sha("sha256", "hello assets")}"`);
    expect(res.headers["last-modified"]).toMatch(/GMT$/);
    expect(res.headers.vary).toBe("Accept-Encoding, Authorization, X-ApiKey, X-ProGet-ApiKey");
    expect(res.headers["content-security-policy"]).toBeUndefined();

    const folder = await get("/endpoints/site/dir/");
    expect(folder.json()).toEqual([expect.objectContaining({ name: "docs", type: "dir" })]);
  });

  it("answers HEAD with GET's headers and no body, and matches paths case-insensitively", async () => {
    const head = await t.app.inject({
      method: "HEAD",
      url: "/endpoints/site/content/DOCS/Guide.TXT",
      headers: admin(),
    });
    expect(head.statusCode).toBe(200);
    expect(head.body).toBe("");
    expect(head.headers["content-length"]).toBe("12");
    expect(head.headers["content-type"]).toBe("text/plain");
  });

  it("honours conditional requests and byte ranges", async () => {
    const first = await get("/endpoints/site/content/docs/guide.txt");
    const etag = String(first.headers.etag);
    expect((await get("/endpoints/site/content/docs/guide.txt", { "if-none-match": etag })).statusCode).toBe(304);
    const since = String(first.headers["last-modified"]);
    const notModified = await get("/endpoints/site/content/docs/guide.txt", { "if-modified-since": since });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers["cache-control"]).toBe("public");

    const part = await get("/endpoints/site/content/docs/guide.txt", { range: "bytes=6-11" });
    expect(part.statusCode).toBe(206);
    expect(part.body).toBe("assets");
    expect(part.headers["content-range"]).toBe("bytes 6-11/12");
    const outside = await get("/endpoints/site/content/docs/guide.txt", { range: "bytes=50-60" });
    expect(outside.statusCode).toBe(416);
    expect(outside.headers["content-range"]).toBe("bytes */12");
    const stale = await get("/endpoints/site/content/docs/guide.txt", { range: "bytes=0-4", "if-range": '"other"' });
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toBe("hello assets");
    const fresh = await get("/endpoints/site/content/docs/guide.txt", { range: "bytes=0-4", "if-range": etag });
    expect(fresh.statusCode).toBe(206);
    expect(fresh.body).toBe("hello");
  });

  it("takes the type from the extension when the upload names none (or only curl's form default)", async () => {
    await putAsset(t, "site", "data/config.json", '{"a":1}');
    await putAsset(t, "site", "data/raw.bin", "xx", { "content-type": "application/x-www-form-urlencoded" });
    await putAsset(t, "site", "data/unknown.zzqq", "yy");
    expect((await get("/endpoints/site/content/data/config.json")).headers["content-type"]).toBe(
      "application/json; charset=utf-8",
    );
    expect((await get("/endpoints/site/content/data/raw.bin")).headers["content-type"]).toBe(
      "application/octet-stream",
    );
    expect((await get("/endpoints/site/content/data/unknown.zzqq")).headers["content-type"]).toBe(
      "application/octet-stream",
    );
    const bad = await putAsset(t, "site", "data/bad.txt", "zz", { "content-type": "not a type" });
    expect(bad.statusCode).toBe(415);
    expect(bad.headers["content-type"]).toBe("text/plain");
  });

  it("PUT only creates, PATCH only replaces, POST does both and keeps the creation date", async () => {
    const put = (url: string, payload: string) => t.app.inject({ method: "PUT", url, headers: admin(), payload });
    const patch = (url: string, payload: string) => t.app.inject({ method: "PATCH", url, headers: admin(), payload });
    expect((await put("/endpoints/site/content/modes/a.txt", "one")).statusCode).toBe(201);
    const again = await put("/endpoints/site/content/modes/a.txt", "two");
    expect(again.statusCode).toBe(400);
    expect(again.body).toContain("already exists");
    expect((await get("/endpoints/site/content/modes/a.txt")).body).toBe("one");

    const missing = await patch("/endpoints/site/content/modes/none.txt", "x");
    expect(missing.statusCode).toBe(404);
    expect(missing.body).toBe("The specified asset was not found.");
    const before = (await get("/endpoints/site/metadata/modes/a.txt")).json();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await patch("/endpoints/site/content/modes/a.txt", "three")).statusCode).toBe(201);
    expect((await get("/endpoints/site/content/modes/a.txt")).body).toBe("three");
    const replaced = await putAsset(t, "site", "modes/a.txt", "four");
    expect(replaced.statusCode).toBe(201);
    expect(replaced.json().created).toBe(before.created);
    expect(replaced.json().modified > before.modified).toBe(true);
    expect((await get("/endpoints/site/content/modes/a.txt")).body).toBe("four");
  });

  it("refuses folders where files are meant, and files where folders are", async () => {
    await putAsset(t, "site", "tree/leaf.txt", "leaf");
    const folderGet = await get("/endpoints/site/content/tree");
    expect(folderGet.statusCode).toBe(400);
    expect((await get("/endpoints/site/content/")).statusCode).toBe(400);
    expect((await putAsset(t, "site", "tree", "x")).statusCode).toBe(400);
    const under = await putAsset(t, "site", "tree/leaf.txt/inner.txt", "x");
    expect(under.statusCode).toBe(400);
    expect(under.body).toContain("is a file");
    const slash = await putAsset(t, "site", "tree/", "content for a folder URL");
    expect(slash.statusCode).toBe(400);
    expect(slash.body).toContain("names a folder");
    const deleteFolder = await t.app.inject({
      method: "DELETE",
      url: "/endpoints/site/content/tree",
      headers: admin(),
    });
    expect(deleteFolder.statusCode).toBe(400);
  });

  it("answers a missing file with the phrase clients look for", async () => {
    const res = await get("/endpoints/site/content/nothing/here.txt");
    expect(res.statusCode).toBe(404);
    expect(res.headers["content-type"]).toBe("text/plain");
    expect(res.body).toBe("The specified asset was not found.");
    const unknownDir = await get("/endpoints/nowhere/content/a.txt");
    expect(unknownDir.statusCode).toBe(404);
  });

  it("is not a window onto feeds of other types", async () => {
    await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin(),
      payload: { name: "packages", feedType: "universal" },
    });
    expect((await get("/endpoints/packages/dir/")).statusCode).toBe(404);
    expect((await putAsset(t, "packages", "a.txt", "x")).statusCode).toBe(404);
  });

  it("deletes files, and a missing file is not an error", async () => {
    await putAsset(t, "site", "gone/x.txt", "bye");
    const del = (url: string) => t.app.inject({ method: "DELETE", url, headers: admin() });
    expect((await del("/endpoints/site/content/gone/x.txt")).statusCode).toBe(200);
    expect((await get("/endpoints/site/content/gone/x.txt")).statusCode).toBe(404);
    expect((await del("/endpoints/site/content/gone/x.txt")).statusCode).toBe(200);
  });

  it("removes a deleted file's blob unless other content still uses it", async () => {
    const shared = "shared bytes for two files";
    const lonely = "bytes only one file has";
    await putAsset(t, "site", "blobs/one.txt", shared);
    await putAsset(t, "site", "blobs/two.txt", shared);
    await putAsset(t, "site", "blobs/three.txt", lonely);
    const del = (url: string) => t.app.inject({ method: "DELETE", url, headers: admin() });
    await del("/endpoints/site/content/blobs/one.txt");
    await del("/endpoints/site/content/blobs/three.txt");
    const blobs = await storedBlobAddresses(t);
    expect(blobs).toContain(sha("sha256", shared));
    if (blobsDeletedAtOnce) expect(blobs).not.toContain(sha("sha256", lonely));
    expect((await get("/endpoints/site/content/blobs/two.txt")).body).toBe(shared);
  });

  it("deletes the stored bytes of an upload that loses a race to create the same file", async () => {
    const bodies = ["first racer's bytes", "second racer's bytes"];
    const results = await Promise.all(
      bodies.map((payload) =>
        t.app.inject({ method: "PUT", url: "/endpoints/site/content/race/one.txt", headers: admin(), payload }),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 400]);
    const winner = (await get("/endpoints/site/content/race/one.txt")).body;
    const loser = bodies.find((body) => body !== winner) as string;
    const blobs = await storedBlobAddresses(t);
    expect(blobs).toContain(sha("sha256", winner));
    if (blobsDeletedAtOnce) expect(blobs).not.toContain(sha("sha256", loser));
  });

  it("keeps names with spaces and non-ASCII characters, and links to them escaped", async () => {
    const created = await putAsset(t, "site", "my%20docs/%C3%BCber%20uns.txt", "ü");
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: "über uns.txt", parent: "my docs" });
    expect(created.json().content).toBe("http://localhost:80/endpoints/site/content/my%20docs/%C3%BCber%20uns.txt");
    // Decomposed (macOS) spelling of the same name finds the same file.
    const decomposed = encodeURIComponent("über uns.txt".normalize("NFD"));
    expect((await get(`/endpoints/site/content/my%20docs/${decomposed}`)).body).toBe("ü");
  });

  it("builds download links on WHARF_BASE_URL or the forwarded host", async () => {
    const forwarded = await putAsset(t, "site", "links/a.txt", "a", {
      "x-forwarded-host": "assets.example.com",
      "x-forwarded-proto": "https",
    });
    expect(forwarded.json().content).toBe("https://assets.example.com/endpoints/site/content/links/a.txt");
    const based = await buildTestApp({ env: { WHARF_BASE_URL: "https://wharf.example.org/base/" } });
    try {
      await createAssetDirectory(based, "d");
      const res = await putAsset(based, "d", "x.txt", "x", { "x-forwarded-host": "evil.example" });
      expect(res.json().content).toBe("https://wharf.example.org/base/endpoints/d/content/x.txt");
    } finally {
      await based.close();
    }
  });

  it("sandboxes HTML and SVG unless the directory is a static site", async () => {
    await putAsset(t, "site", "page.html", "<script>alert(1)</script>", { "content-type": "text/html" });
    await putAsset(t, "site", "logo.svg", "<svg/>");
    await putAsset(t, "web", "index.html", "<h1>site</h1>");
    const page = await get("/endpoints/site/content/page.html");
    expect(page.headers["content-security-policy"]).toBe("sandbox");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect((await get("/endpoints/site/content/logo.svg")).headers["content-security-policy"]).toBe("sandbox");
    const site = await get("/endpoints/web/content/index.html");
    expect(site.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(site.headers["content-security-policy"]).toBeUndefined();
    expect(site.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("verifies client digests and the size limit before anything is stored", async () => {
    const wrong = await putAsset(t, "site", "checked/a.txt", "content", { "x-checksum-sha256": "0".repeat(64) });
    expect(wrong.statusCode).toBe(400);
    const right = await putAsset(t, "site", "checked/b.txt", "content", { "x-checksum-sha1": sha("sha1", "content") });
    expect(right.statusCode).toBe(201);
    const big = await putAsset(t, "site", "checked/big.bin", Buffer.alloc(100_001));
    expect(big.statusCode).toBe(413);
    const chunkedBig = await t.app.inject({
      method: "POST",
      url: "/endpoints/site/content/checked/chunked-big.bin",
      headers: { ...admin(), "transfer-encoding": "chunked" },
      payload: Readable.from([Buffer.alloc(60_000), Buffer.alloc(60_000)]),
    });
    expect(chunkedBig.statusCode).toBe(413);
    const listed = (await get("/endpoints/site/dir/checked")).json() as Array<{ name: string }>;
    expect(listed.map((item) => item.name)).toEqual(["b.txt"]);
    expect(await filesLeftInTmp(t)).toEqual([]);
  });

  it("streams chunked bodies and stores an empty body as an empty file", async () => {
    const chunked = await t.app.inject({
      method: "POST",
      url: "/endpoints/site/content/stream/chunked.txt",
      headers: { ...admin(), "transfer-encoding": "chunked" },
      payload: Readable.from([Buffer.from("part one, "), Buffer.from("part two")]),
    });
    expect(chunked.statusCode).toBe(201);
    expect((await get("/endpoints/site/content/stream/chunked.txt")).body).toBe("part one, part two");
    const empty = await t.app.inject({
      method: "POST",
      url: "/endpoints/site/content/stream/empty.txt",
      headers: { ...admin(), "content-type": "text/plain" },
    });
    expect(empty.statusCode).toBe(201);
    expect(empty.json()).toMatchObject({ size: 0, type: "text/plain" });
  });
});
