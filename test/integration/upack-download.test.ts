import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createUpackDownloadService, assemblyUnavailable } from "../../src/areas/upack/download/service.js";
import { upackQueryRepositoryOf } from "../../src/areas/upack/services.js";
import { createFeedService } from "../../src/areas/management/index.js";
import { systemClock } from "../../src/domain/clock.js";
import { DomainError } from "../../src/domain/errors.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import {
  type AddedVersion,
  buildUpack,
  createUpackFixtures,
  readTgz,
  readZip,
  type UpackFixtures,
} from "../helpers/upack-fixtures.js";
import { expectText } from "../helpers/responses.js";

/**
 * Universal feed downloads (docs/seed-api.md area A: download package, download package file,
 * download virtual package; docs/compat.md 2.4-2.6, 2.12): headers, ranges and conditions, contents as
 * ZIP or TGZ, single files and their path rules, virtual manifests, and download counting.
 */

const PUBLISHED = new Date(Date.UTC(2024, 4, 6, 7, 8, 9, 120));
const FILES = {
  "bin/": null,
  "bin/app.exe": "MZ-binary",
  "docs/readme.md": "# Readme",
  "docs/Notes.TXT": "notes",
  "config.json": '{"a":1}',
  "data/x.xml": "<x/>",
  "weird name ü.txt": "unicode",
};

