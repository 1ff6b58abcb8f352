import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GC_GRACE_MS } from "../../src/storage/garbage-collector.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { manualClock } from "../helpers/clock.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Blob garbage collection (issue 15 section 5) through the real APIs: what deleting feeds,
 * versions and asset files leaves unreferenced is listed by a dry run, freed by a collection once
 * its grace period is over, and the rest keeps downloading; dedupe across feeds is respected.
 */

let t: TestApp;
const time = manualClock();
const admin = () => ({ "x-apikey": t.adminKey });

beforeAll(async () => {
  t = await buildTestApp({ clock: time.clock, env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  const fixtures = createUpackFixtures(t);
  await fixtures.createFeed("first");
  await fixtures.createFeed("second");
  await fixtures.createFeed("race");
  await createAssetDirectory(t, "site");
  await createAssetDirectory(t, "old-site");
});
afterAll(async () => t.close());

interface GcResult {
  dryRun: boolean;
  examined: number;
  unreferenced: number;
  inGracePeriod: number;
  deleted: number;
  bytesFreed: number;
  blobs: { sha256: string; size: number }[];
}

async function gc(dryRun: boolean): Promise<GcResult> {
  const res = await t.app.inject({ method: "POST", url: `/api/storage/gc?dryRun=${dryRun}`, headers: admin() });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as GcResult;
}

async function upload(feed: string, bytes: Buffer) {
  const res = await t.app.inject({ method: "PUT", url: `/upack/${feed}/upload`, headers: admin(), payload: bytes });
  expect(res.statusCode, res.body).toBe(201);
}

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const blobFile = (address: string) => path.join(t.dataDir, "blobs", address.slice(0, 2), address.slice(2, 4), address);

async function storeBytes(): Promise<number> {
  const res = await t.app.inject({ method: "GET", url: "/metrics", headers: admin() });
  return Number(/^wharf_blob_store_bytes (\d+)$/m.exec(res.body)?.[1]);
}

async function download(feed: string, name: string, version: string) {
  return t.app.inject({ method: "GET", url: `/upack/${feed}/download/${name}/${version}`, headers: admin() });
}

describe("garbage collection", () => {
  // The disk store's story: blob files under the data directory, and a deleted version's or asset
  // file's blob freed at once. A cluster node deletes no blob eagerly (docs/cluster-mode.md, Blobs):
  // there every such blob waits for collection, so the counts below differ by design.
  it.skipIf(testsRunOnPostgres())(
    "frees what deleted feeds, versions and asset files leave, after the grace period; dedupe across feeds holds",
    async () => {
      const shared = await buildUpack({ name: "shared", version: "1.0.0" });
      const onlyFirst = await buildUpack({ name: "only-first", version: "1.0.0" });
      const replaced = await buildUpack({ name: "kept", version: "1.0.0" });
      const kept = await buildUpack({ name: "kept", version: "2.0.0" });
      await upload("first", shared);
      await upload("second", shared);
      await upload("first", onlyFirst);
      await upload("second", replaced);
      await upload("second", kept);
      expect((await putAsset(t, "site", "docs/old.txt", "asset garbage")).statusCode).toBe(201);
      expect((await putAsset(t, "site", "docs/new.txt", "asset kept")).statusCode).toBe(201);
      expect((await putAsset(t, "old-site", "a/b.txt", "asset of a deleted directory")).statusCode).toBe(201);

      // Nothing is garbage yet.
      expect(await gc(true)).toMatchObject({ examined: 7, unreferenced: 0, deleted: 0, bytesFreed: 0 });

      // A whole feed, an asset directory, one version and one asset file go. The version and the file
      // give their bytes back at once (their deletions discard them); the feeds leave garbage.
      const del = (url: string) => t.app.inject({ method: "DELETE", url, headers: admin() });
      expect((await del("/api/management/feeds/delete/old-site")).statusCode).toBe(200);
      expect(
        (await t.app.inject({ method: "DELETE", url: "/api/management/feeds/delete/first", headers: admin() }))
          .statusCode,
      ).toBe(200);
      expect(
        (await t.app.inject({ method: "DELETE", url: "/upack/second/delete/kept/1.0.0", headers: admin() })).statusCode,
      ).toBe(200);
      expect(
        (await t.app.inject({ method: "POST", url: "/endpoints/site/delete/docs/old.txt", headers: admin() }))
          .statusCode,
      ).toBe(200);
      expect(existsSync(blobFile(sha256(replaced)))).toBe(false);
      expect(existsSync(blobFile(sha256("asset garbage")))).toBe(false);
      const garbage = [onlyFirst, Buffer.from("asset of a deleted directory")]
        .map((bytes) => ({ sha256: sha256(bytes), size: bytes.length, store: "disk" }))
        .sort((a, b) => (a.sha256 < b.sha256 ? -1 : 1));
      const garbageBytes = garbage.reduce((sum, blob) => sum + blob.size, 0);

      // First sight: marked, within the grace period, nothing listed nor deleted.
      expect(await gc(false)).toMatchObject({ examined: 5, unreferenced: 2, inGracePeriod: 2, deleted: 0 });
      for (const blob of garbage) expect(existsSync(blobFile(blob.sha256))).toBe(true);

      time.advance(GC_GRACE_MS);
      const dry = await gc(true);
      expect(dry).toMatchObject({
        dryRun: true,
        unreferenced: 2,
        inGracePeriod: 0,
        deleted: 2,
        bytesFreed: garbageBytes,
      });
      expect(dry.blobs).toEqual(garbage);
      for (const blob of garbage) expect(existsSync(blobFile(blob.sha256))).toBe(true);

      const before = await storeBytes();
      const done = await gc(false);
      expect(done).toMatchObject({ dryRun: false, deleted: 2, bytesFreed: garbageBytes });
      expect(done.blobs).toEqual(garbage);
      for (const blob of garbage) expect(existsSync(blobFile(blob.sha256))).toBe(false);
      expect(await storeBytes()).toBe(before - garbageBytes);

      // The rest still downloads: the shared blob stayed for the second feed.
      const sharedDownload = await download("second", "shared", "1.0.0");
      expect(sharedDownload.statusCode).toBe(200);
      expect(sharedDownload.rawPayload.equals(shared)).toBe(true);
      expect((await download("second", "kept", "2.0.0")).rawPayload.equals(kept)).toBe(true);
      const asset = await t.app.inject({
        method: "GET",
        url: "/endpoints/site/content/docs/new.txt",
        headers: admin(),
      });
      expect(asset.body).toBe("asset kept");

      // The second feed goes too: the next collections free the shared bytes.
      expect(
        (await t.app.inject({ method: "DELETE", url: "/api/management/feeds/delete/second", headers: admin() }))
          .statusCode,
      ).toBe(200);
      expect(await gc(false)).toMatchObject({ unreferenced: 2, deleted: 0 });
      time.advance(GC_GRACE_MS);
      const last = await gc(false);
      expect(last.blobs.map((blob) => blob.sha256).sort()).toEqual([sha256(shared), sha256(kept)].sort());
      expect(existsSync(blobFile(sha256(shared)))).toBe(false);
      expect(await gc(true)).toMatchObject({ examined: 1, unreferenced: 0, deleted: 0 });
    },
  );

  it("never loses a blob that an upload of the same bytes takes while collections run", async () => {
    const bytes = await buildUpack({ name: "raced", version: "1.0.0" });
    let collections = 0;
    let stop = false;
    // Collections back to back, every one past the grace period of the one before.
    const collecting = (async () => {
      while (!stop) {
        time.advance(GC_GRACE_MS);
        await gc(false);
        collections++;
      }
    })();
    for (let round = 0; round < 25; round++) {
      await upload("race", bytes);
      // Referenced now: whatever the collector decided meanwhile, the bytes are there.
      const res = await download("race", "raced", "1.0.0");
      expect(res.statusCode).toBe(200);
      expect(res.rawPayload.equals(bytes)).toBe(true);
      const removed = await t.app.inject({ method: "DELETE", url: "/upack/race/delete/raced/1.0.0", headers: admin() });
      expect(removed.statusCode).toBe(200);
    }
    stop = true;
    await collecting;
    expect(collections).toBeGreaterThan(0);
    // 25 rounds against back-to-back collections: on a cluster node each is several round trips
    // to PostgreSQL and the object store.
  }, 120_000);

  it("admin only; a bad dryRun is a 400", async () => {
    expect((await t.app.inject({ method: "POST", url: "/api/storage/gc" })).statusCode).toBe(401);
    const bad = await t.app.inject({ method: "POST", url: "/api/storage/gc?dryRun=maybe", headers: admin() });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("dryRun");
  });
});
