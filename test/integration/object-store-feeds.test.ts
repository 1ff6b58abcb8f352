import { createHash, randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { type IncomingMessage, request } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GC_GRACE_MS } from "../../src/storage/garbage-collector.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { manualClock } from "../helpers/clock.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { azuriteStoreServer, type ObjectStoreServer, swiftStoreServer } from "../helpers/object-store-feeds.js";
import { startAzurite } from "../helpers/azurite.js";
import { type SwiftS3, startSwift, swiftInstalled } from "../helpers/swift.js";
import { filesLeftInTmp } from "../helpers/temp-files.js";
import { buildUpack, readTgz, readZip } from "../helpers/upack-fixtures.js";

/**
 * Feeds on the object stores end to end (issue 15 section 3): a universal feed and an asset
 * directory put on a store through `POST /api/storage?feed=` as a user would, then used through
 * the real APIs; garbage collection on the store; and the store's server stopped mid-download and
 * mid-upload. The same scenarios run on S3 (a real OpenStack Swift) and Azure (azurite), on one
 * machine (SQLite) and on a cluster node (PostgreSQL), where a replaced or deleted item's bytes
 * leave the store only through garbage collection (docs/cluster-mode.md, Blobs).
 */

const MiB = 1024 * 1024;
const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

// Swift takes ~20 s of CPU to start, which starves anything starting beside it on two cores
// (azurite misses its 20 s limit, the app its 10 s onReady limit). So azurite starts now, Swift once
// the Azure scenarios' app is up, and those scenarios run while Swift starts.
const azuriteStarting = startAzurite();
azuriteStarting.catch(() => {}); // awaited, and a failure reported, by the Azure scenarios
let swiftStarting: Promise<SwiftS3> | undefined;
function beginSwift(): Promise<SwiftS3> {
  swiftStarting ??= startSwift();
  swiftStarting.catch(() => {}); // awaited, and a failure reported, by the S3 scenarios
  return swiftStarting;
}

interface GcResult {
  dryRun: boolean;
  unreferenced: number;
  inGracePeriod: number;
  deleted: number;
  bytesFreed: number;
  blobs: { sha256: string; size: number; store: string }[];
  stores: { store: string; error?: string }[];
}

/** Every blob address in the data directory's disk store. */
async function diskBlobs(t: TestApp): Promise<string[]> {
  const entries = await readdir(path.join(t.dataDir, "blobs"), { withFileTypes: true, recursive: true }).catch(
    () => [],
  );
  return entries.filter((entry) => entry.isFile()).map((entry) => entry.name);
}

