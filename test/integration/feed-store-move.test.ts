import { createHash, randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, unlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { storageCommand } from "../../src/cli/storage.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { createAzureBlobStore } from "../../src/storage/azure-blob-store.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import type { FeedStoreMoveHooks } from "../../src/storage/feed-store-move.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { createObjectStore } from "../../src/storage/store-factory.js";
import { DomainError } from "../../src/domain/errors.js";
import { AZURITE_KEY, type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Moving a feed between package stores (issue 15 section 4): a universal feed and an asset
 * directory go from disk to an Azure container (Azurite) and back; every blob ends in the target
 * and leaves the source unless another feed there references it; the feed serves downloads during
 * the move; "new uploads only" copies nothing; a move stopped in the middle resumes at the next
 * start; a failed move is reported and retried; the API and the CLI report it without a secret.
 */

let azurite: AzuriteServer;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  azurite = await startAzurite();
}, 30_000);
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await azurite?.stop();
});

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

interface Server {
  readonly app: FastifyInstance;
  readonly db: Db;
  readonly config: Config;
  readonly dataDir: string;
  readonly key: string;
  /** Closes the app and its database; the data directory stays (for a restart). */
  close(): Promise<void>;
}

/** An app on `dataDir` (new when absent), closed after the test unless closed before. */
async function startServer(
  options: { dataDir?: string; hooks?: FeedStoreMoveHooks; createObjectStore?: typeof createObjectStore } = {},
): Promise<Server> {
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), "wharf-move-")));
  if (options.dataDir === undefined) cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const key = "move-test-admin-key-0123456789";
  const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", WHARF_GC_INTERVAL_HOURS: "0" });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  bootstrapAdminKey(db, dataDir, key, systemClock);
  const app = await buildApp(config, {
    db,
    blobs: createFileBlobStore(dataDir),
    logger: false,
    ...(options.hooks ? { feedStoreMoveHooks: options.hooks } : {}),
    ...(options.createObjectStore ? { createObjectStore: options.createObjectStore } : {}),
  });
  await app.ready();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
    db.close();
  };
  cleanups.push(close);
  return { app, db, config, dataDir, key, close };
}

/** A container of its own on Azurite: the storage setting, its key and a store to look into it. */
async function azureContainer() {
  const containerName = `move-${randomUUID()}`;
  const storage = {
    id: "azure",
    properties: { ConnectionString: azurite.connectionString(), ContainerName: containerName, TargetPath: "wharf" },
  };
  const tempDir = await mkdtemp(path.join(os.tmpdir(), "wharf-move-spool-"));
  cleanups.push(() => rm(tempDir, { recursive: true, force: true }));
  const store: BlobStore = createAzureBlobStore({
    connectionString: azurite.connectionString(),
    containerName,
    targetPath: "wharf",
    tempDir,
  });
  const key = `azure:http://127.0.0.1:${azurite.port}/devstoreaccount1/${containerName}/wharf`;
  return { storage, store, key };
}

const DISK = { id: "disk", properties: {} };

async function api(s: Server, method: "GET" | "POST", url: string, payload?: object) {
  return s.app.inject({ method, url, headers: { "x-apikey": s.key }, ...(payload ? { payload } : {}) });
}

async function createFeed(s: Server, name: string, feedType: "universal" | "asset") {
  const res = await api(s, "POST", "/api/management/feeds/create", { name, feedType });
  expect(res.statusCode).toBe(201);
}

/** Uploads `count` packages to a universal feed through the API; their bytes by version. */
async function uploadPackages(s: Server, feed: string, count: number, first = 1) {
  const uploaded = new Map<string, Buffer>();
  for (let i = first; i < first + count; i++) {
    const version = `1.0.${i}`;
    const bytes = await buildUpack({ name: "tool", version, files: { "data.bin": randomBytes(2000 + i) } });
    const res = await s.app.inject({
      method: "PUT",
      url: `/upack/${feed}/upload`,
      headers: { "x-apikey": s.key },
      payload: bytes,
    });
    expect(res.statusCode).toBe(201);
    uploaded.set(version, bytes);
  }
  return uploaded;
}

