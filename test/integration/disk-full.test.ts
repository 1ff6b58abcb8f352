import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createAssetDirectory, putAsset } from "../helpers/asset-fixtures.js";
import { rawHeader, rawRequest } from "../helpers/raw-http.js";
import { expectJson, expectText } from "../helpers/responses.js";
import { mountSmallDisk } from "../helpers/small-disk.js";
import { buildZip } from "../helpers/upack-fixtures.js";

/**
 * Issue 11, "A full disk": uploads on a full disk answer 507 with a message saying so (not 500),
 * nothing half-written stays, reads keep working, deletions (the way to free space) work, and
 * uploads work again by themselves once there is room; below a configurable minimum of free space
 * uploads are refused up front, and /health and /metrics warn. On a real, small filesystem.
 */

const MiB = 1024 * 1024;
const small = await mountSmallDisk(40 * MiB);
if ("refused" in small) {
  console.warn(`disk-full.test.ts: the full-disk tests are skipped, a tmpfs cannot be mounted: ${small.refused}`);
}
const disk = "refused" in small ? undefined : small;

afterAll(async () => {
  await disk?.unmount();
});

const admin = (t: TestApp) => ({ "x-apikey": t.adminKey });

async function createFeed(t: TestApp, name: string) {
  const res = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: admin(t),
    payload: { name, feedType: "universal" },
  });
  expectJson(res, 201);
}

const packageOf = (version: string, bytes = 256 * 1024) =>
  buildZip({ "upack.json": JSON.stringify({ name: "pkg", version }), "package/data.bin": randomBytes(bytes) });

const upload = async (t: TestApp, feed: string, body: Buffer) =>
  t.app.inject({
    method: "PUT",
    url: `/upack/${feed}/upload`,
    headers: { ...admin(t), "content-type": "application/zip" },
    payload: body,
  });

interface HealthBody {
  readonly serviceStatus: string;
  readonly disk: { readonly status: string };
}

const health = async (t: TestApp) => expectJson(await t.app.inject({ method: "GET", url: "/health" })) as HealthBody;

/** Free space is measured at most once a second: waits (boundedly) for the server to see the change. */
async function eventually<T>(attempt: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await attempt();
    if (done(value) || Date.now() > deadline) return value;
    await sleep(100);
  }
}

const reservePath = (t: TestApp) => path.join(t.dataDir, "space-reserve");
const exists = (file: string) =>
  fs.stat(file).then(
    () => true,
    () => false,
  );

describe.skipIf(disk === undefined)("a full disk (a real 40 MiB tmpfs)", () => {
  let t: TestApp;
  afterEach(async () => {
    await t?.close();
    await disk?.unfill();
  });

  it("answers uploads 507, keeps reads working, lets deletions through, and recovers once space returns", async () => {
    if (disk === undefined) return;
    t = await buildTestApp({ dataDir: path.join(disk.dir, "full"), env: { WHARF_MIN_FREE_DISK_BYTES: "0" } });
    await createFeed(t, "main");
    await createFeed(t, "other");
    await createAssetDirectory(t, "files");
    const first = await packageOf("1.0.0");
    const second = await packageOf("1.0.1");
    expect((await upload(t, "main", first)).statusCode).toBe(201);
    expect((await upload(t, "main", second)).statusCode).toBe(201);
    expect((await upload(t, "other", await packageOf("3.0.0"))).statusCode).toBe(201);
    const asset = randomBytes(100_000);
    expect((await putAsset(t, "files", "a.bin", asset)).statusCode).toBe(201);
    const partUrl = (index: number) =>
      `/endpoints/files/content/big.bin?multipart=upload&id=${"ab".repeat(16)}&index=${index}` +
      `&offset=${index * 65536}&totalSize=${4 * 65536}&partSize=65536&totalParts=4`;
    expect(
      (await t.app.inject({ method: "POST", url: partUrl(0), headers: admin(t), payload: randomBytes(65536) }))
        .statusCode,
    ).toBe(200);
    // With the log emptied, the database cannot record even a deletion without new space: only
    // the space reserve, made when the app started, can let deletions through.
    expect(await exists(reservePath(t))).toBe(true);
    t.db.pragma("wal_checkpoint(TRUNCATE)");
    await disk.fill();

    for (const res of [
      await upload(t, "main", await packageOf("2.0.0")),
      await putAsset(t, "files", "b.bin", randomBytes(100_000)),
      await t.app.inject({ method: "POST", url: partUrl(1), headers: admin(t), payload: randomBytes(65536) }),
    ]) {
      expectText(res, 507, /^The server's disk is full: .+\. Free space \(delete old versions\) or add storage/);
      expect(res.headers["x-wharf-error"]).toBe("DISK_FULL");
    }
    // Nothing half-written stays behind.
    expect(await fs.readdir(path.join(t.dataDir, "tmp"))).toEqual([]);

    // Deleting a version, a file and a whole feed: 200, not 500. The version's blob goes with it.
    const deleted = await t.app.inject({ method: "DELETE", url: "/upack/main/delete/pkg/1.0.0", headers: admin(t) });
    expect(deleted.statusCode, deleted.body).toBe(200);
    expect(await exists(reservePath(t))).toBe(false);
    expect(
      (await t.app.inject({ method: "GET", url: "/upack/main/download/pkg/1.0.0", headers: admin(t) })).statusCode,
    ).toBe(404);
    expect(
      (await t.app.inject({ method: "DELETE", url: "/endpoints/files/content/a.bin", headers: admin(t) })).statusCode,
    ).toBe(200);
    expect(
      (await t.app.inject({ method: "DELETE", url: "/api/management/feeds/delete/other", headers: admin(t) }))
        .statusCode,
    ).toBe(200);

    // Reads keep working.
    const download = await t.app.inject({ method: "GET", url: "/upack/main/download/pkg/1.0.1", headers: admin(t) });
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(second)).toBe(true);
    expectJson(await t.app.inject({ method: "GET", url: "/upack/main/versions?name=pkg", headers: admin(t) }));
    // The reserve is spent and cannot be made again: uploads stay refused, and /health says why.
    expect(
      (
        await eventually(
          () => health(t),
          (body) => body.disk.status === "Low",
        )
      ).disk,
    ).toMatchObject({
      status: "Low",
      detail: expect.stringContaining("uploads are refused"),
    });
    expect((await upload(t, "main", await packageOf("2.0.0", 1024))).statusCode).toBe(507);

    // Space comes back: uploads work again without a restart, and the reserve is made again.
    await disk.unfill();
    const again = await eventually(
      async () => upload(t, "main", await packageOf("2.0.0")),
      (res) => res.statusCode !== 507,
    );
    expect(again.statusCode, again.body).toBe(201);
    expect(await exists(reservePath(t))).toBe(true);
    expect((await health(t)).disk.status).toBe("OK");
  });

  it("refuses uploads below the minimum of free space, warns in /health and /metrics, and recovers by itself", async () => {
    if (disk === undefined) return;
    t = await buildTestApp({
      dataDir: path.join(disk.dir, "low"),
      env: { WHARF_MIN_FREE_DISK_BYTES: String(8 * MiB) },
    });
    await createFeed(t, "main");
    const kept = await packageOf("1.0.0");
    expect((await upload(t, "main", kept)).statusCode).toBe(201);
    await disk.fill(4 * MiB);

    const refused = await eventually(
      async () => upload(t, "main", await packageOf("2.0.0")),
      (res) => res.statusCode === 507,
    );
    expectText(
      refused,
      507,
      /^The server's disk is nearly full \(\d+ bytes free, uploads need at least 8388608, WHARF_MIN_FREE_DISK_BYTES\)/,
    );
    expect(refused.headers["x-wharf-error"]).toBe("DISK_SPACE_LOW");
    expect((await health(t)).disk).toMatchObject({ status: "Low", thresholdBytes: 8 * MiB });
    const metrics = await t.app.inject({ method: "GET", url: "/metrics", headers: admin(t) });
    expect(metrics.body).toMatch(/^wharf_disk_low 1$/m);
    expect(metrics.body).toMatch(/^wharf_disk_free_threshold_bytes 8388608$/m);
    const free = Number(/^wharf_disk_free_bytes (\d+)$/m.exec(metrics.body)?.[1]);
    expect(free).toBeGreaterThan(0);
    expect(free).toBeLessThan(8 * MiB);
    // Reads are not affected.
    const download = await t.app.inject({ method: "GET", url: "/upack/main/download/pkg/1.0.0", headers: admin(t) });
    expect(download.rawPayload.equals(kept)).toBe(true);

    await disk.unfill();
    const again = await eventually(
      async () => upload(t, "main", await packageOf("2.0.0")),
      (res) => res.statusCode !== 507,
    );
    expect(again.statusCode, again.body).toBe(201);
    const after = await t.app.inject({ method: "GET", url: "/metrics", headers: admin(t) });
    expect(after.body).toMatch(/^wharf_disk_low 0$/m);
  });
});

