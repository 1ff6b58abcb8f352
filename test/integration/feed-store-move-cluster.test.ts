import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { BlobServiceClient } from "@azure/storage-blob";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { storageCommand } from "../../src/cli/storage.js";
import { DomainError } from "../../src/domain/errors.js";
import type { StorageConfig } from "../../src/domain/package-store.js";
import { createAzureBlobStore } from "../../src/storage/azure-blob-store.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import type { FeedStoreMoveHooks } from "../../src/storage/feed-store-move.js";
import { createObjectStore, storeKeyOf } from "../../src/storage/store-factory.js";
import { AZURITE_KEY, type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { execute, readOne } from "../helpers/fixtures.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * The cluster forms of feed-store-move.test.ts (issue 15 section 4, docs/cluster-mode.md): two
 * nodes of one cluster (PostgreSQL, Azurite) move a feed between the cluster's package store and
 * another container and back, while the other node serves it and refuses a second change; a move
 * stopped with its node resumes on the node that takes the lead; failures are reported and retried
 * through either node; a node started before another named a store reads and collects it. The
 * disk store is no store of a cluster: "back to the default" is the cluster's object store. No
 * node deletes a blob eagerly there, so the old store keeps its copies (feed-store-move.test.ts
 * checks their deletion on one machine). It runs in the in-process project, as the other
 * cluster-*.test.ts files do (two nodes of its own, skipped without PostgreSQL).
 */

type AfterBlobArgs = Parameters<NonNullable<FeedStoreMoveHooks["afterBlob"]>>;

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A feed's setting for "the server default": on a cluster node, its object store. */
const DEFAULT = { id: "disk", properties: {} };

let azurite: AzuriteServer;
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A container of Azurite: its storage setting, its store key, and a store to look into it. */
async function azureContainer(containerName: string, targetPath: string) {
  const storage: StorageConfig = {
    id: "azure",
    properties: { ConnectionString: azurite.connectionString(), ContainerName: containerName, TargetPath: targetPath },
  };
  const tempDir = await mkdtemp(path.join(os.tmpdir(), "wharf-move-spool-"));
  cleanups.push(() => rm(tempDir, { recursive: true, force: true }));
  const store: BlobStore = createAzureBlobStore({
    connectionString: azurite.connectionString(),
    containerName,
    targetPath,
    tempDir,
  });
  return { storage, store, key: storeKeyOf(storage) };
}

/** A new container to move feeds to. */
async function newContainer() {
  const containerName = `move-${randomUUID()}`;
  await BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(containerName).create();
  return azureContainer(containerName, "wharf");
}

/** The cluster's own package store (WHARF_PACKAGE_STORE), where feeds without a setting live. */
function clusterStore(cluster: TestCluster) {
  return azureContainer(
    cluster.storeEnv.WHARF_AZURE_CONTAINER_NAME ?? "",
    cluster.storeEnv.WHARF_AZURE_TARGET_PATH ?? "",
  );
}

const api = (node: ClusterTestApp, method: "GET" | "POST", url: string, payload?: object) =>
  node.app.inject({ method, url, headers: { "x-apikey": node.adminKey }, ...(payload ? { payload } : {}) });

async function createFeed(node: ClusterTestApp, name: string, feedType: "universal" | "asset") {
  const res = await api(node, "POST", "/api/management/feeds/create", { name, feedType });
  expect(res.statusCode, res.body).toBe(201);
}

/** Uploads `count` packages to a universal feed through the API; their bytes by version. */
async function uploadPackages(node: ClusterTestApp, feed: string, count: number, first = 1) {
  const uploaded = new Map<string, Buffer>();
  for (let i = first; i < first + count; i++) {
    const version = `1.0.${i}`;
    const bytes = await buildUpack({ name: "tool", version, files: { "data.bin": randomBytes(2000 + i) } });
    const res = await node.app.inject({
      method: "PUT",
      url: `/upack/${feed}/upload`,
      headers: { "x-apikey": node.adminKey },
      payload: bytes,
    });
    expect(res.statusCode, res.body).toBe(201);
    uploaded.set(version, bytes);
  }
  return uploaded;
}

async function uploadAssets(node: ClusterTestApp, dir: string, files: Record<string, Buffer>) {
  for (const [file, bytes] of Object.entries(files)) {
    const res = await node.app.inject({
      method: "POST",
      url: `/endpoints/${dir}/content/${file}`,
      headers: { "x-apikey": node.adminKey },
      payload: bytes,
    });
    expect(res.statusCode, res.body).toBe(201);
  }
}

async function expectPackages(node: ClusterTestApp, feed: string, packages: Map<string, Buffer>) {
  for (const [version, bytes] of packages) {
    const res = await api(node, "GET", `/upack/${feed}/download/tool/${version}`);
    expect(res.statusCode, `${node.nodeId}: ${feed} ${version}`).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

async function expectAssets(node: ClusterTestApp, dir: string, files: Record<string, Buffer>) {
  for (const [file, bytes] of Object.entries(files)) {
    const res = await api(node, "GET", `/endpoints/${dir}/content/${file}`);
    expect(res.statusCode, `${node.nodeId}: ${dir}/${file}`).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

/** Posts the storage setting; answers the response. */
function setStorage(node: ClusterTestApp, feed: string, storage: object, move?: boolean) {
  const query = move === undefined ? "" : `&move=${move}`;
  return api(node, "POST", `/api/storage?feed=${feed}${query}`, storage);
}

/** Polls GET /api/storage/move on `node` until the move is done or failed; answers its state. */
async function settledMove(node: ClusterTestApp, feed: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await api(node, "GET", `/api/storage/move?feed=${feed}`);
    expect(res.statusCode).toBe(200);
    const state = res.json<Record<string, unknown>>();
    if (state.state === "done" || state.state === "failed") return state;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function expectAllIn(store: BlobStore, addresses: readonly string[]) {
  for (const address of addresses) expect(await store.stat(address), address).toBeDefined();
}

describe.skipIf(!postgresInstalled())("feed store moves in a cluster", { timeout: 60_000 }, () => {
  beforeAll(async () => {
    azurite = await startAzurite();
  }, 60_000);
  afterAll(async () => {
    await azurite?.stop();
  });

  describe("moving a feed between package stores", () => {
    let cluster: TestCluster;
    let a: ClusterTestApp;
    let b: ClusterTestApp;
    /** Each test's hooks, on both nodes (a move runs on the node asked). */
    let afterBlob: FeedStoreMoveHooks["afterBlob"];
    /** Stores (by key) that refuse every write, as a stopped server would. */
    const down = new Set<string>();
    const deps = {
      feedStoreMoveHooks: { afterBlob: (...args: AfterBlobArgs) => afterBlob?.(...args) },
      createObjectStore: (...args: Parameters<typeof createObjectStore>): BlobStore => {
        const store = createObjectStore(...args);
        const key = args[1];
        return {
          ...store,
          put: (source, options) =>
            down.has(key)
              ? Promise.reject(new DomainError("bad_gateway", "AZURE_UNREACHABLE", "Azure storage did not answer."))
              : store.put(source, options),
        };
      },
    };

    beforeAll(async () => {
      cluster = await testCluster(await testPostgres().createDatabase(), azurite);
      const env = { WHARF_GC_INTERVAL_HOURS: "0" };
      a = await buildClusterTestApp(cluster, { env, deps });
      b = await buildClusterTestApp(cluster, { env, deps });
    }, 60_000);
    afterEach(() => {
      afterBlob = undefined;
      down.clear();
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
    });

    it("moves a universal feed and an asset directory to another container and back, both nodes serving throughout", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      await createFeed(a, "pkgs", "universal");
      await createFeed(b, "files", "asset");
      const packages = await uploadPackages(a, "pkgs", 4);
      const assets = {
        "a/one.bin": randomBytes(3000),
        "two.txt": Buffer.from("two"),
        "b/c/three.bin": randomBytes(5000),
      };
      await uploadAssets(b, "files", assets);
      const packageBlobs = [...packages.values()].map(sha256);
      const assetBlobs = Object.values(assets).map(sha256);
      await expectAllIn(home.store, [...packageBlobs, ...assetBlobs]);

      const downloadsDuringMove: Array<Promise<void>> = [];
      // Mid-copy: some blobs in the new store, some only in the old one; the other node serves them all.
      afterBlob = async (_feedId, phase, done) => {
        if (phase === "copying" && done === 2) {
          downloadsDuringMove.push(expectPackages(b, "pkgs", packages), expectAssets(b, "files", assets));
          await Promise.all(downloadsDuringMove);
        }
      };
      const moved = await setStorage(a, "pkgs", other.storage);
      expect(moved.statusCode, moved.body).toBe(200);
      expect(moved.headers["x-wharf-store-move"]).toBe("copying");
      expect((await setStorage(a, "files", other.storage)).headers["x-wharf-store-move"]).toBe("copying");

      // The other node reports the move from its row.
      const state = await settledMove(b, "pkgs");
      const bytes = [...packages.values()].reduce((sum, b) => sum + b.length, 0);
      expect(state).toEqual({
        feed: "pkgs",
        from: home.key,
        to: other.key,
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
      expect((await settledMove(b, "files")).state).toBe("done");
      expect(downloadsDuringMove).toHaveLength(4);
      await expectAllIn(other.store, [...packageBlobs, ...assetBlobs]);
      // No eager delete in a cluster: the old store keeps its copies (docs/cluster-mode.md, Known differences).
      await expectAllIn(home.store, [...packageBlobs, ...assetBlobs]);
      for (const node of [a, b]) {
        await expectPackages(node, "pkgs", packages);
        await expectAssets(node, "files", assets);
      }

      // And back to the server's default, asked of the other node: the cluster's object store.
      afterBlob = undefined;
      expect((await setStorage(b, "pkgs", DEFAULT)).headers["x-wharf-store-move"]).toBe("copying");
      expect((await setStorage(b, "files", DEFAULT)).headers["x-wharf-store-move"]).toBe("copying");
      const back = await settledMove(a, "pkgs");
      expect(back).toMatchObject({ from: other.key, to: home.key, state: "done", blobsDone: 4 });
      expect((await settledMove(a, "files")).state).toBe("done");
      await expectAllIn(home.store, [...packageBlobs, ...assetBlobs]);
      for (const node of [a, b]) {
        await expectPackages(node, "pkgs", packages);
        await expectAssets(node, "files", assets);
      }
    });

    it("moves the assembled packages of virtual versions with the feed", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      await createFeed(a, "virtual", "universal");
      const packages = await uploadPackages(a, "virtual", 1);
      // As a download of a virtual version leaves it: an ordinary blob named by upack_assembled.
      const assembled = randomBytes(3300);
      const info = await home.store.put(Readable.from([assembled]));
      await execute(
        a.db,
        `INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at)
       SELECT v.id, ?, ?, ?, ? FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
        JOIN feeds f ON f.id = p.feed_id WHERE f.name = 'virtual'`,
        [info.sha256, info.sha1, info.size, new Date().toISOString()],
      );

      await setStorage(b, "virtual", other.storage);
      const bytes = [...packages.values()][0] as Buffer;
      expect(await settledMove(b, "virtual")).toMatchObject({
        state: "done",
        blobsDone: 2,
        bytesDone: bytes.length + assembled.length,
      });
      expect(await other.store.stat(info.sha256)).toEqual({ size: assembled.length });
    });

    it("new uploads only: moves nothing, old blobs stay served, new ones go to the new store on either node", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      await createFeed(a, "keep", "universal");
      const old = await uploadPackages(a, "keep", 2);

      const res = await setStorage(a, "keep", other.storage, false);
      expect(res.statusCode).toBe(200);
      expect(res.headers["x-wharf-store-move"]).toBeUndefined();
      expect(res.body).not.toContain(AZURITE_KEY);
      expect((await api(b, "GET", "/api/storage/move?feed=keep")).statusCode).toBe(404);
      for (const bytes of old.values()) expect(await other.store.stat(sha256(bytes))).toBeUndefined();
      // Uploaded through the node that did not change the setting, downloaded through the one that did.
      const added = await uploadPackages(b, "keep", 1, 10);
      const [newBytes] = [...added.values()] as [Buffer];
      expect(await other.store.stat(sha256(newBytes))).toBeDefined();
      expect(await home.store.stat(sha256(newBytes))).toBeUndefined();
      for (const node of [a, b]) await expectPackages(node, "keep", new Map([...old, ...added]));

      // Later, POST /api/storage/move (on the other node) gathers the old blobs into the feed's store.
      const gather = await api(b, "POST", "/api/storage/move?feed=keep");
      expect(gather.statusCode).toBe(200);
      expect(await settledMove(a, "keep")).toMatchObject({ state: "done", to: other.key, blobsDone: 3 });
      await expectAllIn(other.store, [...old.values(), newBytes].map(sha256));
      for (const node of [a, b]) await expectPackages(node, "keep", new Map([...old, ...added]));
    });

    it("serves, on a node started before, a feed another node put on a store new to the cluster", async () => {
      const other = await newContainer();
      await createFeed(a, "fresh", "universal");
      expect((await setStorage(a, "fresh", other.storage)).statusCode).toBe(200);
      const added = await uploadPackages(a, "fresh", 1);
      expect(await other.store.stat(sha256([...added.values()][0] as Buffer))).toBeDefined();
      await expectPackages(b, "fresh", added);
    });

    it("collects, on a node started before, the garbage of a store another node named since", async () => {
      const other = await newContainer();
      await createFeed(b, "collected", "universal");
      expect((await setStorage(b, "collected", other.storage)).statusCode).toBe(200);
      const [bytes] = [...(await uploadPackages(b, "collected", 1)).values()] as [Buffer];
      const removed = await api(b, "POST", "/upack/collected/delete/tool/1.0.1");
      expect(removed.statusCode, removed.body).toBe(200);
      expect(await other.store.stat(sha256(bytes))).toBeDefined();

      // Marked by the first sight (deleted only after the grace period), in the store new to `a`.
      const gc = await api(a, "POST", "/api/storage/gc?dryRun=false");
      expect(gc.statusCode, gc.body).toBe(200);
      const { stores } = gc.json<{ stores: Array<{ store: string; examined: number; error?: string }> }>();
      expect(stores.find((part) => part.store === other.key)).toMatchObject({ examined: 1 });
      expect(stores.every((part) => part.error === undefined)).toBe(true);
    });

    it("reports a failed move, refuses a second change on either node while one runs, and retries", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      let release: (() => void) | undefined;
      let paused: Promise<void> | undefined;
      afterBlob = (_feedId, phase, done) => {
        if (phase !== "copying" || done !== 1 || paused !== undefined) return;
        paused = new Promise((resolve) => (release = resolve));
        return paused;
      };
      await createFeed(a, "flaky", "asset");
      const files = { "a.bin": randomBytes(1500), "b.bin": randomBytes(1600), "c.bin": randomBytes(1700) };
      await uploadAssets(a, "flaky", files);
      const sorted = Object.values(files).map(sha256).sort();
      // The last blob in address order is lost from the store: the copy cannot find it.
      const lost = sorted[2] as string;
      const lostBytes = Object.values(files).find((bytes) => sha256(bytes) === lost) as Buffer;
      await home.store.delete(lost);

      expect((await setStorage(a, "flaky", other.storage)).statusCode).toBe(200);
      await expect.poll(() => release !== undefined).toBe(true);
      for (const node of [a, b]) {
        expect((await api(node, "GET", "/api/storage/move?feed=flaky")).json()).toMatchObject({ state: "copying" });
        const again = await setStorage(node, "flaky", DEFAULT);
        expect(again.statusCode, node.nodeId).toBe(409);
        expect(again.headers["x-wharf-error"]).toBe("MOVE_RUNNING");
        expect((await api(node, "POST", "/api/storage/move?feed=flaky")).statusCode).toBe(409);
      }
      release?.();

      const failed = await settledMove(b, "flaky");
      expect(failed).toMatchObject({ state: "failed", blobsDone: 2, blobsTotal: 3 });
      expect(failed.error).toContain(lost);
      expect(failed.finishedAt).toBeUndefined();
      // The feed keeps serving what it has.
      const kept = Object.fromEntries(Object.entries(files).filter(([, bytes]) => sha256(bytes) !== lost));
      await expectAssets(b, "flaky", kept);

      await home.store.put(Readable.from([lostBytes]));
      const retried = await api(b, "POST", "/api/storage/move?feed=flaky");
      expect(retried.statusCode).toBe(200);
      expect(await settledMove(a, "flaky")).toMatchObject({ state: "done", blobsDone: 3 });
      await expectAllIn(other.store, sorted);
      await expectAssets(a, "flaky", files);
    });

    it("a store that is down fails the move; the feed keeps serving; posting the setting again retries", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      await createFeed(a, "outage", "universal");
      const packages = await uploadPackages(a, "outage", 3);
      down.add(other.key);
      expect((await setStorage(a, "outage", other.storage)).headers["x-wharf-store-move"]).toBe("copying");
      const failed = await settledMove(b, "outage");
      expect(failed).toMatchObject({ state: "failed", blobsDone: 0, error: "Azure storage did not answer." });
      for (const node of [a, b]) await expectPackages(node, "outage", packages);
      await expectAllIn(home.store, [...packages.values()].map(sha256));

      down.clear();
      const again = await setStorage(b, "outage", other.storage);
      expect(again.headers["x-wharf-store-move"]).toBe("copying");
      expect(await settledMove(a, "outage")).toMatchObject({ state: "done", blobsDone: 3 });
      await expectAllIn(other.store, [...packages.values()].map(sha256));
      for (const node of [a, b]) await expectPackages(node, "outage", packages);
    });

    it("answers 404 for a feed that never moved, 400 for a bad move parameter, 401 without a key", async () => {
      await createFeed(a, "still", "asset");
      const never = await api(b, "GET", "/api/storage/move?feed=still");
      expect(never.statusCode).toBe(404);
      expect(never.headers["x-wharf-error"]).toBe("MOVE_NOT_FOUND");
      expect((await api(b, "GET", "/api/storage/move?feed=nothere")).statusCode).toBe(404);
      const bad = await api(b, "POST", "/api/storage?feed=still&move=maybe", DEFAULT);
      expect(bad.statusCode).toBe(400);
      expect(bad.body).toContain("move");
      expect((await b.app.inject({ method: "GET", url: "/api/storage/move?feed=still" })).statusCode).toBe(401);
    });

    it("wharf storage move and status against a node: progress lines, a summary, and no secret", async () => {
      const home = await clusterStore(cluster);
      const other = await newContainer();
      // Slow enough for the CLI to see the move under way.
      afterBlob = () => new Promise((resolve) => setTimeout(resolve, 60));
      await createFeed(a, "cli", "universal");
      await uploadPackages(b, "cli", 6);
      const address = await a.app.listen({ port: 0, host: "127.0.0.1" });
      const settings = path.join(await mkdtemp(path.join(os.tmpdir(), "wharf-move-cli-")), "to-azure.json");
      cleanups.push(() => rm(path.dirname(settings), { recursive: true, force: true }));
      await writeFile(settings, JSON.stringify(other.storage));
      const out: string[] = [];
      const err: string[] = [];
      const wharf = (...args: string[]) =>
        storageCommand([...args, "--server", address, "--api-key", a.adminKey], {
          config: a.config,
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
      expect(out.at(-1)).toMatch(
        new RegExp(`^moved cli: 6 blobs \\(.+\\) from ${escape(home.key)} to ${escape(other.key)} in `),
      );
      out.length = 0;

      expect(await wharf("status", "cli")).toBe(0);
      expect(out[0]).toMatch(new RegExp(`^cli: done, from ${escape(home.key)} to ${escape(other.key)}, 6/6 blobs`));

      // "default" is the server's default store: in a cluster, its object store.
      expect(await wharf("move", "cli", "--to", "default", "--new-uploads-only")).toBe(0);
      expect(out.at(-1)).toBe("cli: new uploads go to the new store; stored blobs stay where they are");
      expect(await wharf("move", "cli", "--retry")).toBe(0);
      expect(out.at(-1)).toMatch(
        new RegExp(`^moved cli: 6 blobs .* from ${escape(other.key)} to ${escape(home.key)} in `),
      );
      expect(out.join("\n")).not.toContain(AZURITE_KEY);
    });
  });

  describe("a move whose node stops", () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    }, 60_000);

    it("is resumed by the node that takes the lead, from where its row says", async () => {
      let closing: Promise<void> | undefined;
      const env = { WHARF_GC_INTERVAL_HOURS: "0" };
      // The leader (started first) moves; it goes away after 12 of 15 blobs: progress was last
      // written every few blobs.
      const first: ClusterTestApp = await buildClusterTestApp(cluster, {
        env,
        deps: {
          feedStoreMoveHooks: {
            afterBlob: (_feedId, phase, done) => {
              if (phase === "copying" && done === 12) closing ??= first.close();
            },
          },
        },
      });
      cleanups.push(async () => void (await (closing ?? first.close())));
      const copiedAfterRestart: number[] = [];
      const second = await buildClusterTestApp(cluster, {
        env,
        deps: {
          feedStoreMoveHooks: {
            afterBlob: (_feedId, phase, done) => void (phase === "copying" && copiedAfterRestart.push(done)),
          },
        },
      });
      cleanups.push(() => second.close());
      // The move is resumed by a node that takes the lead: the node asked to move must lead first.
      const leader = async () => {
        const view = (await api(second, "GET", "/api/cluster/nodes")).json<{
          nodes: Array<{ nodeId: string; runsSchedulers: boolean }>;
        }>();
        return view.nodes.find((node) => node.runsSchedulers)?.nodeId;
      };
      await expect.poll(leader, { timeout: 10_000 }).toBe(first.nodeId);
      const other = await newContainer();
      await createFeed(first, "big", "asset");
      const files = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`f${i}.bin`, randomBytes(1000 + i)]));
      await uploadAssets(first, "big", files);
      expect((await setStorage(first, "big", other.storage)).headers["x-wharf-store-move"]).toBe("copying");
      await expect.poll(() => closing !== undefined, { timeout: 10_000 }).toBe(true);
      await closing;
      const saved = await readOne<{ state: string; done: number }>(
        second.db,
        "SELECT state, blobs_done AS done FROM feed_store_moves",
      );
      expect(saved?.state).toBe("copying");
      // Progress is written at least every 5 blobs, sooner once 500 ms passed (a loaded machine):
      // after a stop at the 12th, the row is at the 8th blob or later.
      expect(saved?.done).toBeGreaterThanOrEqual(8);
      expect(saved?.done).toBeLessThan(15);

      // The second node takes the lead (within its next try, every 5 s) and resumes the move.
      const state = await settledMove(second, "big");
      expect(state).toMatchObject({ state: "done", blobsTotal: 15, blobsDone: 15 });
      // Only the blobs after the recorded cursor are copied again.
      expect(copiedAfterRestart).toHaveLength(15 - (saved?.done ?? 0));
      await expectAllIn(other.store, Object.values(files).map(sha256));
      await expectAssets(second, "big", files);
    });
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
