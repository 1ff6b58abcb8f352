import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { startRecordingProxy } from "../helpers/recording-proxy.js";
import { type ObjectStoreServer, swiftStoreServer } from "../helpers/object-store-feeds.js";
import { startSwift, swiftInstalled } from "../helpers/swift.js";

/**
 * What a download from a feed on the S3 store costs the store, counted by a recording proxy in
 * front of a real Swift: one GET, whose answer also gives the blob's size, and no HEAD before it
 * (storage/blob-store.ts SizedReads), through the whole path a request takes (send-blob, the
 * small-blob cache, the union of stores).
 */
describe.skipIf(!swiftInstalled())("requests a download makes to an object store", { timeout: 60_000 }, () => {
  let server: ObjectStoreServer;
  let recorder: Awaited<ReturnType<typeof startRecordingProxy>>;
  let t: TestApp;

  beforeAll(async () => {
    server = await swiftStoreServer(startSwift());
    const swiftUrl = server.storage.properties.CustomServiceUrl ?? "";
    recorder = await startRecordingProxy(swiftUrl);
    t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
    await createAssetDirectory(t, "files");
    const res = await t.app.inject({
      method: "POST",
      url: "/api/storage?feed=files",
      headers: { "x-apikey": t.adminKey },
      // The feed's store reached through the recorder.
      payload: { ...server.storage, properties: { ...server.storage.properties, CustomServiceUrl: recorder.endpoint } },
    });
    expect(res.statusCode, res.body).toBe(200);
  }, 90_000);
  afterAll(async () => {
    await t?.close();
    await recorder?.close();
    await server?.stop();
  }, 20_000);

  it("a download, whole or ranged, is one GET with no HEAD first, also once the store forgot the blob's size", async () => {
    // Past the small-blob cache (256 KiB), so the download streams from the store.
    const content = randomBytes(400_000);
    expect((await putAsset(t, "files", "data.bin", content)).statusCode).toBe(201);
    // The store remembers a size it learnt for 2 s (s3-blob-store.ts STAT_REMEMBERED_MS): past that,
    // a look-up before the read would show as a HEAD.
    await new Promise((resolve) => setTimeout(resolve, 2_200));
    recorder.requests.length = 0;
    const headers = { "x-apikey": t.adminKey };
    const whole = await t.app.inject({ method: "GET", url: "/endpoints/files/content/data.bin", headers });
    expect(whole.statusCode).toBe(200);
    expect(whole.rawPayload.equals(content)).toBe(true);
    const part = await t.app.inject({
      method: "GET",
      url: "/endpoints/files/content/data.bin",
      headers: { ...headers, range: "bytes=1000-1999" },
    });
    expect(part.statusCode).toBe(206);
    expect(part.rawPayload.equals(content.subarray(1000, 2000))).toBe(true);
    expect(recorder.requests.map((r) => r.method)).toEqual(["GET", "GET"]);
    expect(recorder.requests[1]?.url).toContain("/blobs/");
  });
});