describe("a minimum of free space the disk does not have (any machine)", () => {
  let t: TestApp;
  beforeAll(async () => {
    // More than any disk has: every upload is below the minimum.
    t = await buildTestApp({ env: { WHARF_MIN_FREE_DISK_BYTES: String(2 ** 52) } });
    await createFeed(t, "main");
    await createAssetDirectory(t, "files");
  });
  afterAll(async () => t.close());

  it("refuses every kind of upload with 507 before reading its body", async () => {
    await t.app.listen({ port: 0, host: "127.0.0.1" });
    const port = (t.app.server.address() as { port: number }).port;
    for (const target of [
      "PUT /upack/main/upload",
      "PUT /api/packages/main/upload",
      "POST /endpoints/files/content/x.bin",
      "POST /endpoints/files/content/x.bin?multipart=upload&id=0123456789abcdef0123456789abcdef&index=0&offset=0&totalSize=100&partSize=100&totalParts=1",
      "POST /endpoints/files/import",
    ]) {
      // A 100 MiB body is announced and none of it is sent: the answer comes all the same.
      const res = await rawRequest(
        port,
        `${target} HTTP/1.1\r\nHost: wharf\r\nX-ApiKey: ${t.adminKey}\r\nContent-Type: application/octet-stream\r\n` +
          `Content-Length: ${100 * MiB}\r\n\r\n`,
      );
      expect(res.status, `${target}: ${res.body}`).toBe(507);
      expect(rawHeader(res.headers, "X-Wharf-Error")).toBe("DISK_SPACE_LOW");
      expect(rawHeader(res.headers, "Connection")).toBe("close");
      expect(res.body).toMatch(/^The server's disk is nearly full/);
    }
  });

  it("still asks for credentials first", async () => {
    const res = await t.app.inject({ method: "PUT", url: "/upack/main/upload", payload: "x" });
    expect(res.statusCode).toBe(401);
  });

  it("keeps reads working and says Low in /health (still 200) and /metrics", async () => {
    const body = await health(t);
    expect(body.serviceStatus).toBe("OK");
    expect(body.disk).toMatchObject({ status: "Low", thresholdBytes: 2 ** 52, freeBytes: expect.any(Number) });
    const metrics = await t.app.inject({ method: "GET", url: "/metrics", headers: admin(t) });
    expect(metrics.body).toMatch(/^wharf_disk_low 1$/m);
    expectJson(await t.app.inject({ method: "GET", url: "/api/management/feeds/list", headers: admin(t) }));
  });
});
