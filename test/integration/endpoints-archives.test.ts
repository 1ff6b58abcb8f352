import { randomBytes } from "node:crypto";
import { Readable } from "node:stream";
import { gunzipSync, gzipSync } from "node:zlib";
import tar from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import yauzl from "yauzl";
import yazl from "yazl";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createFeedKey } from "../helpers/fixtures.js";
import { filesLeftInTmp } from "../helpers/temp-files.js";
import { buildZip } from "../helpers/upack-fixtures.js";

/** docs/compat.md 4.5: export and import of asset folders as archives. */

/** Item times are the clock's; even seconds survive a ZIP's 2-second DOS times. */
const NOW = new Date(Date.UTC(2024, 2, 4, 5, 6, 8));

interface ReadEntry {
  readonly name: string;
  readonly directory: boolean;
  readonly mtime: Date;
  readonly content: Buffer;
}

async function collect(stream: AsyncIterable<Buffer | Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

async function zipEntries(bytes: Buffer): Promise<Map<string, ReadEntry>> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const entries = new Map<string, ReadEntry>();
  for await (const entry of zip.eachEntry()) {
    const directory = entry.fileName.endsWith("/");
    const content = directory ? Buffer.alloc(0) : await collect(await zip.openReadStreamPromise(entry));
    entries.set(entry.fileName, { name: entry.fileName, directory, mtime: entry.getLastModDate(), content });
  }
  return entries;
}

async function tgzEntries(bytes: Buffer): Promise<Map<string, ReadEntry>> {
  const extract = tar.extract();
  extract.end(gunzipSync(bytes));
  const entries = new Map<string, ReadEntry>();
  for await (const entry of extract) {
    const { name, type, mtime } = entry.header;
    const content = await collect(entry as AsyncIterable<Buffer>);
    entries.set(name, { name, directory: type === "directory", mtime: mtime ?? new Date(0), content });
  }
  return entries;
}

interface TarInput {
  readonly header: Partial<tar.Header> & { name: string };
  readonly content?: string | Buffer;
}

async function buildTgz(entries: readonly TarInput[]): Promise<Buffer> {
  const pack = tar.pack();
  for (const { header, content } of entries) pack.entry({ mtime: NOW, ...header }, Buffer.from(content ?? ""));
  pack.finalize();
  return gzipSync(await collect(pack as AsyncIterable<Buffer>));
}

/** yazl refuses unsafe names: build with a same-length stand-in, then patch every copy of the name. */
function renamed(bytes: Buffer, from: string, to: string): Buffer {
  const needle = Buffer.from(from);
  const replacement = Buffer.from(to);
  expect(replacement.length).toBe(needle.length);
  const out = Buffer.from(bytes);
  let found = 0;
  for (let at = out.indexOf(needle); at !== -1; at = out.indexOf(needle, at + 1), found++) replacement.copy(out, at);
  expect(found).toBe(2); // local header and central directory
  return out;
}

async function zipWithMode(name: string, mode: number, content: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from("fine"), "ok.txt", { mtime: NOW });
  zip.addBuffer(Buffer.from(content), name, { mtime: NOW, mode });
  zip.end();
  return collect(zip.outputStream as AsyncIterable<Buffer>);
}

