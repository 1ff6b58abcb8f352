import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FLUSH_INTERVAL_MS } from "../../src/areas/upack/download/counts.js";
import { openDatabase } from "../../src/storage/database.js";
import { isPostgres } from "../../src/storage/metadata-db.js";
import { buildTestApp, type TestApp, writeFromOutside } from "../helpers/app.js";
import { readOne } from "../helpers/fixtures.js";
import { buildUpack, createUpackFixtures, type UpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * What makes small downloads fast must not make them wrong: download lookups kept in memory
 * (download/cache.ts) follow every change, from here or another connection; small blobs served
 * from memory (blob-cache.ts) are the stored bytes, ranges included; download counts are batched
 * (download/counts.ts), written within about a second, before any listing shows them and when
 * the app closes.
 */

describe("universal feed downloads served from memory", () => {
  let t: TestApp;
  let u: UpackFixtures;
  const admin = () => ({ "x-apikey": t.adminKey });
  const get = (url: string, headers: Record<string, string> = {}) =>
    t.app.inject({ url, headers: { ...admin(), ...headers } });
  const outside = (sql: string, ...params: unknown[]) => writeFromOutside(t, sql, ...params);
  /** The counts as stored, read without flushing first (unlike UpackFixtures.downloadsOf). */
  const storedCount = async (versionId: number) =>
    (await readOne<{ downloads: number }>(t.database, "SELECT downloads FROM upack_versions WHERE id = ?", versionId))
      ?.downloads;

  beforeAll(async () => {
    t = await buildTestApp();
    u = createUpackFixtures(t);
    await u.createFeed("main");
  });
  afterAll(async () => t?.close());

  it("follows uploads, replacements and deletes made through the API", async () => {
    const v1 = await buildUpack({ name: "lib", version: "1.0.0", files: { "a.txt": "first" } });
    const upload = (bytes: Buffer) =>
      t.app.inject({ method: "PUT", url: "/upack/main/upload", headers: admin(), payload: bytes });
    expect((await upload(v1)).statusCode).toBe(201);
    expect((await get("/upack/main/download/lib?latest")).rawPayload.equals(v1)).toBe(true);
    expect((await get("/upack/main/download/lib/1.0.0")).rawPayload.equals(v1)).toBe(true);

    const v2 = await buildUpack({ name: "lib", version: "2.0.0" });
    expect((await upload(v2)).statusCode).toBe(201);
    expect((await get("/upack/main/download/lib?latest")).rawPayload.equals(v2)).toBe(true);

    const replaced = await buildUpack({ name: "lib", version: "1.0.0", files: { "a.txt": "replaced" } });
    expect((await upload(replaced)).statusCode).toBe(201); // the admin key may overwrite
    const again = await get("/upack/main/download/lib/1.0.0");
    expect(again.rawPayload.equals(replaced)).toBe(true);

    const deleted = await t.app.inject({ method: "DELETE", url: "/upack/main/delete/lib/1.0.0", headers: admin() });
    expect(deleted.statusCode).toBe(200);
    expect((await get("/upack/main/download/lib/1.0.0")).statusCode).toBe(404);
  });

  it("follows a version deleted or moved by another connection", async () => {
    const added = await u.addVersion("main", { name: "moved", version: "1.0.0" });
    expect((await get("/upack/main/download/moved/1.0.0")).statusCode).toBe(200);
    await outside("UPDATE upack_versions SET version = '9.0.0', version_key = '9.0.0' WHERE id = ?", added.versionId);
    expect((await get("/upack/main/download/moved/1.0.0")).statusCode).toBe(404);
    expect((await get("/upack/main/download/moved/9.0.0")).statusCode).toBe(200);
    await outside("DELETE FROM upack_versions WHERE id = ?", added.versionId);
    expect((await get("/upack/main/download/moved/9.0.0")).statusCode).toBe(404);
  });

  it("serves the stored bytes whole and in ranges, from memory as from disk", async () => {
    const added = await u.addVersion("main", { name: "bytes", version: "1.0.0", files: { "x.bin": "0123456789" } });
    const url = "/upack/main/download/bytes/1.0.0";
    for (let i = 0; i < 2; i++) expect((await get(url)).rawPayload.equals(added.bytes)).toBe(true);
    const part = await get(url, { range: "bytes=5-14" });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload.equals(added.bytes.subarray(5, 15))).toBe(true);
    const head = await t.app.inject({ method: "HEAD", url, headers: admin() });
    expect(head.headers["content-length"]).toBe(String(added.bytes.length));
    expect(head.rawPayload.length).toBe(0);
  });

  it("writes download counts in one batch within about a second, and before a listing shows them", async () => {
    const added = await u.addVersion("main", { name: "counted", version: "1.0.0" });
    for (let i = 0; i < 3; i++) expect((await get("/upack/main/download/counted/1.0.0")).statusCode).toBe(200);
    expect(await storedCount(added.versionId)).toBe(0); // pending, not yet written
    const listed = (await get("/upack/main/versions?name=counted&version=1.0.0")).json() as { downloads: string };
    expect(listed.downloads).toBe("3");
    expect(await storedCount(added.versionId)).toBe(3);

    await get("/upack/main/download/counted/1.0.0");
    expect(await storedCount(added.versionId)).toBe(3);
    const deadline = Date.now() + FLUSH_INTERVAL_MS * 3;
    while ((await storedCount(added.versionId)) !== 4 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await storedCount(added.versionId)).toBe(4);
  });

  it("drops the counts of a version deleted before they were written, leaving its package's alone", async () => {
    const kept = await u.addVersion("main", { name: "pair", version: "1.0.0" });
    const gone = await u.addVersion("main", { name: "pair", version: "2.0.0" });
    await get("/upack/main/download/pair/1.0.0");
    await get("/upack/main/download/pair/2.0.0");
    await outside("DELETE FROM upack_versions WHERE id = ?", gone.versionId);
    expect(await u.downloadsOf("main", "", "pair", "1.0.0")).toEqual({ version: 1, package: 1 });
    expect(await storedCount(kept.versionId)).toBe(1);
  });
});

describe("batched download counts at shutdown", () => {
  it("are written when the app closes", async () => {
    const t = await buildTestApp();
    try {
      const u = createUpackFixtures(t);
      await u.createFeed("main");
      const added = await u.addVersion("main", { name: "last", version: "1.0.0" });
      for (let i = 0; i < 2; i++) {
        const res = await t.app.inject({
          url: "/upack/main/download/last/1.0.0",
          headers: { "x-apikey": t.adminKey },
        });
        expect(res.statusCode).toBe(200);
      }
      await t.app.close();
      expect(await storedAfterClose(t, "SELECT downloads FROM upack_versions WHERE id = ?", added.versionId)).toEqual({
        downloads: 2,
      });
    } finally {
      await t.close();
    }
  });
});

/**
 * One row read as the next process would see it once the app has closed: SQLite's file closed and
 * opened again; on PostgreSQL through the pool, which the test app closes after the app.
 */
async function storedAfterClose(t: TestApp, sql: string, ...params: unknown[]): Promise<unknown> {
  if (isPostgres(t.database)) return readOne(t.database, sql, ...params);
  t.database.close();
  const reopened = openDatabase(path.join(t.dataDir, "wharf.sqlite"));
  try {
    return reopened.prepare(sql).get(...params);
  } finally {
    reopened.close();
  }
}