async function uploadAssets(s: Server, dir: string, files: Record<string, Buffer>) {
  for (const [file, bytes] of Object.entries(files)) {
    const res = await s.app.inject({
      method: "POST",
      url: `/endpoints/${dir}/content/${file}`,
      headers: { "x-apikey": s.key },
      payload: bytes,
    });
    expect(res.statusCode).toBe(201);
  }
}

async function expectPackages(s: Server, feed: string, packages: Map<string, Buffer>) {
  for (const [version, bytes] of packages) {
    const res = await s.app.inject({
      method: "GET",
      url: `/upack/${feed}/download/tool/${version}`,
      headers: { "x-apikey": s.key },
    });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

async function expectAssets(s: Server, dir: string, files: Record<string, Buffer>) {
  for (const [file, bytes] of Object.entries(files)) {
    const res = await s.app.inject({
      method: "GET",
      url: `/endpoints/${dir}/content/${file}`,
      headers: { "x-apikey": s.key },
    });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

const onDisk = (s: Server, address: string) =>
  existsSync(path.join(s.dataDir, "blobs", address.slice(0, 2), address.slice(2, 4), address));

/** Posts the storage setting; answers the response. */
function setStorage(s: Server, feed: string, storage: object, move?: boolean) {
  const query = move === undefined ? "" : `&move=${move}`;
  return api(s, "POST", `/api/storage?feed=${feed}${query}`, storage);
}

/** Polls GET /api/storage/move until the move is done or failed; answers its state. */
async function settledMove(s: Server, feed: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await api(s, "GET", `/api/storage/move?feed=${feed}`);
    expect(res.statusCode).toBe(200);
    const state = res.json<Record<string, unknown>>();
    if (state.state === "done" || state.state === "failed") return state;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("moving a feed between package stores", { timeout: 60_000 }, () => {
  it("moves a universal feed and an asset directory to Azure and back, serving downloads throughout", async () => {
    const downloadsDuringMove: Array<Promise<void>> = [];
    const hooks: FeedStoreMoveHooks = {
      // Mid-copy: some blobs in the new store, some still in the old one.
      afterBlob: async (_feedId, phase, done) => {
        if (phase === "copying" && done === 2) {
          downloadsDuringMove.push(expectPackages(s, "pkgs", packages), expectAssets(s, "files", assets));
          await Promise.all(downloadsDuringMove);
        }
      },
    };
    const s = await startServer({ hooks });
    const azure = await azureContainer();
    await createFeed(s, "pkgs", "universal");
    await createFeed(s, "files", "asset");
    const packages = await uploadPackages(s, "pkgs", 4);
    const assets = {
      "a/one.bin": randomBytes(3000),
      "two.txt": Buffer.from("two"),
      "b/c/three.bin": randomBytes(5000),
    };
    await uploadAssets(s, "files", assets);
    const packageBlobs = [...packages.values()].map(sha256);
    const assetBlobs = Object.values(assets).map(sha256);
    expect(packageBlobs.every((address) => onDisk(s, address))).toBe(true);

    const moved = await setStorage(s, "pkgs", azure.storage);
    expect(moved.statusCode).toBe(200);
    expect(moved.headers["x-wharf-store-move"]).toBe("copying");
    const movedAssets = await setStorage(s, "files", azure.storage);
    expect(movedAssets.headers["x-wharf-store-move"]).toBe("copying");

    const state = await settledMove(s, "pkgs");
    const bytes = [...packages.values()].reduce((sum, b) => sum + b.length, 0);
    expect(state).toEqual({
      feed: "pkgs",
      from: "disk",
      to: azure.key,
      state: "done",
      blobsTotal: 4,
      blobsDone: 4,
      bytesTotal: bytes,
      bytesDone: bytes,
      startedAt: expect.any(String),
      updatedAt: expect.any(String),
      finishedAt: expect.any(String),
    });
    expect(JSON.stringify(state)).not.toContain(AZURITE_KEY);
    expect((await settledMove(s, "files")).state).toBe("done");
    // Each move (package feed, asset directory) downloaded everything once mid-copy.
    expect(downloadsDuringMove).toHaveLength(4);

    for (const address of [...packageBlobs, ...assetBlobs]) {
      expect(await azure.store.stat(address)).toBeDefined();
      expect(onDisk(s, address)).toBe(false);
    }
    await expectPackages(s, "pkgs", packages);
    await expectAssets(s, "files", assets);

    // And back to the data directory.
    expect((await setStorage(s, "pkgs", DISK)).headers["x-wharf-store-move"]).toBe("copying");
    expect((await setStorage(s, "files", DISK)).headers["x-wharf-store-move"]).toBe("copying");
    const back = await settledMove(s, "pkgs");
    expect(back).toMatchObject({ from: azure.key, to: "disk", state: "done", blobsDone: 4 });
    expect((await settledMove(s, "files")).state).toBe("done");
    for (const address of [...packageBlobs, ...assetBlobs]) {
      expect(onDisk(s, address)).toBe(true);
      expect(await azure.store.stat(address)).toBeUndefined();
    }
    await expectPackages(s, "pkgs", packages);
    await expectAssets(s, "files", assets);
  });

  it("keeps the old copy of a blob another feed on the old store references", async () => {
    const s = await startServer();
    const azure = await azureContainer();
    await createFeed(s, "mine", "asset");
    await createFeed(s, "theirs", "asset");
    const shared = randomBytes(4000);
    const own = randomBytes(4100);
    await uploadAssets(s, "mine", { "shared.bin": shared, "own.bin": own });
    await uploadAssets(s, "theirs", { "copy-of-shared.bin": shared });

    await setStorage(s, "mine", azure.storage);
    expect(await settledMove(s, "mine")).toMatchObject({ state: "done", blobsDone: 2 });
    expect(await azure.store.stat(sha256(shared))).toBeDefined();
    expect(await azure.store.stat(sha256(own))).toBeDefined();
    expect(onDisk(s, sha256(shared))).toBe(true);
    expect(onDisk(s, sha256(own))).toBe(false);
    await expectAssets(s, "theirs", { "copy-of-shared.bin": shared });
  });

  it("moves the assembled packages of virtual versions with the feed", async () => {
    const s = await startServer();
    const azure = await azureContainer();
    await createFeed(s, "virtual", "universal");
    const packages = await uploadPackages(s, "virtual", 1);
    // As a download of a virtual version leaves it: an ordinary blob named by upack_assembled.
    const assembled = randomBytes(3300);
    const info = await createFileBlobStore(s.dataDir).put(Readable.from([assembled]));
    s.db
      .prepare(
        `INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at)
       SELECT id, ?, ?, ?, ? FROM upack_versions LIMIT 1`,
      )
      .run(info.sha256, info.sha1, info.size, new Date().toISOString());

    await setStorage(s, "virtual", azure.storage);
    const bytes = [...packages.values()][0] as Buffer;
    expect(await settledMove(s, "virtual")).toMatchObject({
      state: "done",
      blobsDone: 2,
      bytesDone: bytes.length + assembled.length,
    });
    expect(await azure.store.stat(info.sha256)).toEqual({ size: assembled.length });
    expect(onDisk(s, info.sha256)).toBe(false);
  });

  it("new uploads only: moves nothing, old blobs stay served, new ones go to the new store", async () => {
    const s = await startServer();
    const azure = await azureContainer();
    await createFeed(s, "keep", "universal");
    const old = await uploadPackages(s, "keep", 2);

    const res = await setStorage(s, "keep", azure.storage, false);
    expect(res.statusCode).toBe(200);
    expect(res.headers["x-wharf-store-move"]).toBeUndefined();
    expect(res.body).not.toContain(AZURITE_KEY);
    expect((await api(s, "GET", "/api/storage/move?feed=keep")).statusCode).toBe(404);
    for (const bytes of old.values()) {
      expect(onDisk(s, sha256(bytes))).toBe(true);
      expect(await azure.store.stat(sha256(bytes))).toBeUndefined();
    }
    const added = await uploadPackages(s, "keep", 1, 10);
    const [newBytes] = [...added.values()];
    expect(await azure.store.stat(sha256(newBytes as Buffer))).toBeDefined();
    expect(onDisk(s, sha256(newBytes as Buffer))).toBe(false);
    await expectPackages(s, "keep", new Map([...old, ...added]));

    // Later, POST /api/storage/move gathers the old blobs into the feed's store.
    const gather = await api(s, "POST", "/api/storage/move?feed=keep");
    expect(gather.statusCode).toBe(200);
    expect(await settledMove(s, "keep")).toMatchObject({ state: "done", to: azure.key, blobsDone: 3 });
    for (const bytes of old.values()) expect(onDisk(s, sha256(bytes))).toBe(false);
    await expectPackages(s, "keep", new Map([...old, ...added]));
  });

  it("resumes a move stopped in the middle at the next start, from where its row says", async () => {
    let closing: Promise<void> | undefined;
    const first: Server = await startServer({
      hooks: {
        // The process goes away after 12 of 15 blobs: progress was last written every few blobs.
        afterBlob: (_feedId, phase, done) => {
          if (phase === "copying" && done === 12) closing ??= first.close();
        },
      },
    });
    const dataDir = first.dataDir;
    const azure = await azureContainer();
    await createFeed(first, "big", "asset");
    const files = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`f${i}.bin`, randomBytes(1000 + i)]));
    await uploadAssets(first, "big", files);
    expect((await setStorage(first, "big", azure.storage)).headers["x-wharf-store-move"]).toBe("copying");
    await expect.poll(() => closing !== undefined, { timeout: 10_000 }).toBe(true);
    await closing;
    const stopped = openDatabase(path.join(dataDir, "wharf.sqlite"));
    const saved = stopped.prepare("SELECT state, blobs_done AS done FROM feed_store_moves").get() as {
      state: string;
      done: number;
    };
    stopped.close();
    expect(saved.state).toBe("copying");
    // Progress is written at least every 5 blobs, sooner once 500 ms passed (a loaded machine):
    // after a stop at the 12th, the row is at the 8th blob or later.
    expect(saved.done).toBeGreaterThanOrEqual(8);
    expect(saved.done).toBeLessThan(15);

    const copiedAfterRestart: number[] = [];
    const second = await startServer({
      dataDir,
      hooks: { afterBlob: (_feedId, phase, done) => void (phase === "copying" && copiedAfterRestart.push(done)) },
    });
    const state = await settledMove(second, "big");
    expect(state).toMatchObject({ state: "done", blobsTotal: 15, blobsDone: 15 });
    // Only the blobs after the recorded cursor are copied again.
    expect(copiedAfterRestart).toHaveLength(15 - saved.done);
    for (const bytes of Object.values(files)) {
      expect(await azure.store.stat(sha256(bytes))).toBeDefined();
      expect(onDisk(second, sha256(bytes))).toBe(false);
    }
    await expectAssets(second, "big", files);
    await second.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("reports a failed move, refuses a second change while one runs, and retries", async () => {
    let release: (() => void) | undefined;
    let paused: Promise<void> | undefined;
    const s = await startServer({
      hooks: {
        afterBlob: (_feedId, phase, done) => {
          if (phase !== "copying" || done !== 1 || paused !== undefined) return;
          paused = new Promise((resolve) => (release = resolve));
          return paused;
        },
      },
    });
    const azure = await azureContainer();
    await createFeed(s, "flaky", "asset");
    const files = { "a.bin": randomBytes(1500), "b.bin": randomBytes(1600), "c.bin": randomBytes(1700) };
    await uploadAssets(s, "flaky", files);
    const sorted = Object.values(files).map(sha256).sort();
    // The last blob in address order is lost from the disk: the copy cannot find it.
    const lost = sorted[2] as string;
    const lostFile = path.join(s.dataDir, "blobs", lost.slice(0, 2), lost.slice(2, 4), lost);
    const lostBytes = Object.values(files).find((bytes) => sha256(bytes) === lost) as Buffer;
    await unlink(lostFile);

    expect((await setStorage(s, "flaky", azure.storage)).statusCode).toBe(200);
    await expect.poll(() => release !== undefined).toBe(true);
    const running = await api(s, "GET", "/api/storage/move?feed=flaky");
    expect(running.json()).toMatchObject({ state: "copying" });
    const again = await setStorage(s, "flaky", DISK);
    expect(again.statusCode).toBe(409);
    expect(again.headers["x-wharf-error"]).toBe("MOVE_RUNNING");
    expect((await api(s, "POST", "/api/storage/move?feed=flaky")).statusCode).toBe(409);
    release?.();

    const failed = await settledMove(s, "flaky");
    expect(failed).toMatchObject({ state: "failed", blobsDone: 2, blobsTotal: 3 });
    expect(failed.error).toContain(lost);
    expect(failed.finishedAt).toBeUndefined();
    // The feed keeps serving what it has.
    await expectAssets(s, "flaky", pick(files, sorted.slice(0, 2)));

    await writeFile(lostFile, lostBytes);
    const retried = await api(s, "POST", "/api/storage/move?feed=flaky");
    expect(retried.statusCode).toBe(200);
    expect(await settledMove(s, "flaky")).toMatchObject({ state: "done", blobsDone: 3 });
    for (const address of sorted) expect(await azure.store.stat(address)).toBeDefined();
    expect(onDisk(s, lost)).toBe(false);
  });

  it("a store that is down fails the move; the feed keeps serving; posting the setting again retries", async () => {
    const outage = { down: false };
    const s = await startServer({
      // The object store refuses every write while `down`, as a stopped server would.
      createObjectStore: (config, key, tempDir) => {
        const store = createObjectStore(config, key, tempDir);
        return {
          ...store,
          put: (source, options) =>
            outage.down
              ? Promise.reject(new DomainError("bad_gateway", "AZURE_UNREACHABLE", "Azure storage did not answer."))
              : store.put(source, options),
        };
      },
    });
    const azure = await azureContainer();
    await createFeed(s, "outage", "universal");
    const packages = await uploadPackages(s, "outage", 3);
    outage.down = true;
    expect((await setStorage(s, "outage", azure.storage)).headers["x-wharf-store-move"]).toBe("copying");
    const failed = await settledMove(s, "outage");
    expect(failed).toMatchObject({ state: "failed", blobsDone: 0, error: "Azure storage did not answer." });
    await expectPackages(s, "outage", packages);
    for (const bytes of packages.values()) expect(onDisk(s, sha256(bytes))).toBe(true);

    outage.down = false;
    const again = await setStorage(s, "outage", azure.storage);
    expect(again.headers["x-wharf-store-move"]).toBe("copying");
    expect(await settledMove(s, "outage")).toMatchObject({ state: "done", blobsDone: 3 });
    for (const bytes of packages.values()) expect(onDisk(s, sha256(bytes))).toBe(false);
    await expectPackages(s, "outage", packages);
  });

  it("answers 404 for a feed that never moved, 400 for a bad move parameter, 401 without a key", async () => {
    const s = await startServer();
    await createFeed(s, "still", "asset");
    const never = await api(s, "GET", "/api/storage/move?feed=still");
    expect(never.statusCode).toBe(404);
    expect(never.headers["x-wharf-error"]).toBe("MOVE_NOT_FOUND");
    expect((await api(s, "GET", "/api/storage/move?feed=nothere")).statusCode).toBe(404);
    const bad = await setStorage(s, "still", DISK, "maybe" as unknown as boolean);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("move");
    expect((await s.app.inject({ method: "GET", url: "/api/storage/move?feed=still" })).statusCode).toBe(401);
    const openapi = await s.app.inject({ method: "GET", url: "/openapi.json" });
    expect(Object.keys(openapi.json<{ paths: object }>().paths)).toContain("/api/storage/move");
  });

  it("wharf storage move and status: progress lines, a summary, and no secret", async () => {
    const s = await startServer({
      // Slow enough for the CLI to see the move under way.
      hooks: { afterBlob: () => new Promise((resolve) => setTimeout(resolve, 60)) },
    });
    const azure = await azureContainer();
    await createFeed(s, "cli", "universal");
    await uploadPackages(s, "cli", 6);
    const address = await s.app.listen({ port: 0, host: "127.0.0.1" });
    const settings = path.join(s.dataDir, "to-azure.json");
    await writeFile(settings, JSON.stringify(azure.storage));
    const out: string[] = [];
    const err: string[] = [];
    const wharf = (...args: string[]) =>
      storageCommand([...args, "--server", address, "--api-key", s.key], {
        config: s.config,
        out: (line) => out.push(line),
        err: (line) => err.push(line),
        pollMs: 20,
      });

    expect(await wharf("status", "cli")).toBe(0);
    expect(out).toEqual(["cli has never moved stores"]);
    out.length = 0;

    expect(await wharf("move", "cli", "--to", settings)).toBe(0);
    expect(err).toEqual([]);
    expect(out.length).toBeGreaterThan(1);
    expect(out[0]).toMatch(/^copying \d\/6 blobs, .+ \(\d+%\)/);
    expect(out.some((line) => /, ETA /.test(line))).toBe(true);
    expect(out.at(-1)).toMatch(new RegExp(`^moved cli: 6 blobs \\(.+\\) from disk to ${escape(azure.key)} in `));
    out.length = 0;

    expect(await wharf("status", "cli")).toBe(0);
    expect(out[0]).toMatch(/^cli: done, from disk to azure:.*, 6\/6 blobs/);

    expect(await wharf("move", "cli", "--to", "default", "--new-uploads-only")).toBe(0);
    expect(out.at(-1)).toBe("cli: new uploads go to the new store; stored blobs stay where they are");
    expect(await wharf("move", "cli", "--retry")).toBe(0);
    expect(out.at(-1)).toMatch(/^moved cli: 6 blobs .* from azure:.* to disk in /);
    expect(out.join("\n")).not.toContain(AZURITE_KEY);

    expect(await wharf("move", "cli")).toBe(2);
    expect(err.join("\n")).toContain("--to <file|default> or --retry");
  });

  it("wharf storage move with no server running moves the feed itself, holding the data directory's lock", async () => {
    const s = await startServer();
    const azure = await azureContainer();
    await createFeed(s, "offline", "asset");
    const files = { "x.bin": randomBytes(2500), "y.bin": randomBytes(2600) };
    await uploadAssets(s, "offline", files);
    await s.close();
    const settings = path.join(s.dataDir, "to-azure.xml");
    const { ConnectionString, ContainerName, TargetPath } = azure.storage.properties;
    await writeFile(
      settings,
      `<AzurePackageStore><Properties ConnectionString="${ConnectionString}" ContainerName="${ContainerName}" ` +
        `TargetPath="${TargetPath}" /></AzurePackageStore>`,
    );
    const out: string[] = [];
    const err: string[] = [];
    const wharf = (...args: string[]) =>
      storageCommand(args, { config: s.config, out: (l) => out.push(l), err: (l) => err.push(l), pollMs: 10 });

    expect(await wharf("move", "offline", "--to", settings)).toBe(0);
    expect(err).toEqual([]);
    expect(out.at(-1)).toMatch(new RegExp(`^moved offline: 2 blobs .* from disk to ${escape(azure.key)} in `));
    for (const bytes of Object.values(files)) {
      expect(await azure.store.stat(sha256(bytes))).toBeDefined();
      expect(onDisk(s, sha256(bytes))).toBe(false);
    }
    expect(await wharf("status", "offline")).toBe(0);
    expect(out.at(-1)).toMatch(/^offline: done, from disk to azure:/);
    expect(await wharf("status", "nothere")).toBe(1);
    expect(err.at(-1)).toContain("nothere");
    expect(out.join("\n")).not.toContain(AZURITE_KEY);

    // The server starts again on the moved feed and serves it from the container.
    const again = await startServer({ dataDir: s.dataDir });
    await expectAssets(again, "offline", files);
  });
});

function pick(files: Record<string, Buffer>, addresses: string[]): Record<string, Buffer> {
  return Object.fromEntries(Object.entries(files).filter(([, bytes]) => addresses.includes(sha256(bytes))));
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
