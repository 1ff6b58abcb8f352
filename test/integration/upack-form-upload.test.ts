import { createHash } from "node:crypto";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createFeedKey, readOne } from "../helpers/fixtures.js";
import { filePart, formBody, formRequests } from "../helpers/form-data.js";
import { buildUpack, buildZip, createUpackFixtures, readZip } from "../helpers/upack-fixtures.js";

/**
 * Form uploads (`multipart/form-data`, curl -F) of universal packages, on both faces of the area:
 * `/upack/<feed>/upload` (and its other shapes) and pgutil's `/api/packages/<feed>/upload`. Each
 * file part is one package; several are stored all or none.
 */
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const LIMIT = 200_000;

let t: TestApp;
const { admin, sendForm, get, blobs, temps } = formRequests(() => t);
const versionCount = async () =>
  Number((await readOne<{ n: number }>(t.database, "SELECT count(*) AS n FROM upack_versions"))?.n);

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_MAX_UPLOAD_BYTES: String(LIMIT) } });
});
afterAll(async () => t.close());

let feed = "";
let counter = 0;
beforeEach(async () => {
  feed = `forms${++counter}`;
  await createUpackFixtures(t).createFeed(feed);
});

describe("/upack/<feed>/upload with a form", () => {
  it("stores the file part byte for byte, not the form envelope (201, as a raw upload answers)", async () => {
    const bytes = await buildUpack({ group: "acme", name: "app", version: "1.2.0", files: { "a.txt": "A" } });
    const res = await sendForm(`/upack/${feed}/upload`, [filePart("app-1.2.0.upack", bytes)]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toEqual({
      group: "acme",
      name: "app",
      version: "1.2.0",
      sha1: createHash("sha1").update(bytes).digest("hex"),
      sha256: sha256(bytes),
      size: bytes.length,
      replaced: false,
    });
    const back = await get(`/upack/${feed}/download/acme/app/1.2.0`);
    expect(back.statusCode).toBe(200);
    expect(back.rawPayload.equals(bytes)).toBe(true);
  });

  it("answers every upload shape: PUT on the feed URL, upload/<group>/<name>/<version>", async () => {
    const first = await buildUpack({ name: "root-put", version: "1.0.0" });
    expect((await sendForm(`/upack/${feed}`, [filePart("x.upack", first)], { method: "PUT" })).statusCode).toBe(201);
    const second = await buildUpack({ group: "g", name: "by-path", version: "2.0.0" });
    expect((await sendForm(`/upack/${feed}/upload/g/by-path/2.0.0`, [filePart("y.upack", second)])).statusCode).toBe(
      201,
    );
    const mismatch = await sendForm(`/upack/${feed}/upload/g/by-path/3.0.0`, [filePart("y.upack", second)]);
    expect(mismatch.statusCode).toBe(400);
  });

  it("stores several file parts as several packages, answering them all in form order", async () => {
    const one = await buildUpack({ name: "one", version: "1.0.0" });
    const two = await buildUpack({ group: "g", name: "two", version: "2.0.0" });
    const res = await sendForm(`/upack/${feed}/upload`, [filePart("one.upack", one), filePart("two.upack", two)]);
    expect(res.statusCode, res.body).toBe(201);
    expect((res.json() as Array<{ name: string; sha256: string }>).map((r) => [r.name, r.sha256])).toEqual([
      ["one", sha256(one)],
      ["two", sha256(two)],
    ]);
    expect((await get(`/upack/${feed}/download/one/1.0.0`)).rawPayload.equals(one)).toBe(true);
    expect((await get(`/upack/${feed}/download/g/two/2.0.0`)).rawPayload.equals(two)).toBe(true);
  });

  it("turns a plain zip into a package from the form's text fields, as a urlencoded form's", async () => {
    const zip = await buildZip({ "bin/tool": "#!/bin/sh" });
    const res = await sendForm(`/upack/${feed}/upload`, [
      { name: "group", content: "acme/tools" },
      { name: "name", content: "tool" },
      { name: "version", content: "0.3.0" },
      { name: "title", content: "The Tool" },
      { name: "tags", content: "cli" },
      { name: "tags", content: "build" },
      filePart("build.zip", zip, "application/zip"),
    ]);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ group: "acme/tools", name: "tool", version: "0.3.0" });
    const stored = await readZip((await get(`/upack/${feed}/download/acme/tools/tool/0.3.0`)).rawPayload);
    expect(JSON.parse(stored.get("upack.json") ?? "{}")).toMatchObject({ title: "The Tool", tags: ["cli", "build"] });
    expect(stored.get("package/bin/tool")).toBe("#!/bin/sh");
  });

  it("refuses a field that disagrees with the path, and content-b64 beside a file part", async () => {
    const bytes = await buildUpack({ name: "p", version: "1.0.0" });
    const before = await versionCount();
    const conflicting = await sendForm(`/upack/${feed}/upload/p/1.0.0`, [
      { name: "version", content: "2.0.0" },
      filePart("p.upack", bytes),
    ]);
    expect(conflicting.statusCode).toBe(400);
    expect(conflicting.headers["x-wharf-error"]).toBe("CONFLICTING_PARAMETERS");
    const both = await sendForm(`/upack/${feed}/upload`, [
      { name: "content-b64", content: bytes.toString("base64") },
      filePart("p.upack", bytes),
    ]);
    expect(both.statusCode).toBe(400);
    expect(both.headers["x-wharf-error"]).toBe("CONFLICTING_CONTENT");
    expect(await versionCount()).toBe(before);
    expect((await get(`/upack/${feed}/download/p/1.0.0`)).statusCode).toBe(404);
  });

  describe("several packages are stored all or none", () => {
    it("one invalid file: 400 naming it, none stored, no blob or temp file left", async () => {
      const good = await buildUpack({ name: "good", version: "1.0.0" });
      const before = { versions: await versionCount(), blobs: await blobs() };
      const res = await sendForm(`/upack/${feed}/upload`, [
        filePart("good.upack", good),
        filePart("bad.upack", Buffer.from("not a zip")),
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.body).toMatch(/bad\.upack/);
      expect(await versionCount()).toBe(before.versions);
      expect(await blobs()).toEqual(before.blobs);
      expect(await temps()).toEqual([]);
      expect((await get(`/upack/${feed}/download/good/1.0.0`)).statusCode).toBe(404);
    });

    it("the same package twice: 400", async () => {
      const a = await buildUpack({ name: "twice", version: "1.0.0", files: { "a.txt": "a" } });
      const b = await buildUpack({ name: "Twice", version: "1.0.0", files: { "b.txt": "b" } });
      const res = await sendForm(`/upack/${feed}/upload`, [filePart("a.upack", a), filePart("b.upack", b)]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_DUPLICATE_PACKAGE");
      expect((await get(`/upack/${feed}/download/twice/1.0.0`)).statusCode).toBe(404);
    });

    it("a version that exists, without the overwrite privilege: 409, the new one not stored either", async () => {
      const old = await buildUpack({ name: "kept", version: "1.0.0" });
      expect((await sendForm(`/upack/${feed}/upload`, [filePart("old.upack", old)])).statusCode).toBe(201);
      const adder = await createFeedKey(t.database, feed, ["view", "add"]);
      const fresh = await buildUpack({ name: "fresh", version: "1.0.0" });
      const again = await buildUpack({ name: "kept", version: "1.0.0", files: { "new.txt": "new" } });
      const res = await sendForm(
        `/upack/${feed}/upload`,
        [filePart("fresh.upack", fresh), filePart("kept.upack", again)],
        {
          headers: { "x-apikey": adder },
        },
      );
      expect(res.statusCode).toBe(409);
      expect((await get(`/upack/${feed}/download/fresh/1.0.0`)).statusCode).toBe(404);
      expect((await get(`/upack/${feed}/download/kept/1.0.0`)).rawPayload.equals(old)).toBe(true);
    });

    it("a file over WHARF_MAX_UPLOAD_BYTES: 413, none stored, nothing left in the store or tmp/", async () => {
      const small = await buildUpack({ name: "small", version: "1.0.0" });
      const before = await blobs();
      const res = await sendForm(`/upack/${feed}/upload`, [
        filePart("small.upack", small),
        filePart("huge.upack", Buffer.alloc(LIMIT + 1, 1)),
      ]);
      expect(res.statusCode).toBe(413);
      expect(res.headers["x-wharf-error"]).toBe("UPLOAD_TOO_LARGE");
      expect(await blobs()).toEqual(before);
      expect(await temps()).toEqual([]);
      expect((await get(`/upack/${feed}/download/small/1.0.0`)).statusCode).toBe(404);
    });
  });

  describe("what is not understood gets a 4xx that says what to send", () => {
    it("a form with no file part", async () => {
      const res = await sendForm(`/upack/${feed}/upload`, [{ name: "name", content: "x" }]);
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_HAS_NO_FILE");
      expect(res.body).toMatch(/curl -F file=@/);
    });

    it("a truncated form: nothing stored", async () => {
      const bytes = await buildUpack({ name: "cut", version: "1.0.0" });
      const form = formBody([filePart("cut.upack", bytes)]);
      const res = await t.app.inject({
        method: "POST",
        url: `/upack/${feed}/upload`,
        headers: { ...admin(), "content-type": form.contentType },
        payload: form.payload.subarray(0, form.payload.length - 40),
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_MALFORMED");
      expect(await blobs()).not.toContain(sha256(bytes));
      expect(await temps()).toEqual([]);
    });

    it("digest headers with several files", async () => {
      const one = await buildUpack({ name: "d1", version: "1.0.0" });
      const two = await buildUpack({ name: "d2", version: "1.0.0" });
      const res = await sendForm(`/upack/${feed}/upload`, [filePart("1.upack", one), filePart("2.upack", two)], {
        headers: { "x-checksum-sha256": sha256(one) },
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers["x-wharf-error"]).toBe("FORM_DIGESTS_NEED_ONE_FILE");
      expect((await get(`/upack/${feed}/download/d1/1.0.0`)).statusCode).toBe(404);
    });
  });

  it("refuses a form without credentials (401, the form's key field is not read) or with a view-only key (403)", async () => {
    const bytes = await buildUpack({ name: "anon", version: "1.0.0" });
    const anonymous = await sendForm(
      `/upack/${feed}/upload`,
      [{ name: "key", content: t.adminKey }, filePart("a.upack", bytes)],
      {
        headers: { "x-apikey": "" },
      },
    );
    expect(anonymous.statusCode).toBe(401);
    const viewer = await createFeedKey(t.database, feed, ["view"]);
    expect(
      (await sendForm(`/upack/${feed}/upload`, [filePart("a.upack", bytes)], { headers: { "x-apikey": viewer } }))
        .statusCode,
    ).toBe(403);
    expect(await blobs()).not.toContain(sha256(bytes));
  });

  it("still reads JSON, urlencoded and raw bodies as before", async () => {
    const bytes = await buildUpack({ name: "kinds", version: "1.0.0" });
    const json = await t.app.inject({
      method: "POST",
      url: `/upack/${feed}/upload`,
      headers: admin(),
      payload: { "content-b64": bytes.toString("base64") },
    });
    expect(json.statusCode, json.body).toBe(201);
    const raw = await t.app.inject({
      method: "PUT",
      url: `/upack/${feed}/upload`,
      headers: { ...admin(), "content-type": "multipart/form-data" },
      payload: await buildUpack({ name: "kinds", version: "2.0.0" }),
    });
    expect(raw.statusCode, raw.body).toBe(201);
    expect(raw.json()).toMatchObject({ name: "kinds", version: "2.0.0" });
  });
});

describe("pgutil's /api/packages/<feed>/upload with a form", () => {
  it("stores one package and answers its PackageVersionInfo (200); text fields are not package data", async () => {
    const bytes = await buildUpack({ group: "tools", name: "pg", version: "1.0.0" });
    const res = await sendForm(
      `/api/packages/${feed}/upload`,
      [{ name: "name", content: "ignored" }, filePart("pg.upack", bytes)],
      {
        method: "PUT",
      },
    );
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      group: "tools",
      name: "pg",
      version: "1.0.0",
      size: bytes.length,
      sha256: sha256(bytes),
    });
    expect((await get(`/upack/${feed}/download/tools/pg/1.0.0`)).rawPayload.equals(bytes)).toBe(true);
  });

  it("stores several packages all or none, answering a list", async () => {
    const one = await buildUpack({ name: "pg1", version: "1.0.0" });
    const two = await buildUpack({ name: "pg2", version: "1.0.0" });
    const res = await sendForm(`/api/packages/${feed}/upload`, [filePart("1.upack", one), filePart("2.upack", two)]);
    expect(res.statusCode, res.body).toBe(200);
    expect((res.json() as Array<{ name: string }>).map((info) => info.name)).toEqual(["pg1", "pg2"]);

    const three = await buildUpack({ name: "pg3", version: "1.0.0" });
    const bad = await sendForm(`/api/packages/${feed}/upload`, [
      filePart("3.upack", three),
      filePart("4.upack", Buffer.from("PK nonsense")),
    ]);
    expect(bad.statusCode).toBe(400);
    expect((await get(`/upack/${feed}/download/pg3/1.0.0`)).statusCode).toBe(404);
  });

  it("refuses a form with no file part, and one without credentials", async () => {
    const empty = await sendForm(`/api/packages/${feed}/upload`, [{ name: "a", content: "b" }]);
    expect(empty.statusCode).toBe(400);
    expect(empty.headers["x-wharf-error"]).toBe("FORM_HAS_NO_FILE");
    const bytes = await buildUpack({ name: "pg-anon", version: "1.0.0" });
    const anonymous = await sendForm(`/api/packages/${feed}/upload`, [filePart("a.upack", bytes)], {
      headers: { "x-apikey": "" },
    });
    expect(anonymous.statusCode).toBe(401);
  });
});