describe("universal feed downloads", () => {
  let t: TestApp;
  let u: UpackFixtures;
  let app: AddedVersion;
  let beta: AddedVersion;
  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ url, headers: { "x-apikey": t.adminKey, ...headers } });
  const head = (url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ method: "HEAD", url, headers: { "x-apikey": t.adminKey, ...headers } });
  const counts = (version: string) => u.downloadsOf("main", "acme/tools", "App", version);

  beforeAll(async () => {
    t = await buildTestApp();
    u = createUpackFixtures(t);
    await u.createFeed("main");
    const spec = { group: "acme/tools", name: "App", files: FILES, rootFiles: { "install.ps1": "echo hi" } };
    app = await u.addVersion("main", { ...spec, version: "1.2.3" }, { publishedAt: PUBLISHED });
    beta = await u.addVersion("main", { ...spec, version: "2.0.0-rc.1+b7" });
    await u.addVersion("main", { name: "plain", version: "1.0.0" });
    await u.addVersion("main", {
      name: "meta",
      version: "1.0.0",
      manifest: { contents: [{ source: "acme/tools/App:1.2.3", virtualPath: "app" }], _note: "virtual" },
    });
  });
  afterAll(async () => t?.close());

  describe("package file", () => {
    it("serves the stored bytes unchanged with the full header set", async () => {
      const res = await get("/upack/main/download/acme/tools/App/1.2.3");
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(app.bytes)).toBe(true);
      expect(res.headers).toMatchObject({
        "content-type": "application/zip",
        "content-disposition": 'attachment; filename="App.1.2.3.upack"',
        "content-length": String(app.bytes.length),
        "accept-ranges": "bytes",
        etag: `"${app.sha256}"`,
        "last-modified": "Mon, 06 May 2024 07:08:09 GMT",
        "x-content-type-options": "nosniff",
      });
      expect(createHash("sha1").update(res.rawPayload).digest("hex")).toBe(app.sha1);
    });

    it("addresses the package by group with '/' or %2F, any case, and `latest` bare or with a value", async () => {
      const urls = [
        "/upack/main/download/acme%2Ftools/App/1.2.3",
        "/upack/main/download/ACME/Tools/app/1.2.3",
        "/upack/main/download/acme/tools/App/01.2.3",
        "/upack/main/download/acme/tools/App/1.2.3/",
      ];
      for (const url of urls) expect((await get(url)).rawPayload.equals(app.bytes), url).toBe(true);
      for (const query of ["latest", "latest=true", "LATEST", "foo=1&latest=", "latest=false"]) {
        const res = await get(`/upack/main/download/acme/tools/App?${query}`);
        expect(res.statusCode, query).toBe(200);
        expect(res.rawPayload.equals(beta.bytes), query).toBe(true);
        expect(res.headers["content-disposition"]).toBe('attachment; filename="App.2.0.0-rc.1+b7.upack"');
      }
      expect((await get("/upack/main/download/acme/tools/App/2.0.0-rc.1+b7")).rawPayload.equals(beta.bytes)).toBe(true);
      expect((await get("/upack/main/download/plain/1.0.0")).statusCode).toBe(200);
      expect((await get("/upack/main/download/plain?latest")).statusCode).toBe(200);
    });

    it("refuses a path without version or `latest` (400) and unknown packages or versions (404)", async () => {
      expectText(await get("/upack/main/download/acme/tools/App"), 400, "latest");
      expectText(await get("/upack/main/download/plain"), 400, "latest");
      expectText(await get("/upack/main/download/acme/tools/App/9.9.9"), 404, "was not found");
      expectText(await get("/upack/main/download/acme/tools/Nope/1.0.0"), 404, "package was not found");
      expectText(await get("/upack/main/download/nope?latest"), 404, "package was not found");
      expectText(await get("/upack/nope/download/plain/1.0.0"), 404, "feed not found");
      expectText(await get("/upack/main/download/acme/tools/App/1.2.3?contentOnly=rar"), 400, "contentOnly");
    });

    it("honours Range (206, exact bytes; 416 outside) and conditions (304)", async () => {
      const url = "/upack/main/download/acme/tools/App/1.2.3";
      const part = await get(url, { range: "bytes=10-19" });
      expect(part.statusCode).toBe(206);
      expect(part.headers["content-range"]).toBe(`bytes 10-19/${app.bytes.length}`);
      expect(part.rawPayload.equals(app.bytes.subarray(10, 20))).toBe(true);
      const tail = await get(url, { range: "bytes=-5" });
      expect(tail.rawPayload.equals(app.bytes.subarray(-5))).toBe(true);
      const outside = await get(url, { range: `bytes=${app.bytes.length}-` });
      expect(outside.statusCode).toBe(416);
      expect(outside.headers["content-range"]).toBe(`bytes */${app.bytes.length}`);
      const same = await get(url, { "if-none-match": `"${app.sha256}"` });
      expect(same.statusCode).toBe(304);
      expect(same.rawPayload.length).toBe(0);
      expect((await get(url, { "if-none-match": '"other"' })).statusCode).toBe(200);
    });

    it("answers HEAD with the headers of a GET and no body", async () => {
      const res = await head("/upack/main/download/acme/tools/App/1.2.3");
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.length).toBe(0);
      expect(res.headers["content-length"]).toBe(String(app.bytes.length));
      expect(res.headers.etag).toBe(`"${app.sha256}"`);
    });
  });

  describe("contentOnly", () => {
    const contents = Object.fromEntries(
      Object.entries(FILES).map(([name, value]) => [name, value === null ? "" : value]),
    );

    it("streams the package/ contents as a ZIP, prefix removed (empty value = zip)", async () => {
      for (const value of ["", "zip", "ZIP"]) {
        const res = await get(`/upack/main/download/acme/tools/App/1.2.3?contentOnly=${value}`);
        expect(res.statusCode).toBe(200);
        expect(res.headers["content-type"]).toBe("application/zip");
        expect(res.headers["content-disposition"]).toBe('attachment; filename="App.1.2.3.zip"');
        expect(Object.fromEntries(await readZip(res.rawPayload))).toEqual(contents);
      }
      const bare = await get("/upack/main/download/acme/tools/App/1.2.3?contentOnly");
      expect(Object.fromEntries(await readZip(bare.rawPayload))).toEqual(contents);
    });

    it("streams them as a gzipped TAR for tgz, with `latest` too", async () => {
      const res = await get("/upack/main/download/acme/tools/App?latest&contentOnly=tgz");
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/x-compressed");
      expect(res.headers["content-disposition"]).toBe('attachment; filename="App.2.0.0-rc.1+b7.tgz"');
      expect(Object.fromEntries(await readTgz(res.rawPayload))).toEqual(contents);
    });

    it("answers HEAD without building the archive", async () => {
      const res = await head("/upack/main/download/acme/tools/App/1.2.3?contentOnly=tgz");
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/x-compressed");
      expect(res.rawPayload.length).toBe(0);
    });
  });

  describe("download-file", () => {
    const file = (query: string, version = "1.2.3") =>
      get(`/upack/main/download-file/acme/tools/App/${version}?${query}`);

    it("serves one file with a type from its extension and its leaf name", async () => {
      const cases: [string, string, string, string][] = [
        [
          "upack.json",
          "application/json",
          "upack.json",
          JSON.stringify({ group: "acme/tools", name: "App", version: "1.2.3" }),
        ],
        ["install.ps1", "text/plain", "install.ps1", "echo hi"],
        ["package/docs/readme.md", "text/markdown", "readme.md", "# Readme"],
        ["package/bin/app.exe", "application/octet-stream", "app.exe", "MZ-binary"],
        ["package%2Fdata%2Fx.xml", "application/xml", "x.xml", "<x/>"],
        ["package/DOCS/notes.txt", "text/plain", "Notes.TXT", "notes"],
      ];
      for (const [path, type, leaf, body] of cases) {
        const res = await file(`path=${path}`);
        expect(res.statusCode, path).toBe(200);
        expect(res.body).toBe(body);
        expect(res.headers["content-type"]).toBe(type);
        expect(res.headers["content-disposition"]).toBe(`attachment; filename="${leaf}"`);
        expect(res.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
        expect(res.headers["x-content-type-options"]).toBe("nosniff");
      }
      const unicode = await file(`path=${encodeURIComponent("package/weird name ü.txt")}`);
      expect(unicode.body).toBe("unicode");
      expect(unicode.headers["content-disposition"]).toBe(
        `attachment; filename="weird name _.txt"; filename*=UTF-8''weird%20name%20%C3%BC.txt`,
      );
    });

    it("prefers the exact name over a case-insensitive match", async () => {
      await u.addVersion("main", {
        name: "cased",
        version: "1.0.0",
        files: { "A.txt": "upper", "a.txt": "lower" },
      });
      const upper = await get("/upack/main/download-file/cased/1.0.0?path=package/A.txt");
      const lower = await get("/upack/main/download-file/cased/1.0.0?path=package/a.txt");
      expect([upper.body, lower.body]).toEqual(["upper", "lower"]);
    });

    it("works with `latest`, and with the trailing '/?' ProGetAutomation sends", async () => {
      const latest = await get("/upack/main/download-file/acme/tools/App?latest&path=install.ps1");
      expect(latest.body).toBe("echo hi");
      const slash = await get("/upack/main/download-file/acme/tools/App/1.2.3/?path=package/config.json");
      expect(slash.body).toBe('{"a":1}');
      expectText(await get("/upack/main/download-file/acme/tools/App?path=upack.json"), 400, "latest");
    });

    it("answers 403 for a directory and 404 for a missing file", async () => {
      for (const path of ["package/docs", "package/docs/", "package", "package/bin", "PACKAGE/BIN/"]) {
        expectText(await file(`path=${path}`), 403, "directory");
      }
      expectText(await file("path=package/missing.txt"), 404, "was not found");
      expectText(await file("path=package/docs/readme.md/x"), 404, "was not found");
      expectText(await get("/upack/main/download-file/acme/tools/App/7.7.7?path=upack.json"), 404, "was not found");
    });

    it("refuses traversal, absolute paths, backslashes and NUL before looking anything up", async () => {
      const attacks = [
        "..",
        "../upack.json",
        "package/../upack.json",
        "%2e%2e/upack.json",
        "%2E%2E%2Fetc%2Fpasswd",
        "%252e%252e%252fupack.json",
        "/etc/passwd",
        "%2Fetc%2Fpasswd",
        "package%5Cbin%5Capp.exe",
        "package\\bin\\app.exe",
        "package/a%00b",
        "C:/Windows/win.ini",
        "package//bin/app.exe",
        "./upack.json",
      ];
      for (const path of attacks) expectText(await file(`path=${path}`), 400, "refused");
      expectText(await file(""), 400, "path");
      expectText(await file("path="), 400, "path");
    });

    it("answers HEAD with the file's headers and no body", async () => {
      const res = await t.app.inject({
        method: "HEAD",
        url: "/upack/main/download-file/acme/tools/App/1.2.3?path=package/docs/readme.md",
        headers: { "x-apikey": t.adminKey },
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-length"]).toBe("8");
      expect(res.rawPayload.length).toBe(0);
    });
  });

  describe("download-vpack", () => {
    it("serves the virtual manifest as <name>.<version>.vpack", async () => {
      for (const url of ["/upack/main/download-vpack/meta/1.0.0", "/upack/main/download-vpack/META?latest"]) {
        const res = await get(url);
        expect(res.statusCode).toBe(200);
        expect(res.headers["content-type"]).toBe("application/json; charset=utf-8");
        expect(res.headers["content-disposition"]).toBe('attachment; filename="meta.1.0.0.vpack"');
        expect(res.json()).toEqual({
          name: "meta",
          version: "1.0.0",
          contents: [{ source: "acme/tools/App:1.2.3", virtualPath: "app" }],
          _note: "virtual",
        });
      }
    });

    it("answers 404 for a package that is not virtual, 400 without version or latest", async () => {
      expectText(await get("/upack/main/download-vpack/plain/1.0.0"), 404, "not a virtual package");
      expectText(await get("/upack/main/download-vpack/meta"), 400, "latest");
      expectText(await get("/upack/main/download-vpack/meta/2.0.0"), 404, "was not found");
    });

    it("reports virtual packages as such in the listings", async () => {
      const meta = (await get("/upack/main/versions?name=meta&version=1.0.0")).json();
      expect(meta).toMatchObject({ isVirtual: true, isLocal: true });
    });
  });

  describe("virtual package assembly seam", () => {
    const service = (assemble = assemblyUnavailable) =>
      createUpackDownloadService({
        repository: upackQueryRepositoryOf(t.database, systemClock),
        feeds: createFeedService({ db: t.database, clock: systemClock, config: t.config }),
        blobs: u.blobs,
        assembleVirtual: assemble,
      });

    it("hands a virtual version with its manifest to the plugged-in assembler and serves what it returns", async () => {
      const assembled = await buildUpack({ name: "meta", version: "1.0.0", files: { "app/readme.txt": "built" } });
      const stored = await u.blobs.put(
        (async function* () {
          yield assembled;
        })(),
      );
      const downloads = service(async (version) => {
        expect(version).toMatchObject({ group: "", name: "meta", version: "1.0.0" });
        expect(JSON.parse(version.manifest)).toHaveProperty("contents");
        return { sha256: stored.sha256, size: stored.size, lastModified: PUBLISHED };
      });
      const { feed, target } = await downloads.resolve("main", "meta/1.0.0", false);
      expect(target.isVirtual).toBe(true);
      expect(await downloads.packageFile(feed, target)).toMatchObject({ sha256: stored.sha256 });
      const plain = await downloads.resolve("main", "plain", true);
      expect(await downloads.packageFile(plain.feed, plain.target)).toBe(plain.target.stored);
    });

    it("refuses virtual downloads by default, saying why", async () => {
      const downloads = service();
      const { feed, target } = await downloads.resolve("main", "meta", true);
      const failure = await downloads.packageFile(feed, target).catch((error: unknown) => error);
      expect(failure).toBeInstanceOf(DomainError);
      expect(failure).toMatchObject({ kind: "unsupported", message: "virtual package assembly is not available yet" });
    });
  });

  describe("through real uploads (write side)", () => {
    it("serves what was uploaded, byte for byte, until it is deleted", async () => {
      const bytes = await buildUpack({
        group: "up/loaded",
        name: "Round",
        version: "1.0.0-rc.2",
        manifest: { title: "Round trip", _build: 42 },
        files: { "dir/a.txt": "alpha" },
      });
      const admin = { "x-apikey": t.adminKey, "content-type": "application/zip" };
      const upload = await t.app.inject({ method: "PUT", url: "/upack/main/upload", headers: admin, payload: bytes });
      expect(upload.statusCode, upload.body).toBe(201);

      const version = (await get("/upack/main/versions?group=up/loaded&name=round&version=1.0.0-RC.2")).json();
      expect(version).toMatchObject({
        group: "up/loaded",
        name: "Round",
        version: "1.0.0-rc.2",
        title: "Round trip",
        _build: 42,
        size: bytes.length,
        sha1: createHash("sha1").update(bytes).digest("hex"),
        isLocal: true,
        downloads: "0",
      });
      const [withFiles] = (await get("/upack/main/versions?group=up/loaded&name=Round&includeFileList=true")).json();
      expect(withFiles.fileList).toEqual([{ name: "dir/a.txt", size: 5, date: expect.any(String) }]);
      const download = await get("/upack/main/download/up%2Floaded/Round?latest");
      expect(download.rawPayload.equals(bytes)).toBe(true);
      const file = await get("/upack/main/download-file/up/loaded/Round/1.0.0-rc.2?path=package/dir/A.TXT");
      expect(file.body).toBe("alpha");
      const contents = await get("/upack/main/download/up/loaded/Round/1.0.0-rc.2?contentOnly=tgz");
      expect(Object.fromEntries(await readTgz(contents.rawPayload))).toEqual({ "dir/a.txt": "alpha" });
      expect((await get("/upack/main/packages?group=up/loaded&name=Round")).json()).toMatchObject({
        downloads: "2",
        versions: ["1.0.0-rc.2"],
      });

      const removed = await t.app.inject({
        method: "DELETE",
        url: "/upack/main/delete/up/loaded/Round/1.0.0-rc.2",
        headers: { "x-apikey": t.adminKey },
      });
      expect(removed.statusCode, removed.body).toBe(200);
      expectText(await get("/upack/main/download/up/loaded/Round/1.0.0-rc.2"), 404, "package was not found");
      expectText(await get("/upack/main/packages?group=up/loaded&name=Round"), 404, "package was not found");
    });
  });

  describe("download counting", () => {
    it("counts a GET that starts at byte 0, once, on the version and its package", async () => {
      const three = await u.addVersion("main", { group: "acme/tools", name: "App", version: "3.0.0" });
      const url = "/upack/main/download/acme/tools/App/3.0.0";
      const before = (await counts("3.0.0")).package;
      const expectCounts = async (version: number) =>
        expect(await counts("3.0.0")).toEqual({ version, package: before + version });
      await expectCounts(0);
      await get(url);
      await expectCounts(1);
      await get(url, { range: "bytes=0-99" });
      await expectCounts(2);
      await get(url, { range: "bytes=100-" }); // the rest of a download already counted
      await head(url);
      expect((await get(url, { "if-none-match": `"${three.sha256}"` })).statusCode).toBe(304);
      await expectCounts(2);
      await get(`${url}?contentOnly=zip`);
      await get("/upack/main/download/acme/tools/App?latest");
      await expectCounts(4);
    });

    it("does not count metadata, single files or failed downloads", async () => {
      const before = await counts("1.2.3");
      await get("/upack/main/download-file/acme/tools/App/1.2.3?path=upack.json");
      await get("/upack/main/download/acme/tools/App/1.2.3", { range: `bytes=${app.bytes.length + 5}-` });
      await head("/upack/main/download/acme/tools/App/1.2.3?contentOnly=zip");
      expect(await counts("1.2.3")).toEqual(before);
    });

    it("shows the counts in the listings, as decimal strings", async () => {
      const pkg = (await get("/upack/main/packages?group=acme/tools&name=app")).json() as { downloads: string };
      const version = (await get("/upack/main/versions?group=acme/tools&name=app&version=3.0.0")).json() as {
        downloads: string;
      };
      expect(version.downloads).toBe("4");
      expect(pkg.downloads).toBe(String((await counts("3.0.0")).package));
    });
  });
});