/** The scenarios on one store; `ready` is called once their app is up. */
function describeObjectStoreFeeds(
  kind: string,
  start: () => Promise<ObjectStoreServer>,
  options: { skip?: boolean; ready?: () => void } = {},
) {
  describe.skipIf(options.skip === true)(`feeds on the ${kind} store`, { timeout: 30_000 }, () => {
    let server: ObjectStoreServer;
    let t: TestApp;
    let port: number;
    const time = manualClock();
    const admin = () => ({ "x-apikey": t.adminKey });
    const get = (url: string, headers: Record<string, string> = {}) =>
      t.app.inject({ method: "GET", url, headers: { ...admin(), ...headers } });
    const upload = (feed: string, bytes: Buffer) =>
      t.app.inject({ method: "PUT", url: `/upack/${feed}/upload`, headers: admin(), payload: bytes });
    /** Object names in the store, reduced to the blob addresses they end with. */
    const storedAddresses = async () => (await server.objectNames()).map((name) => name.split("/").pop() ?? "");
    const gc = async (dryRun: boolean) => {
      const res = await t.app.inject({ method: "POST", url: `/api/storage/gc?dryRun=${dryRun}`, headers: admin() });
      expect(res.statusCode, res.body).toBe(200);
      return res.json() as GcResult;
    };
    /**
     * Expects the blobs at `addresses`, a replaced or deleted item's bytes, to have left the store:
     * at once on one machine; in a cluster, where no node deletes a blob eagerly, kept until two
     * collections a grace period apart (the test's clock) find them unreferenced and delete them.
     */
    const expectGoneFromStore = async (...addresses: string[]) => {
      if (testsRunOnPostgres()) {
        expect(await storedAddresses()).toEqual(expect.arrayContaining(addresses));
        const marked = await gc(false);
        expect(marked).toMatchObject({ unreferenced: addresses.length, inGracePeriod: addresses.length, deleted: 0 });
        time.advance(GC_GRACE_MS);
        const swept = await gc(false);
        expect(swept.blobs.map((blob) => blob.sha256).sort()).toEqual([...addresses].sort());
      }
      const stored = await storedAddresses();
      for (const address of addresses) expect(stored).not.toContain(address);
    };

    beforeAll(async () => {
      server = await start();
      t = await buildTestApp({ clock: time.clock, env: { WHARF_GC_INTERVAL_HOURS: "0" } });
      const create = async (name: string, feedType: string) => {
        const res = await t.app.inject({
          method: "POST",
          url: "/api/management/feeds/create",
          headers: admin(),
          payload: { name, feedType },
        });
        expect(res.statusCode, res.body).toBe(201);
      };
      await create("packages", "universal");
      await create("local", "universal"); // stays on the default disk store
      await create("dropped", "universal");
      await createAssetDirectory(t, "files");
      for (const feed of ["packages", "dropped", "files"]) {
        const res = await t.app.inject({
          method: "POST",
          url: `/api/storage?feed=${feed}`,
          headers: admin(),
          payload: server.storage,
        });
        expect(res.statusCode, res.body).toBe(200);
        expect(res.json()).toMatchObject({ id: server.storage.id });
        expect(res.body).not.toContain(server.secret);
      }
      await t.app.listen({ host: "127.0.0.1", port: 0 });
      port = (t.app.server.address() as AddressInfo).port;
      options.ready?.();
    }, 90_000); // Swift's start may be awaited here
    afterAll(async () => {
      await t?.close();
      await server?.stop();
    }, 20_000);

    it("a universal feed: upload, list, download whole, ranged, as zip and tgz, one file; overwrite and delete", async () => {
      const big = randomBytes(300_000);
      const first = await buildUpack({ name: "tool", version: "1.0.0", files: { "a.txt": "alpha", "bin/big": big } });
      const second = await buildUpack({ name: "tool", version: "2.0.0", files: { "a.txt": "beta" } });
      for (const bytes of [first, second]) {
        const res = await upload("packages", bytes);
        expect(res.statusCode, res.body).toBe(201);
      }

      // The bytes are in the bucket/container under TargetPath, and not on disk.
      const stored = await storedAddresses();
      expect(stored).toEqual(expect.arrayContaining([sha256(first), sha256(second)]));
      expect(await diskBlobs(t)).toEqual([]);

      const packages = (await get("/upack/packages/packages")).json() as { name: string; versions: string[] }[];
      expect(packages.map((p) => [p.name, p.versions])).toEqual([["tool", ["2.0.0", "1.0.0"]]]);

      const whole = await get("/upack/packages/download/tool/1.0.0");
      expect(whole.statusCode).toBe(200);
      expect(whole.rawPayload.equals(first)).toBe(true);
      const part = await get("/upack/packages/download/tool/1.0.0", { range: "bytes=1000-1999" });
      expect(part.statusCode).toBe(206);
      expect(part.headers["content-range"]).toBe(`bytes 1000-1999/${first.length}`);
      expect(part.rawPayload.equals(first.subarray(1000, 2000))).toBe(true);

      const zip = await get("/upack/packages/download/tool/1.0.0?contentOnly=zip");
      expect(zip.statusCode, zip.body).toBe(200);
      const zipped = await readZip(zip.rawPayload);
      expect(zipped.get("a.txt")).toBe("alpha");
      expect(zipped.get("bin/big")).toBe(big.toString("utf8"));
      const tgz = await get("/upack/packages/download/tool/1.0.0?contentOnly=tgz");
      expect(tgz.statusCode, tgz.body).toBe(200);
      expect((await readTgz(tgz.rawPayload)).get("a.txt")).toBe("alpha");
      const file = await get("/upack/packages/download-file/tool/1.0.0?path=package/a.txt");
      expect(file.statusCode, file.body).toBe(200);
      expect(file.body).toBe("alpha");

      // Overwrite: the new bytes are served, the replaced ones leave the store (expectGoneFromStore).
      const replacement = await buildUpack({ name: "tool", version: "2.0.0", files: { "a.txt": "gamma" } });
      const replaced = await upload("packages", replacement);
      expect(replaced.statusCode, replaced.body).toBe(201);
      expect(replaced.json()).toMatchObject({ replaced: true });
      expect((await get("/upack/packages/download/tool/2.0.0")).rawPayload.equals(replacement)).toBe(true);
      expect((await get("/upack/packages/download-file/tool/2.0.0?path=package/a.txt")).body).toBe("gamma");

      // Delete: the version is gone, and so are its bytes.
      const removed = await t.app.inject({
        method: "DELETE",
        url: "/upack/packages/delete/tool/1.0.0",
        headers: admin(),
      });
      expect(removed.statusCode, removed.body).toBe(200);
      expect((await get("/upack/packages/download/tool/1.0.0")).statusCode).toBe(404);
      const versions = (await get("/upack/packages/versions?name=tool")).json() as { version: string }[];
      expect(versions.map((v) => v.version)).toEqual(["2.0.0"]);

      await expectGoneFromStore(sha256(first), sha256(second));
      expect(await storedAddresses()).toContain(sha256(replacement));
      expect(await diskBlobs(t)).toEqual([]);
    });

    it("an asset directory: upload, list, download whole and ranged, overwrite, delete", async () => {
      const content = randomBytes(100_000);
      expect((await putAsset(t, "files", "docs/data.bin", content)).statusCode).toBe(201);
      expect(await storedAddresses()).toContain(sha256(content));

      const listed = (await get("/endpoints/files/dir/docs")).json() as { name: string; size: number }[];
      expect(listed.map((item) => [item.name, item.size])).toEqual([["data.bin", content.length]]);
      const whole = await get("/endpoints/files/content/docs/data.bin");
      expect(whole.statusCode).toBe(200);
      expect(whole.rawPayload.equals(content)).toBe(true);
      const part = await get("/endpoints/files/content/docs/data.bin", { range: "bytes=-500" });
      expect(part.statusCode).toBe(206);
      expect(part.rawPayload.equals(content.subarray(content.length - 500))).toBe(true);

      const replacement = Buffer.from("the second version of the file");
      const overwritten = await putAsset(t, "files", "docs/data.bin", replacement);
      expect(overwritten.statusCode, overwritten.body).toBeLessThan(300);
      expect((await get("/endpoints/files/content/docs/data.bin")).body).toBe(replacement.toString());
      await expectGoneFromStore(sha256(content));
      expect(await storedAddresses()).toContain(sha256(replacement));

      const removed = await t.app.inject({
        method: "DELETE",
        url: "/endpoints/files/content/docs/data.bin",
        headers: admin(),
      });
      expect(removed.statusCode, removed.body).toBeLessThan(300);
      expect((await get("/endpoints/files/content/docs/data.bin")).statusCode).toBe(404);
      await expectGoneFromStore(sha256(replacement));
      expect(await diskBlobs(t)).toEqual([]);
    });

    it("garbage collection deletes what a deleted feed leaves in the store, after its grace period", async () => {
      const storeBytes = async () => {
        const res = await get("/metrics");
        return Number(/^wharf_blob_store_bytes (\d+)$/m.exec(res.body)?.[1]);
      };
      const orphan = await buildUpack({ name: "orphan", version: "1.0.0", files: { "x.bin": randomBytes(50_000) } });
      expect((await upload("dropped", orphan)).statusCode).toBe(201);
      expect(await storedAddresses()).toContain(sha256(orphan));
      const deleted = await t.app.inject({
        method: "DELETE",
        url: "/api/management/feeds/delete/dropped",
        headers: admin(),
      });
      expect(deleted.statusCode, deleted.body).toBe(200);

      // First sight: marked, kept for the grace period.
      const marked = await gc(false);
      expect(marked).toMatchObject({ unreferenced: 1, inGracePeriod: 1, deleted: 0 });
      expect(marked.stores.find((store) => store.store === server.storeKey)).toMatchObject({ store: server.storeKey });
      expect(marked.stores.every((store) => store.error === undefined)).toBe(true);
      expect(await storedAddresses()).toContain(sha256(orphan));

      time.advance(GC_GRACE_MS);
      const garbage = [{ sha256: sha256(orphan), size: orphan.length, store: server.storeKey }];
      const dry = await gc(true);
      expect(dry).toMatchObject({ dryRun: true, deleted: 1, bytesFreed: orphan.length });
      expect(dry.blobs).toEqual(garbage);
      expect(await storedAddresses()).toContain(sha256(orphan));

      const before = await storeBytes();
      const done = await gc(false);
      expect(done).toMatchObject({ dryRun: false, deleted: 1, bytesFreed: orphan.length });
      expect(done.blobs).toEqual(garbage);
      expect(await storedAddresses()).not.toContain(sha256(orphan));
      expect(await storeBytes()).toBe(before - orphan.length);
      // What is still referenced stays and downloads.
      expect((await get("/upack/packages/download/tool/2.0.0")).statusCode).toBe(200);
    });

    it("the store's server stopped mid-download and mid-upload: cut response, clean 503s, other feeds keep working", async () => {
      const large = randomBytes(32 * MiB);
      expect((await putAsset(t, "files", "large.bin", large)).statusCode).toBe(201);
      const local = await buildUpack({ name: "local", version: "1.0.0" });
      expect((await upload("local", local)).statusCode).toBe(201);
      const cold = await buildUpack({ name: "cold", version: "1.0.0", files: { "c.bin": randomBytes(400_000) } });
      expect((await upload("packages", cold)).statusCode).toBe(201);
      const pending = await buildUpack({ name: "pending", version: "1.0.0", files: { "p.bin": randomBytes(2 * MiB) } });

      // A download that has started, and an upload whose body is half sent.
      const download = await startDownload(port, "/endpoints/files/content/large.bin", t.adminKey);
      expect(download.response.statusCode).toBe(200);
      expect(Number(download.response.headers["content-length"])).toBe(large.length);
      const uploading = startUpload(port, "/upack/packages/upload", t.adminKey);
      uploading.request.write(pending.subarray(0, pending.length / 2));

      await server.stop();

      const received = await download.rest();
      expect(received.complete).toBe(false);
      expect(received.bytes).toBeLessThan(large.length);

      uploading.request.end(pending.subarray(pending.length / 2));
      const refused = await uploading.answer;
      expect(refused.status, refused.body).toBe(503);
      expect(refused.body).toMatch(/store|Azure/i);
      expect(refused.body).not.toContain(server.secret);

      // Nothing half-written shows: no version, no spool left behind.
      const versions = await get("/upack/packages/versions?name=pending");
      expect(versions.statusCode === 404 || (versions.json() as unknown[]).length === 0).toBe(true);
      expect(await filesLeftInTmp(t)).toEqual([]);

      // The stopped store's feeds answer a clean 503 with a message.
      for (const url of ["/upack/packages/download/cold/1.0.0", "/endpoints/files/content/large.bin"]) {
        const res = await get(url);
        expect(res.statusCode, `${url}: ${res.body}`).toBe(503);
        expect(res.headers["content-type"]).toBe("text/plain");
        expect(res.body.length).toBeGreaterThan(10);
        expect(res.body).not.toContain(server.secret);
      }

      // The default disk store keeps serving, uploads and downloads.
      const another = await buildUpack({ name: "local", version: "2.0.0" });
      expect((await upload("local", another)).statusCode).toBe(201);
      for (const [version, bytes] of [
        ["1.0.0", local],
        ["2.0.0", another],
      ] as const) {
        const res = await get(`/upack/local/download/local/${version}`);
        expect(res.statusCode).toBe(200);
        expect(res.rawPayload.equals(bytes)).toBe(true);
      }
      expect((await get("/health")).statusCode).toBe(200);
    });
  });
}

