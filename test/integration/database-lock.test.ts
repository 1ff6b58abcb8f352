import path from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { holdWriteLock, type LockHolder } from "../helpers/lock-holder.js";
import { filesUnder } from "../helpers/temp-files.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * Issue 11 section 5: while another process (the CLI, a backup tool) holds the database's write
 * lock, only the requests that must write wait, without blocking the event loop, and then answer
 * 503 DATABASE_BUSY with Retry-After; reads, downloads and /health keep flowing. The lock is held
 * by a real second process (test/helpers/lock-holder.ts).
 */

const BUSY_MESSAGE = "The database is busy (another process holds its write lock); try again shortly.";

const dbFile = (t: TestApp) => path.join(t.dataDir, "wharf.sqlite");

describe("a write lock held by another process", () => {
  let t: TestApp;
  let holder: LockHolder | undefined;
  const admin = () => ({ "x-apikey": t.adminKey });
  const createKey = (displayName: string) =>
    t.app.inject({
      method: "POST",
      url: "/api/api-keys/create",
      headers: admin(),
      payload: { type: "System", systemApis: ["feeds"], displayName },
    });
  const createFeed = (name: string) =>
    t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin(),
      payload: { name, feedType: "universal" },
    });
  /** One field of every item a list route answers. */
  const listed = async (url: string, field: string) =>
    ((await t.app.inject({ url, headers: admin() })).json() as Array<Record<string, unknown>>).map((i) => i[field]);
  let stored: Buffer;

  beforeAll(async () => {
    // Long enough that the reads below surely finish while the writes still wait; short enough for a fast test.
    t = await buildTestApp({ env: { WHARF_DB_BUSY_WAIT_MS: "1000" } });
    const upack = createUpackFixtures(t);
    await upack.createFeed("main");
    stored = (await upack.addVersion("main", { group: "acme", name: "tool", version: "1.0.0" })).bytes;
  });
  afterEach(async () => {
    await holder?.release();
    holder = undefined;
  });
  afterAll(async () => t?.close());

  it("answers /health, reads and downloads at once, without blocking the event loop, while writes wait and then 503", async () => {
    // Never used: its once-a-minute last-used stamp is due, so this read would write.
    const freshKey = await createSystemKey(t.database, ["full-control"]);
    holder = await holdWriteLock(dbFile(t));
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();

    let writesSettled = false;
    const writes = Promise.all([createKey("made under the lock"), createFeed("made-under-lock")]).finally(() => {
      writesSettled = true;
    });
    const health = await t.app.inject({ url: "/health" });
    const read = await t.app.inject({ url: "/api/management/feeds/list", headers: { "x-apikey": freshKey } });
    const download = await t.app.inject({ url: "/upack/main/download/acme/tool/1.0.0", headers: admin() });
    expect(writesSettled).toBe(false);

    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ databaseStatus: "OK", serviceStatus: "OK" });
    expect(read.statusCode, read.body).toBe(200);
    expect(read.json()).toEqual([expect.objectContaining({ name: "main" })]);
    expect(download.statusCode).toBe(200);
    expect(download.rawPayload.equals(stored)).toBe(true);

    for (const refused of await writes) {
      expect(refused.statusCode, refused.body).toBe(503);
      expect(refused.headers["retry-after"]).toBe("1");
      expect(refused.headers["content-type"]).toBe("text/plain");
      expect(refused.headers["x-wharf-error"]).toBe("DATABASE_BUSY");
      expect(refused.body).toBe(BUSY_MESSAGE);
    }
    loop.disable();
    // A busy wait inside SQLite (busy_timeout) would stall the loop for seconds per write.
    expect(loop.max / 1e6).toBeLessThan(500);

    await holder.release();
    // Nothing half-written; the same writes now succeed.
    expect(await listed("/api/api-keys/list", "displayName")).not.toContain("made under the lock");
    expect(await listed("/api/management/feeds/list", "name")).not.toContain("made-under-lock");
    expect((await createKey("made under the lock")).statusCode).toBe(201);
    expect((await createFeed("made-under-lock")).statusCode).toBe(201);
  });

  it("refuses an upload with 503 and keeps neither its rows nor its blob; it succeeds once the lock is gone", async () => {
    const bytes = await buildUpack({ group: "acme", name: "uploaded", version: "2.0.0" });
    const upload = () =>
      t.app.inject({
        method: "PUT",
        url: "/upack/main/upload",
        headers: { ...admin(), "content-type": "application/zip" },
        payload: bytes,
      });
    const blobsBefore = await filesUnder(path.join(t.dataDir, "blobs"));
    holder = await holdWriteLock(dbFile(t));

    const refused = await upload();
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.headers["x-wharf-error"]).toBe("DATABASE_BUSY");
    expect(refused.headers["retry-after"]).toBe("1");
    await holder.release();

    const version = await t.app.inject({ url: "/upack/main/versions?group=acme&name=uploaded", headers: admin() });
    expect(version.json()).toEqual([]);
    expect(await filesUnder(path.join(t.dataDir, "blobs"))).toEqual(blobsBefore);
    expect((await filesUnder(path.join(t.dataDir, "tmp"))).filter((f) => path.basename(f).startsWith("put-"))).toEqual(
      [],
    );
    expect((await upload()).statusCode).toBe(201);
  });
});

describe("a write lock released while a write waits for it", () => {
  let t: TestApp;
  let holder: LockHolder | undefined;

  beforeAll(async () => {
    t = await buildTestApp({ env: { WHARF_DB_BUSY_WAIT_MS: "30000" } });
  });
  afterAll(async () => {
    await holder?.release();
    await t?.close();
  });

  it("lets the write through (201), not 503", async () => {
    holder = await holdWriteLock(dbFile(t));
    let settled = false;
    const write = t.app
      .inject({
        method: "POST",
        url: "/api/api-keys/create",
        headers: { "x-apikey": t.adminKey },
        payload: { type: "System", systemApis: ["feeds"], displayName: "waited for the lock" },
      })
      .finally(() => {
        settled = true;
      });
    // Meanwhile the server keeps answering, and the write is still waiting for the lock.
    expect((await t.app.inject({ url: "/health" })).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);

    await holder.release();
    const res = await write;
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ displayName: "waited for the lock" });
  });
});