describe("asset directory export and import (docs/compat.md 4.5)", () => {
  let t: TestApp;
  const admin = () => ({ "x-apikey": t.adminKey });
  const binary = randomBytes(70_000);

  beforeAll(async () => {
    t = await buildTestApp({ clock: { now: () => NOW } });
    await createAssetDirectory(t, "site");
    expect((await putAsset(t, "site", "docs/a.txt", "alpha")).statusCode).toBe(201);
    expect((await putAsset(t, "site", "docs/sub/b.bin", binary)).statusCode).toBe(201);
    expect((await putAsset(t, "site", "top.txt", "top")).statusCode).toBe(201);
    const folder = await t.app.inject({ method: "POST", url: "/endpoints/site/dir/docs/empty", headers: admin() });
    expect(folder.statusCode).toBe(201);
  });
  afterAll(async () => t.close());

  const get = (url: string, headers: Record<string, string> = admin()) => t.app.inject({ method: "GET", url, headers });
  const importArchive = (url: string, payload: Buffer | Readable, headers: Record<string, string> = {}) =>
    t.app.inject({ method: "POST", url, payload, headers: { ...admin(), ...headers } });

  /** Every item of the directory: path -> content (folders: "<dir>"). */
  async function tree(dir: string): Promise<Record<string, string>> {
    const res = await get(`/endpoints/${dir}/dir?recursive=true`);
    expect(res.statusCode).toBe(200);
    const out: Record<string, string> = {};
    for (const item of res.json() as Array<{ name: string; parent?: string; type: string }>) {
      const itemPath = item.parent ? `${item.parent}/${item.name}` : item.name;
      out[itemPath] = item.type === "dir" ? "<dir>" : (await get(`/endpoints/${dir}/content/${itemPath}`)).body;
    }
    return out;
  }

  const tempFiles = () => filesLeftInTmp(t);

  describe("export", () => {
    it("streams a folder as a ZIP: names relative to it, bytes, empty folders and item times", async () => {
      const res = await get("/endpoints/site/export/docs?format=zip&recursive=true");
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/zip");
      expect(res.headers["content-disposition"]).toBe('attachment; filename="docs.zip"');
      const entries = await zipEntries(res.rawPayload);
      expect([...entries.keys()].sort()).toEqual(["a.txt", "empty/", "sub/", "sub/b.bin"]);
      expect(entries.get("a.txt")?.content.toString()).toBe("alpha");
      expect(entries.get("sub/b.bin")?.content.equals(binary)).toBe(true);
      expect(entries.get("empty/")?.directory).toBe(true);
      expect(entries.get("a.txt")?.mtime.getTime()).toBe(NOW.getTime());
    });

    it("streams a folder as a gzipped TAR", async () => {
      const res = await get("/endpoints/site/export/docs?format=tgz");
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/gzip");
      expect(res.headers["content-disposition"]).toBe('attachment; filename="docs.tar.gz"');
      const entries = await tgzEntries(res.rawPayload);
      expect([...entries.keys()].sort()).toEqual(["a.txt", "empty/", "sub/", "sub/b.bin"]);
      expect(entries.get("a.txt")?.content.toString()).toBe("alpha");
      expect(entries.get("sub/b.bin")?.content.equals(binary)).toBe(true);
      expect(entries.get("empty/")?.directory).toBe(true);
      expect(entries.get("sub/b.bin")?.mtime.getTime()).toBe(NOW.getTime());
    });

    it("exports only the items directly in the folder with recursive=false (pgutil's `false)` too)", async () => {
      const res = await get("/endpoints/site/export/docs?format=zip&recursive=false)");
      expect(res.statusCode).toBe(200);
      expect([...(await zipEntries(res.rawPayload)).keys()].sort()).toEqual(["a.txt", "empty/", "sub/"]);
    });

    it("exports the root from the bare export URL, recursively by default", async () => {
      for (const url of ["/endpoints/site/export", "/endpoints/site/export/"]) {
        const res = await get(url);
        expect(res.statusCode).toBe(200);
        expect(res.headers["content-disposition"]).toBe('attachment; filename="site.zip"');
        const names = [...(await zipEntries(res.rawPayload)).keys()].sort();
        expect(names).toEqual(["docs/", "docs/a.txt", "docs/empty/", "docs/sub/", "docs/sub/b.bin", "top.txt"]);
      }
    });

    it("names the archive after the folder, in ASCII with the exact name in filename*", async () => {
      await createAssetDirectory(t, "names");
      expect((await putAsset(t, "names", "données/é.txt", "accent")).statusCode).toBe(201);
      const res = await get(`/endpoints/names/export/${encodeURIComponent("données")}?format=tgz`);
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-disposition"]).toBe(
        `attachment; filename="donn_es.tar.gz"; filename*=UTF-8''donn%C3%A9es.tar.gz`,
      );
      expect((await tgzEntries(res.rawPayload)).get("é.txt")?.content.toString()).toBe("accent");
    });

    it("answers HEAD with the headers and no body", async () => {
      const res = await t.app.inject({
        method: "HEAD",
        url: "/endpoints/site/export/docs?format=tgz",
        headers: admin(),
      });
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/gzip");
      expect(res.body).toBe("");
    });

    it("refuses a missing folder (404), a file (400) and an unknown format (400)", async () => {
      const missing = await get("/endpoints/site/export/nothing-here");
      expect(missing.statusCode).toBe(404);
      expect(missing.body).toBe("The specified asset was not found.");
      const file = await get("/endpoints/site/export/docs/a.txt");
      expect(file.statusCode).toBe(400);
      expect(file.headers["x-wharf-error"]).toBe("ASSET_IS_FILE");
      const format = await get("/endpoints/site/export/docs?format=rar");
      expect(format.statusCode).toBe(400);
      expect(format.headers["x-wharf-error"]).toBe("INVALID_FORMAT");
    });

    it("serves Cake.ProGet's folder download: content/<folder>/?format=zip&recursive=true", async () => {
      const res = await get("/endpoints/site/content/docs/?format=zip&recursive=true");
      expect(res.statusCode).toBe(200);
      expect(res.headers["content-type"]).toBe("application/zip");
      const entries = await zipEntries(res.rawPayload);
      expect([...entries.keys()].sort()).toEqual(["a.txt", "empty/", "sub/", "sub/b.bin"]);
      expect(entries.get("sub/b.bin")?.content.equals(binary)).toBe(true);
    });

    it("needs credentials", async () => {
      expect((await get("/endpoints/site/export/docs", {})).statusCode).toBe(401);
    });
  });

  describe("import", () => {
    it("extracts a ZIP into a new subfolder: folders, files and empty directories", async () => {
      await createAssetDirectory(t, "imp-zip");
      const zip = await buildZip({ "x.txt": "ex", "dir/": null, "dir/y.bin": binary, "hollow/": null });
      const res = await importArchive("/endpoints/imp-zip/import/new/deep?format=zip", zip, {
        "content-type": "application/octet-stream",
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ files: 2, skipped: 0 });
      expect(await tree("imp-zip")).toEqual({
        new: "<dir>",
        "new/deep": "<dir>",
        "new/deep/x.txt": "ex",
        "new/deep/dir": "<dir>",
        "new/deep/dir/y.bin": binary.toString(),
        "new/deep/hollow": "<dir>",
      });
      const stored = await get("/endpoints/imp-zip/content/new/deep/dir/y.bin");
      expect(stored.rawPayload.equals(binary)).toBe(true);
      expect(await tempFiles()).toEqual([]);
    });

    it("extracts a gzipped TAR into the root from the bare import URL, `./` prefixes and all", async () => {
      await createAssetDirectory(t, "imp-tgz");
      const tgz = await buildTgz([
        { header: { name: "./", type: "directory" } },
        { header: { name: "./pkg/", type: "directory" } },
        { header: { name: "./pkg/readme.md", type: "file" }, content: "# hi" },
        { header: { name: "notes.txt", type: "file" }, content: "n" },
      ]);
      const res = await importArchive("/endpoints/imp-tgz/import?format=tgz", tgz);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ files: 2, skipped: 0 });
      expect(await tree("imp-tgz")).toEqual({ pkg: "<dir>", "pkg/readme.md": "# hi", "notes.txt": "n" });
      expect(await tempFiles()).toEqual([]);
    });

    it("round-trips an export through an import", async () => {
      await createAssetDirectory(t, "imp-copy");
      for (const format of ["zip", "tgz"]) {
        const exported = await get(`/endpoints/site/export/docs?format=${format}`);
        const res = await importArchive(`/endpoints/imp-copy/import/${format}?format=${format}`, exported.rawPayload);
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({ files: 2, skipped: 0 });
      }
      const copy = await tree("imp-copy");
      for (const format of ["zip", "tgz"]) {
        expect(copy[`${format}/a.txt`]).toBe("alpha");
        expect(copy[`${format}/sub/b.bin`]).toBe(binary.toString());
        expect(copy[`${format}/empty`]).toBe("<dir>");
      }
    });

    it("keeps existing files unless overwrite=true, and counts them as skipped", async () => {
      await createAssetDirectory(t, "imp-keep");
      await putAsset(t, "imp-keep", "f/x.txt", "old");
      const zip = await buildZip({ "X.TXT": "new", "z.txt": "zed" });
      const kept = await importArchive("/endpoints/imp-keep/import/f", zip);
      expect(kept.statusCode).toBe(200);
      expect(kept.json()).toEqual({ files: 1, skipped: 1 });
      expect(await tree("imp-keep")).toEqual({ f: "<dir>", "f/x.txt": "old", "f/z.txt": "zed" });

      const replaced = await importArchive("/endpoints/imp-keep/import/f?overwrite=True", zip);
      expect(replaced.statusCode).toBe(200);
      expect(replaced.json()).toEqual({ files: 2, skipped: 0 });
      expect(await tree("imp-keep")).toEqual({ f: "<dir>", "f/x.txt": "new", "f/z.txt": "zed" });
    });

    it("refuses overwrite=true over existing files without the overwrite permission, writing nothing", async () => {
      await createAssetDirectory(t, "imp-perm");
      await putAsset(t, "imp-perm", "x.txt", "old");
      const key = await createFeedKey(t.database, "imp-perm", ["view", "add"]);
      const zip = await buildZip({ "new.txt": "n", "x.txt": "replacement" });
      const res = await importArchive("/endpoints/imp-perm/import?overwrite=true", zip, { "x-apikey": key });
      expect(res.statusCode).toBe(403);
      expect(res.headers["x-wharf-error"]).toBe("OVERWRITE_FORBIDDEN");
      expect(await tree("imp-perm")).toEqual({ "x.txt": "old" });
      expect(await tempFiles()).toEqual([]);

      // Nothing to replace: the same key may import with overwrite=true.
      const fresh = await importArchive("/endpoints/imp-perm/import/other?overwrite=true", zip, { "x-apikey": key });
      expect(fresh.statusCode).toBe(200);
      expect(fresh.json()).toEqual({ files: 2, skipped: 0 });
    });

    it("takes ProGetAutomation's body labelled multipart/form-data without a boundary as the raw ZIP", async () => {
      await createAssetDirectory(t, "imp-pga");
      const zip = await buildZip({ "a/b.txt": "pga" });
      const res = await importArchive("/endpoints/imp-pga/import/target?overwrite=false", zip, {
        "content-type": "multipart/form-data",
      });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ files: 1, skipped: 0 });
      expect(await tree("imp-pga")).toEqual({ target: "<dir>", "target/a": "<dir>", "target/a/b.txt": "pga" });
    });

    it("takes a chunked body and refuses an empty one", async () => {
      await createAssetDirectory(t, "imp-chunked");
      const zip = await buildZip({ "c.txt": "chunks" });
      const res = await importArchive(
        "/endpoints/imp-chunked/import",
        Readable.from([zip.subarray(0, 10), zip.subarray(10)]),
        {
          "transfer-encoding": "chunked",
        },
      );
      expect(res.statusCode).toBe(200);
      expect(await tree("imp-chunked")).toEqual({ "c.txt": "chunks" });
      const empty = await importArchive("/endpoints/imp-chunked/import", Buffer.alloc(0));
      expect(empty.statusCode).toBe(400);
    });

    it("refuses an import into a file, or an unknown format, before reading the body", async () => {
      await createAssetDirectory(t, "imp-bad");
      await putAsset(t, "imp-bad", "file.txt", "f");
      const zip = await buildZip({ "a.txt": "a" });
      const intoFile = await importArchive("/endpoints/imp-bad/import/file.txt/below", zip);
      expect(intoFile.statusCode).toBe(400);
      expect(intoFile.headers["x-wharf-error"]).toBe("PARENT_IS_FILE");
      const format = await importArchive("/endpoints/imp-bad/import?format=7z", zip);
      expect(format.statusCode).toBe(400);
      expect(format.headers["x-wharf-error"]).toBe("INVALID_FORMAT");
      expect(await tree("imp-bad")).toEqual({ "file.txt": "f" });
    });

    it("refuses keys without Feeds_AddPackage (403) and anonymous callers (401)", async () => {
      await createAssetDirectory(t, "imp-auth");
      const zip = await buildZip({ "a.txt": "a" });
      const viewer = await createFeedKey(t.database, "imp-auth", ["view"]);
      const forbidden = await importArchive("/endpoints/imp-auth/import", zip, { "x-apikey": viewer });
      expect(forbidden.statusCode).toBe(403);
      // Refused before the body was read: the connection is closed rather than the body drained.
      expect(forbidden.headers.connection).toBe("close");
      const anonymous = await t.app.inject({ method: "POST", url: "/endpoints/imp-auth/import", payload: zip });
      expect(anonymous.statusCode).toBe(401);
      expect(await tree("imp-auth")).toEqual({});
      expect(await tempFiles()).toEqual([]);
    });
  });

  describe("hostile archives: refused whole, nothing written, no temp file left", () => {
    const zeros = Buffer.alloc(24 * 1024 * 1024);
    /** Each archive starts with a harmless file, so that "nothing written" means the check came first. */
    const renamedTo = (bytes: Buffer, from: string, to: string) => (from === to ? bytes : renamed(bytes, from, to));
    const zipAfterOk = async (name: string, content: string | Buffer, stored = name) =>
      renamedTo(await buildZip({ "ok.txt": "ok", [stored]: content }), stored, name);
    const tgzAfterOk = (header: TarInput["header"], content?: string | Buffer) =>
      buildTgz([
        { header: { name: "ok.txt" }, content: "ok" },
        { header, ...(content === undefined ? {} : { content }) },
      ]);
    const attack = (label: string, format: string, status: number, code: string, build: () => Promise<Buffer>) => ({
      label,
      format,
      status,
      code,
      build,
    });
    const UNSAFE = "ARCHIVE_UNSAFE_PATH";
    const CONFLICT = "ARCHIVE_ITEM_CONFLICT";
    const BOMB = "ARCHIVE_RATIO_EXCEEDED";
    const attacks = [
      attack("zip-slip ../", "zip", 400, UNSAFE, () => zipAfterOk("../escape.txt", "x", "xx/escape.txt")),
      attack("an absolute name", "zip", 400, UNSAFE, () => zipAfterOk("/abs.txt", "x", "_abs.txt")),
      attack("a backslash", "zip", 400, UNSAFE, () => zipAfterOk("a\\b.txt", "x", "a_b.txt")),
      attack("a drive letter", "zip", 400, UNSAFE, () => zipAfterOk("c:/x.txt", "x", "c_/x.txt")),
      attack("NUL in a name", "zip", 400, UNSAFE, () => zipAfterOk("a\0b.txt", "x", "a_b.txt")),
      attack("a ZIP symlink", "zip", 400, "ARCHIVE_LINK_ENTRY", () => zipWithMode("link", 0o120777, "/etc/passwd")),
      attack("a ZIP fifo", "zip", 400, "ARCHIVE_UNSUPPORTED_ENTRY", () => zipWithMode("fifo", 0o010644, "")),
      attack("two names for one item", "zip", 400, "ARCHIVE_DUPLICATE_ENTRY", () =>
        buildZip({ "ok.txt": "ok", "Read.me": "1", "READ.ME": "2" }),
      ),
      attack("a file where a folder must be", "zip", 400, CONFLICT, () =>
        buildZip({ "ok.txt": "ok", a: "file", "a/b.txt": "below" }),
      ),
      attack("a file over an existing folder", "zip", 400, CONFLICT, () => zipAfterOk("existing", "file")),
      attack("a ratio bomb (ZIP)", "zip", 413, BOMB, () => zipAfterOk("zeros.bin", zeros)),
      attack("not a ZIP at all", "zip", 400, "ARCHIVE_INVALID", async () => Buffer.from("not a zip archive")),
      attack("a tar symlink", "tgz", 400, "ARCHIVE_LINK_ENTRY", () =>
        tgzAfterOk({ name: "link", type: "symlink", linkname: "/etc/passwd" }),
      ),
      attack("a tar hard link", "tgz", 400, "ARCHIVE_LINK_ENTRY", () =>
        tgzAfterOk({ name: "hard", type: "link", linkname: "ok.txt" }),
      ),
      attack("a tar device", "tgz", 400, "ARCHIVE_UNSUPPORTED_ENTRY", () =>
        tgzAfterOk({ name: "dev", type: "character-device" }),
      ),
      attack("tar-slip ../", "tgz", 400, UNSAFE, () => tgzAfterOk({ name: "../escape.txt" }, "x")),
      attack("a ratio bomb (tgz)", "tgz", 413, BOMB, () => tgzAfterOk({ name: "zeros.bin" }, zeros)),
      attack("a truncated tgz", "tgz", 400, "ARCHIVE_INVALID", async () =>
        (await tgzAfterOk({ name: "r.bin" }, randomBytes(9000))).subarray(0, 4000),
      ),
    ];

    let before: Record<string, string>;
    beforeAll(async () => {
      await createAssetDirectory(t, "hostile");
      await putAsset(t, "hostile", "target/keep.txt", "kept");
      expect(
        (await t.app.inject({ method: "POST", url: "/endpoints/hostile/dir/target/existing", headers: admin() }))
          .statusCode,
      ).toBe(201);
      before = await tree("hostile");
    });

    it.each(attacks)("refuses $label", async ({ build, format, status, code }) => {
      const res = await importArchive(
        `/endpoints/hostile/import/target?format=${format}&overwrite=true`,
        await build(),
      );
      expect(res.statusCode).toBe(status);
      expect(res.headers["x-wharf-error"]).toBe(code);
      expect(await tree("hostile")).toEqual(before);
      expect(await tempFiles()).toEqual([]);
    });

    it("names the refused entry", async () => {
      const zip = renamed(await buildZip({ "ok.txt": "ok", "xx/escape.txt": "x" }), "xx/escape.txt", "../escape.txt");
      const res = await importArchive("/endpoints/hostile/import/target", zip);
      expect(res.body).toContain('"../escape.txt"');
    });
  });

  describe("upload limit", () => {
    let small: TestApp;
    beforeAll(async () => {
      small = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: "4096" } });
      await createAssetDirectory(small, "tiny");
    });
    afterAll(async () => small.close());

    it("refuses a body over the limit with 413, declared or streamed, and leaves no temp file", async () => {
      const zip = await buildZip({ "big.bin": randomBytes(8192) });
      const headers = { "x-apikey": small.adminKey };
      const declared = await small.app.inject({ method: "POST", url: "/endpoints/tiny/import", payload: zip, headers });
      expect(declared.statusCode).toBe(413);
      const streamed = await small.app.inject({
        method: "POST",
        url: "/endpoints/tiny/import",
        payload: Readable.from([zip.subarray(0, 3000), zip.subarray(3000)]),
        headers: { ...headers, "transfer-encoding": "chunked" },
      });
      expect(streamed.statusCode).toBe(413);
      expect(streamed.headers["x-wharf-error"]).toBe("UPLOAD_TOO_LARGE");
      expect(await filesLeftInTmp(small)).toEqual([]);
      const listing = await small.app.inject({ method: "GET", url: "/endpoints/tiny/dir?recursive=true", headers });
      expect(listing.json()).toEqual([]);
    });
  });
});
