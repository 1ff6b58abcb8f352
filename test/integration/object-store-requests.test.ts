import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { startAzurite } from "../helpers/azurite.js";
import { azuriteStoreServer, type ObjectStoreServer, swiftStoreServer } from "../helpers/object-store-feeds.js";
import { startRecordingProxy } from "../helpers/recording-proxy.js";
import { startSwift, swiftInstalled } from "../helpers/swift.js";

type Recorder = Awaited<ReturnType<typeof startRecordingProxy>>;

/** An app whose asset directory "files" is on the store of `storage`, as a user would set it. */
async function appWithAssetsOn(storage: ObjectStoreServer["storage"]) {
  const t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  await createAssetDirectory(t, "files");
  const res = await t.app.inject({
    method: "POST",
    url: "/api/storage?feed=files",
    headers: { "x-apikey": t.adminKey },
    payload: storage,
  });
  expect(res.statusCode, res.body).toBe(200);
  return t;
}

/** The requests `work` makes the store answer, as "METHOD" lines in order. */
async function requestsOf(recorder: Recorder, work: () => Promise<void>) {
  recorder.requests.length = 0;
  await work();
  return recorder.requests.map((r) => r.method);
}

/**
 * What a download from a feed on the S3 store costs the store, counted by a recording proxy in
 * front of a real Swift: one GET, whose answer also gives the blob's size, and no HEAD before it
 * (storage/blob-store.ts SizedReads), through the whole path a request takes (send-blob, the
 * small-blob cache, the union of stores). And what an upload costs: a HEAD before the PUT, as
 * Swift refuses the conditional PUT that would save it (s3-blob-store.ts put).
 */
describe.skipIf(!swiftInstalled())("requests a download or an upload makes to an S3 store", { timeout: 60_000 }, () => {
  let server: ObjectStoreServer;
  let recorder: Recorder;
  let t: TestApp;

  beforeAll(async () => {
    server = await swiftStoreServer(startSwift());
    const swiftUrl = server.storage.properties.CustomServiceUrl ?? "";
    recorder = await startRecordingProxy(swiftUrl);
    // The feed's store reached through the recorder.
    t = await appWithAssetsOn({
      ...server.storage,
      properties: { ...server.storage.properties, CustomServiceUrl: recorder.endpoint },
    });
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

  it("an upload of a new small file is a HEAD and a PUT; of bytes already stored, a HEAD only", async () => {
    const content = randomBytes(3000);
    const created = await requestsOf(recorder, async () => {
      expect((await putAsset(t, "files", "small.bin", content)).statusCode).toBe(201);
    });
    expect(created).toEqual(["HEAD", "PUT"]);
    const again = await requestsOf(recorder, async () => {
      expect((await putAsset(t, "files", "copy.bin", content)).statusCode).toBe(201);
    });
    expect(again).toEqual(["HEAD"]);
  });
});

/**
 * What an upload to a feed on the Azure store costs the store, counted by a recording proxy in
 * front of azurite: a new small file is one Put Blob, on condition that the name is free
 * (azure-blob-store.ts publish); bytes already stored, that refused Put Blob and a look at the size.
 */
describe("requests an upload makes to an Azure store", { timeout: 60_000 }, () => {
  let server: ObjectStoreServer;
  let recorder: Recorder;
  let t: TestApp;

  beforeAll(async () => {
    const azurite = startAzurite();
    server = await azuriteStoreServer(azurite);
    const { port } = await azurite;
    recorder = await startRecordingProxy(`http://127.0.0.1:${port}`);
    const connectionString = server.storage.properties.ConnectionString ?? "";
    t = await appWithAssetsOn({
      ...server.storage,
      properties: {
        ...server.storage.properties,
        ConnectionString: connectionString.replace(`http://127.0.0.1:${port}`, recorder.endpoint),
      },
    });
    // The store's first upload also creates the container (once per store): not a cost per file.
    expect((await putAsset(t, "files", "first.bin", randomBytes(100))).statusCode).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await recorder?.close();
    await server?.stop();
  }, 20_000);

  it("an upload of a new small file is one PUT; of bytes already stored, the refused PUT and a HEAD", async () => {
    const content = randomBytes(3000);
    const created = await requestsOf(recorder, async () => {
      expect((await putAsset(t, "files", "small.bin", content)).statusCode).toBe(201);
    });
    expect(created).toEqual(["PUT"]);
    const again = await requestsOf(recorder, async () => {
      expect((await putAsset(t, "files", "copy.bin", content)).statusCode).toBe(201);
    });
    expect(again).toEqual(["PUT", "HEAD"]);
    const download = await t.app.inject({
      method: "GET",
      url: "/endpoints/files/content/copy.bin",
      headers: { "x-apikey": t.adminKey },
    });
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(content)).toBe(true);
    expect((await server.objectNames()).length).toBe(2);
  });
});