/**
 * A GET over real HTTP whose headers and first chunk have arrived, then paused; `rest` reads on to
 * the end or the cut. How it ended is watched from the start: the cut may come before `rest`.
 */
async function startDownload(port: number, url: string, apiKey: string) {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    request({ host: "127.0.0.1", port, path: url, headers: { "x-apikey": apiKey } }, resolve)
      .on("error", reject)
      .end();
  });
  let bytes = 0;
  const ended = new Promise<void>((resolve) => {
    response.once("end", resolve);
    response.once("error", () => resolve());
    response.once("close", resolve);
  });
  await new Promise<void>((resolve) =>
    response.once("data", (chunk: Buffer) => {
      bytes += chunk.length;
      response.pause();
      resolve();
    }),
  );
  response.on("data", (chunk: Buffer) => (bytes += chunk.length));
  return {
    response,
    async rest() {
      response.resume();
      await ended;
      return { bytes, complete: response.complete };
    },
  };
}

/** A PUT over real HTTP with a chunked body the test writes; `answer` is the status and text. */
function startUpload(port: number, url: string, apiKey: string) {
  const sent = request({
    host: "127.0.0.1",
    port,
    path: url,
    method: "PUT",
    headers: { "x-apikey": apiKey, "content-type": "application/zip", "transfer-encoding": "chunked" },
  });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    sent.on("error", (e) => {
      reject(e);
    });
    sent.on("response", (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
  });
  answer.catch(() => {}); // awaited by the caller, perhaps after it settled
  return { request: sent, answer };
}

const swiftSkipped = !swiftInstalled();
describeObjectStoreFeeds("Azure (azurite)", () => azuriteStoreServer(azuriteStarting), {
  ready: () => void (swiftSkipped || beginSwift()),
});
describeObjectStoreFeeds("S3 (OpenStack Swift)", () => swiftStoreServer(beginSwift()), { skip: swiftSkipped });

// The scenarios stop their server themselves; this covers one that failed before.
afterAll(async () => {
  await (await azuriteStarting.catch(() => undefined))?.stop();
  await (await swiftStarting?.catch(() => undefined))?.stop();
}, 20_000);
