import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { createFeedKey, readOne } from "../helpers/fixtures.js";
import { type FormPart, filePart, formBody, formRequests } from "../helpers/form-data.js";

/**
 * Form uploads (`multipart/form-data`, curl -F) to asset directories: one file to `content/<path>`
 * is stored at that path; several, or a path naming a folder, each under the folder by its
 * filename; all or nothing. Not ProGet's chunked `?multipart=upload` protocol (endpoints-multipart.test.ts).
 */
const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const LIMIT = 100_000;

describe("asset directories: form uploads (multipart/form-data)", () => {
  let t: TestApp;
  const { admin, sendForm, get, blobs, temps } = formRequests(() => t);

  const itemCount = async () => (await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM asset_items"))?.n;

  beforeAll(async () => {
    t = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: String(LIMIT) } });
  });
  afterAll(async () => t.close());

  let dir = "";
  let counter = 0;
  beforeEach(async () => {
    dir = `files${++counter}`;
    await createAssetDirectory(t, dir);
  });

  it("stores one file part at the path the URL names, its bytes and the part's type, not the envelope", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/tools/setup.txt`, [
      filePart("local-name.txt", "hello form", "text/plain"),
    ]);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      name: "setup.txt",
      parent: "tools",
      type: "text/plain",
      size: 10,
      sha256: sha256("hello form"),
    });

    const back = await get(`/endpoints/${dir}/content/tools/setup.txt`);
    expect(back.statusCode).toBe(200);
    expect(back.body).toBe("hello form");
    expect(back.headers["content-type"]).toBe("text/plain");
    // The filename is not used when the URL names the file.
    expect((await get(`/endpoints/${dir}/content/tools/local-name.txt`)).statusCode).toBe(404);
  });

  it("takes the type from the extension when the part says only application/octet-stream (curl's default)", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/data.json`, [filePart("data.json", "{}")]);
    expect(res.statusCode).toBe(201);
    expect(res.json().type).toBe("application/json; charset=utf-8");
  });

  it("stores a file sent to a folder URL (trailing '/') under its filename", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/tools/`, [filePart("setup.exe", "MZ binary")]);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: "setup.exe", parent: "tools", size: 9 });
    expect((await get(`/endpoints/${dir}/content/tools/setup.exe`)).body).toBe("MZ binary");
  });

  it("stores a file sent to an existing folder (no trailing '/') under its filename", async () => {
    const folder = await t.app.inject({ method: "POST", url: `/endpoints/${dir}/dir/docs`, headers: admin() });
    expect(folder.statusCode).toBe(201);
    const res = await sendForm(`/endpoints/${dir}/content/docs`, [filePart("guide.md", "# Guide", "text/markdown")]);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: "guide.md", parent: "docs", type: "text/markdown" });
  });

  it("stores several file parts under the folder the path names, answering every item, fields ignored", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/release`, [
      { name: "comment", content: "not a file" },
      filePart("a.txt", "A", "text/plain"),
      { name: "files", filename: "sub/b.txt", content: "BB" },
      filePart("c.bin", Buffer.from([0, 1, 2, 255])),
    ]);
    expect(res.statusCode).toBe(201);
    const items = res.json() as Array<{ name: string; parent: string; size: number }>;
    expect(items.map((item) => [item.parent, item.name, item.size])).toEqual([
      ["release", "a.txt", 1],
      ["release/sub", "b.txt", 2],
      ["release", "c.bin", 4],
    ]);
    expect((await get(`/endpoints/${dir}/content/release/a.txt`)).body).toBe("A");
    expect((await get(`/endpoints/${dir}/content/release/sub/b.txt`)).body).toBe("BB");
    expect((await get(`/endpoints/${dir}/content/release/c.bin`)).rawPayload).toEqual(Buffer.from([0, 1, 2, 255]));
    expect((await get(`/endpoints/${dir}/content/release/comment`)).statusCode).toBe(404);
  });

  it("stores several files at the root of the directory", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/`, [filePart("one.txt", "1"), filePart("two.txt", "2")]);
    expect(res.statusCode).toBe(201);
    expect((res.json() as Array<{ name: string }>).map((item) => item.name)).toEqual(["one.txt", "two.txt"]);
    const listing = await get(`/endpoints/${dir}/dir/`);
    expect((listing.json() as Array<{ name: string }>).map((item) => item.name).sort()).toEqual(["one.txt", "two.txt"]);
  });

  it("keeps a filename outside ASCII as sent (curl and browsers send its UTF-8 bytes)", async () => {
    const res = await sendForm(`/endpoints/${dir}/content/intl/`, [filePart("résumé-日本.txt", "utf-8")]);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ name: "résumé-日本.txt", parent: "intl" });
    expect((await get(`/endpoints/${dir}/content/intl/${encodeURIComponent("résumé-日本.txt")}`)).body).toBe("utf-8");
  });

  it("keeps PUT's and PATCH's rules for every file, and stores none when one is refused", async () => {
    expect((await putAsset(t, dir, "box/old.txt", "old")).statusCode).toBe(201);
    const before = { items: await itemCount(), blobs: (await blobs()).length };

    const put = await sendForm(
      `/endpoints/${dir}/content/box`,
      [filePart("new.txt", "new"), filePart("old.txt", "replaced?")],
      { method: "PUT" },
    );
    expect(put.statusCode).toBe(400);
    expect(put.headers["x-wharf-error"]).toBe("ASSET_EXISTS");
    const patch = await sendForm(
      `/endpoints/${dir}/content/box`,
      [filePart("old.txt", "replaced?"), filePart("missing.txt", "x")],
      { method: "PATCH" },
    );
    expect(patch.statusCode).toBe(404);

    expect((await get(`/endpoints/${dir}/content/box/new.txt`)).statusCode).toBe(404);
    expect((await get(`/endpoints/${dir}/content/box/old.txt`)).body).toBe("old");
    expect(await itemCount()).toBe(before.items);
    expect((await blobs()).length).toBe(before.blobs);
    expect(await temps()).toEqual([]);

    const replace = await sendForm(`/endpoints/${dir}/content/box/`, [filePart("old.txt", "newer")], {
      method: "PATCH",
    });
    expect(replace.statusCode).toBe(201);
    expect((await get(`/endpoints/${dir}/content/box/old.txt`)).body).toBe("newer");
  });

  describe("filenames are asset paths: every attack is refused, nothing stored", () => {
    const attacks: Array<[string, FormPart]> = [
      ["a '..' segment", filePart("../evil.txt", "x")],
      ["a '..' deeper down", filePart("sub/../../evil.txt", "x")],
      ["a percent-encoded '..'", filePart("%2e%2e/evil.txt", "x")],
      ["an absolute path", filePart("/etc/passwd", "x")],
      ["a Windows drive path", filePart("C:\\Users\\me\\evil.txt", "x")],
      ["a backslash", filePart("..\\evil.txt", "x")],
      ["an empty segment", filePart("a//evil.txt", "x")],
      ["a '.' name", filePart(".", "x")],
      ["a NUL byte", { name: "file", encodedFilename: "evil\u0000.txt", content: "x", contentType: "text/plain" }],
      [
        "a control character",
        { name: "file", encodedFilename: "evil\u001b[31m.txt", content: "x", contentType: "text/plain" },
      ],
      ["a name longer than 255 characters", filePart(`${"a".repeat(300)}.txt`, "x")],
    ];
    for (const [what, part] of attacks) {
      it(`refuses ${what}`, async () => {
        const blobsBefore = (await blobs()).length;
        const items = await itemCount();
        const res = await sendForm(`/endpoints/${dir}/content/up/`, [part]);
        expect(res.statusCode).toBe(400);
        expect(res.headers["x-wharf-error"]).toBe("INVALID_ASSET_PATH");
        expect(res.headers["content-type"]).toBe("text/plain");
        expect(await itemCount()).toBe(items);
        expect((await blobs()).length).toBe(blobsBefore);
        expect(await temps()).toEqual([]);
      });
    }

    it("refuses an attack in the second file after a good first one, and keeps neither", async () => {
      const res = await sendForm(`/endpoints/${dir}/content/up`, [
        filePart("good.txt", "fine"),
        filePart("../../evil.txt", "x"),
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("INVALID_ASSET_PATH");
      expect((await get(`/endpoints/${dir}/content/up/good.txt`)).statusCode).toBe(404);
      expect(await blobs()).not.toContain(sha256("fine"));
    });

    it("refuses a file part with no filename where the name is needed", async () => {
      const res = await sendForm(`/endpoints/${dir}/content/up/`, [
        { name: "file", content: "x", contentType: "application/octet-stream" },
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_FILE_NEEDS_NAME");
      expect(res.body).toMatch(/filename/);
    });

    it("refuses two files for the same path, whatever their case", async () => {
      const res = await sendForm(`/endpoints/${dir}/content/up`, [
        filePart("Same.txt", "1"),
        filePart("same.TXT", "2"),
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_DUPLICATE_PATH");
      expect((await get(`/endpoints/${dir}/content/up/same.txt`)).statusCode).toBe(404);
    });

    it("ignores the filename of a single file sent to a file URL (the URL names it)", async () => {
      const res = await sendForm(`/endpoints/${dir}/content/safe.txt`, [filePart("../../../etc/passwd", "ok")]);
      expect(res.statusCode).toBe(201);
      expect(res.json()).toMatchObject({ name: "safe.txt" });
      expect(res.json().parent).toBeUndefined();
    });
  });

  describe("what is not understood gets a 4xx that says what to send", () => {
    it("a form with no file part", async () => {
      const res = await sendForm(`/endpoints/${dir}/content/x.txt`, [{ name: "note", content: "only text" }]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_HAS_NO_FILE");
      expect(res.body).toMatch(/curl -F file=@/);
      expect((await get(`/endpoints/${dir}/content/x.txt`)).statusCode).toBe(404);
    });

    it("an empty form", async () => {
      const res = await t.app.inject({
        method: "POST",
        url: `/endpoints/${dir}/content/x.txt`,
        headers: { ...admin(), "content-type": "multipart/form-data; boundary=abc" },
        payload: "",
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_HAS_NO_FILE");
    });

    it("a truncated form (no closing boundary): nothing half-stored", async () => {
      const form = formBody([filePart("a.txt", "complete"), filePart("b.txt", "cut off in the middle of this part")]);
      const cut = form.payload.subarray(0, form.payload.length - 30);
      const blobsBefore = await blobs();
      const res = await t.app.inject({
        method: "POST",
        url: `/endpoints/${dir}/content/cut/`,
        headers: { ...admin(), "content-type": form.contentType },
        payload: cut,
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_MALFORMED");
      expect(res.body).toMatch(/boundary/);
      expect((await get(`/endpoints/${dir}/content/cut/a.txt`)).statusCode).toBe(404);
      expect(await blobs()).toEqual(blobsBefore);
      expect(await temps()).toEqual([]);
    });

    it("a boundary the body does not use", async () => {
      const form = formBody([filePart("a.txt", "x")]);
      const res = await t.app.inject({
        method: "POST",
        url: `/endpoints/${dir}/content/a.txt`,
        headers: { ...admin(), "content-type": "multipart/form-data; boundary=not-the-one-used" },
        payload: form.payload,
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toMatch(/^FORM_(MALFORMED|HAS_NO_FILE)$/);
      expect((await get(`/endpoints/${dir}/content/a.txt`)).statusCode).toBe(404);
    });

    it("a form sent as a part of the chunked multipart upload protocol", async () => {
      const res = await sendForm(
        `/endpoints/${dir}/content/big.bin?multipart=upload&id=${"a".repeat(32)}&index=0&offset=0&totalSize=1&partSize=1&totalParts=1`,
        [filePart("big.bin", "x")],
      );
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_NOT_A_PART");
      expect(res.body).toMatch(/raw/);
    });

    it("digest headers with several files; verified against a single one", async () => {
      const several = await sendForm(`/endpoints/${dir}/content/d/`, [filePart("a.txt", "a"), filePart("b.txt", "b")], {
        headers: { "x-checksum-sha256": sha256("a") },
      });
      expect(several.statusCode).toBe(400);
      expect(several.headers["x-wharf-error"]).toBe("FORM_DIGESTS_NEED_ONE_FILE");
      expect((await get(`/endpoints/${dir}/content/d/a.txt`)).statusCode).toBe(404);

      const wrong = await sendForm(`/endpoints/${dir}/content/d/a.txt`, [filePart("a.txt", "a")], {
        headers: { "x-checksum-sha256": sha256("b") },
      });
      expect(wrong.statusCode).toBe(400);
      expect(wrong.headers["x-wharf-error"]).toBe("DIGEST_MISMATCH");
      const right = await sendForm(`/endpoints/${dir}/content/d/a.txt`, [filePart("a.txt", "a")], {
        headers: { "x-checksum-sha256": sha256("a") },
      });
      expect(right.statusCode).toBe(201);
    });
  });

  it("refuses a file over WHARF_MAX_UPLOAD_BYTES with 413, keeping none of the form", async () => {
    const blobsBefore = await blobs();
    const res = await sendForm(`/endpoints/${dir}/content/big/`, [
      filePart("small.txt", "small"),
      filePart("big.bin", Buffer.alloc(LIMIT + 1, 7)),
    ]);
    expect(res.statusCode).toBe(413);
    expect(res.headers["x-wharf-error"]).toBe("UPLOAD_TOO_LARGE");
    expect((await get(`/endpoints/${dir}/content/big/small.txt`)).statusCode).toBe(404);
    expect(await blobs()).toEqual(blobsBefore);
    expect(await temps()).toEqual([]);

    const exactly = await sendForm(`/endpoints/${dir}/content/big/`, [filePart("max.bin", Buffer.alloc(LIMIT, 7))]);
    expect(exactly.statusCode).toBe(201);
    expect(exactly.json().size).toBe(LIMIT);
  });

  it("reads a body labelled multipart/form-data with no boundary as the raw file (ProGetAutomation)", async () => {
    const res = await t.app.inject({
      method: "POST",
      url: `/endpoints/${dir}/content/raw.txt`,
      headers: { ...admin(), "content-type": "multipart/form-data" },
      payload: "raw bytes, no form",
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().type).toBe("text/plain; charset=utf-8");
    expect((await get(`/endpoints/${dir}/content/raw.txt`)).body).toBe("raw bytes, no form");
  });

  it("still stores other multipart types as raw files (a .mht page is multipart/related)", async () => {
    const res = await putAsset(t, dir, "page.mht", "--x\r\nnot a form\r\n--x--", {
      "content-type": "multipart/related; boundary=x",
    });
    expect(res.statusCode).toBe(201);
    expect(res.json().type).toBe("multipart/related; boundary=x");
  });

  it("refuses a form upload without credentials (401, a key in a form field is not read) and a view-only key (403)", async () => {
    const anonymous = await sendForm(
      `/endpoints/${dir}/content/a.txt`,
      [{ name: "key", content: t.adminKey }, filePart("a.txt", "x")],
      {
        headers: { "x-apikey": "" },
      },
    );
    expect(anonymous.statusCode).toBe(401);
    const viewer = await createFeedKey(t.database, dir, ["view"]);
    const readOnly = await sendForm(`/endpoints/${dir}/content/a.txt`, [filePart("a.txt", "x")], {
      headers: { "x-apikey": viewer },
    });
    expect(readOnly.statusCode).toBe(403);
    expect((await get(`/endpoints/${dir}/content/a.txt`)).statusCode).toBe(404);
    expect(await blobs()).not.toContain(sha256("x"));
  });
});
