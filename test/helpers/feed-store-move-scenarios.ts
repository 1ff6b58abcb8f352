import { createHash, randomBytes, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import { afterEach, expect, it } from "vitest";
import type { AppDeps } from "../../src/app.js";
import { storageCommand } from "../../src/cli/storage.js";
import type { Config } from "../../src/config.js";
import { DomainError } from "../../src/domain/errors.js";
import type { StorageConfig } from "../../src/domain/package-store.js";
import { createAzureBlobStore } from "../../src/storage/azure-blob-store.js";
import type { BlobInfo, BlobStore } from "../../src/storage/blob-store.js";
import type { FeedStoreMoveHooks } from "../../src/storage/feed-store-move.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import type { MetadataDb } from "../../src/storage/metadata-db.js";
import { createObjectStore } from "../../src/storage/store-factory.js";
import { AZURITE_KEY, type AzuriteServer } from "./azurite.js";
import { execute } from "./fixtures.js";
import { buildUpack } from "./upack-fixtures.js";

/**
 * The feed-store moves (issue 15 section 4) that one machine (SQLite, its disk store) and a cluster
 * (two nodes on PostgreSQL, the cluster's object store) must both do: feed-store-move.test.ts and
 * feed-store-move-cluster.test.ts run `describeFeedMoves` on their set-up, and keep what only one
 * of them has (the disk, the offline CLI, a stopped node, stores new to a node) to themselves.
 */

export const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

/** A feed's setting for "the server default": the disk on one machine, the object store in a cluster. */
export const DEFAULT_STORE = { id: "disk", properties: {} };

/** A running app the scenarios send requests to: the one server, or one node of a cluster. */
export interface MoveNode {
  readonly app: FastifyInstance;
  readonly adminKey: string;
  readonly config: Config;
  readonly nodeId?: string;
}

/** A package store seen from the test, beside the app. */
export interface StoreView {
  /** As the move's state names it (`from`, `to`). */
  readonly key: string;
  /** Whether the blob is there (on disk: its file). */
  has(address: string): Promise<boolean>;
  put(bytes: Buffer): Promise<BlobInfo>;
  delete(address: string): Promise<void>;
}

/** A container of Azurite: its storage setting and a store to look into it. */
export interface Container extends StoreView {
  readonly storage: StorageConfig;
  readonly store: BlobStore;
}

type AfterBlob = NonNullable<FeedStoreMoveHooks["afterBlob"]>;

/** A test's seams on every node of a set-up. */
export interface MoveSeams {
  /** Called after each blob a move handles (a move runs on the node asked). */
  afterBlob: AfterBlob | undefined;
  /** Keys of the stores that refuse every write, as a stopped server would. */
  readonly down: Set<string>;
}

/** Seams for the tests of the enclosing describe, cleared after each. */
export function moveSeams(): MoveSeams {
  const seams: MoveSeams = { afterBlob: undefined, down: new Set() };
  afterEach(() => {
    seams.afterBlob = undefined;
    seams.down.clear();
  });
  return seams;
}

/** Clean-ups to run (the last pushed first) after each test of the file or describe that calls this. */
export function cleanupsAfterEach(): Array<() => Promise<void>> {
  const cleanups: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  return cleanups;
}

/** The app's test seams that read `seams` as each test sets them. */
export function seamDeps(seams: MoveSeams): Pick<AppDeps, "feedStoreMoveHooks" | "createObjectStore"> {
  return {
    feedStoreMoveHooks: { afterBlob: (...args) => seams.afterBlob?.(...args) },
    createObjectStore: (...args) => {
      const store = createObjectStore(...args);
      const key = args[1];
      return {
        ...store,
        put: (source, options) =>
          seams.down.has(key)
            ? Promise.reject(new DomainError("bad_gateway", "AZURE_UNREACHABLE", "Azure storage did not answer."))
            : store.put(source, options),
      };
    },
  };
}

/** The disk store of a data directory, its blobs looked for as files. */
export function diskStore(dataDir: string): StoreView {
  const store = createFileBlobStore(dataDir);
  return {
    key: "disk",
    has: async (address) => existsSync(path.join(dataDir, "blobs", address.slice(0, 2), address.slice(2, 4), address)),
    put: (bytes) => store.put(Readable.from([bytes])),
    delete: (address) => store.delete(address),
  };
}

/**
 * A container of `azurite` (new unless named; the store creates it at its first write), its key
 * written out as the server names it; `cleanups` gets its spool directory.
 */
export async function azureContainer(
  azurite: AzuriteServer,
  cleanups: Array<() => Promise<void>>,
  options: { containerName?: string; targetPath?: string } = {},
): Promise<Container> {
  const containerName = options.containerName ?? `move-${randomUUID()}`;
  const targetPath = options.targetPath ?? "wharf";
  const storage: StorageConfig = {
    id: "azure",
    properties: { ConnectionString: azurite.connectionString(), ContainerName: containerName, TargetPath: targetPath },
  };
  const tempDir = await mkdtemp(path.join(os.tmpdir(), "wharf-move-spool-"));
  cleanups.push(() => rm(tempDir, { recursive: true, force: true }));
  const store = createAzureBlobStore({
    connectionString: azurite.connectionString(),
    containerName,
    targetPath,
    tempDir,
  });
  return {
    storage,
    store,
    key: `azure:http://127.0.0.1:${azurite.port}/devstoreaccount1/${containerName}/${targetPath}`,
    has: async (address) => (await store.stat(address)) !== undefined,
    put: (bytes) => store.put(Readable.from([bytes])),
    delete: (address) => store.delete(address),
  };
}

export const api = (node: MoveNode, method: "GET" | "POST", url: string, payload?: object) =>
  node.app.inject({ method, url, headers: { "x-apikey": node.adminKey }, ...(payload ? { payload } : {}) });

export async function createFeed(node: MoveNode, name: string, feedType: "universal" | "asset") {
  const res = await api(node, "POST", "/api/management/feeds/create", { name, feedType });
  expect(res.statusCode, res.body).toBe(201);
}

/** Uploads `count` packages to a universal feed through the API; their bytes by version. */
export async function uploadPackages(node: MoveNode, feed: string, count: number, first = 1) {
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

export async function uploadAssets(node: MoveNode, dir: string, files: Record<string, Buffer>) {
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

export async function expectPackages(node: MoveNode, feed: string, packages: Map<string, Buffer>) {
  for (const [version, bytes] of packages) {
    const res = await api(node, "GET", `/upack/${feed}/download/tool/${version}`);
    expect(res.statusCode, `${node.nodeId ?? "server"}: ${feed} ${version}`).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

export async function expectAssets(node: MoveNode, dir: string, files: Record<string, Buffer>) {
  for (const [file, bytes] of Object.entries(files)) {
    const res = await api(node, "GET", `/endpoints/${dir}/content/${file}`);
    expect(res.statusCode, `${node.nodeId ?? "server"}: ${dir}/${file}`).toBe(200);
    expect(res.rawPayload.equals(bytes)).toBe(true);
  }
}

/** Expects every address in `store` (or, with `present` false, none). */
export async function expectIn(store: StoreView, addresses: readonly string[], present = true) {
  for (const address of addresses) expect(await store.has(address), `${address} in ${store.key}`).toBe(present);
}

/** Posts the storage setting; answers the response. */
export function setStorage(node: MoveNode, feed: string, storage: object, move?: boolean) {
  const query = move === undefined ? "" : `&move=${move}`;
  return api(node, "POST", `/api/storage?feed=${feed}${query}`, storage);
}

/** Polls GET /api/storage/move on `node` until the move is done or failed; answers its state. */
export async function settledMove(node: MoveNode, feed: string): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await api(node, "GET", `/api/storage/move?feed=${feed}`);
    expect(res.statusCode).toBe(200);
    const state = res.json<Record<string, unknown>>();
    if (state.state === "done" || state.state === "failed") return state;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** `wharf storage ...` with `config`, against `server` when given (else on the data directory itself). */
export function storageCli(config: Config, server?: { address: string; adminKey: string }) {
  const out: string[] = [];
  const err: string[] = [];
  const wharf = (...args: string[]) =>
    storageCommand(server ? [...args, "--server", server.address, "--api-key", server.adminKey] : args, {
      config,
      out: (line) => out.push(line),
      err: (line) => err.push(line),
      pollMs: 20,
    });
  return { wharf, out, err };
}

export function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A move of 15 blobs whose node goes away after the 12th (progress was last written every few
 * blobs), and its resumption by a node that counts the blobs it copies again: the set-ups differ
 * in who resumes it (the next start on one machine, the next leader in a cluster).
 */
export function moveStoppedAfterTwelve() {
  let closing: Promise<void> | undefined;
  const copiedAgain: number[] = [];
  const files = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`f${i}.bin`, randomBytes(1000 + i)]));
  return {
    /** The hooks of the node that moves first: `close` is how it goes away. */
    stoppingHooks: (close: () => Promise<void>): FeedStoreMoveHooks => ({
      afterBlob: (_feedId, phase, done) => {
        if (phase === "copying" && done === 12) closing ??= close();
      },
    }),
    resumingHooks: {
      afterBlob: (_feedId, phase, done) => void (phase === "copying" && copiedAgain.push(done)),
    } satisfies FeedStoreMoveHooks,
    /** The stop, once it began (to wait for it rather than close twice). */
    closing: () => closing,
    /** Asks `node` (with the stopping hooks) to move 15 assets of "big" to `target`; waits until it stopped. */
    async start(node: MoveNode, target: Container) {
      await createFeed(node, "big", "asset");
      await uploadAssets(node, "big", files);
      expect((await setStorage(node, "big", target.storage)).headers["x-wharf-store-move"]).toBe("copying");
      await expect.poll(() => closing !== undefined, { timeout: 10_000 }).toBe(true);
      await closing;
    },
    /** Expects the move's row as the stop left it; answers how many blobs it counts done. */
    expectSaved(saved: { state: string; done: number } | undefined): number {
      expect(saved?.state).toBe("copying");
      // Progress is written at least every 5 blobs, sooner once 500 ms passed (a loaded machine):
      // after a stop at the 12th, the row is at the 8th blob or later.
      expect(saved?.done).toBeGreaterThanOrEqual(8);
      expect(saved?.done).toBeLessThan(15);
      return saved?.done ?? 0;
    },
    /** Expects `node` (with the resuming hooks) to finish the move from the saved cursor; the blobs' addresses. */
    async expectResumed(node: MoveNode, target: Container, savedDone: number) {
      const state = await settledMove(node, "big");
      expect(state).toMatchObject({ state: "done", blobsTotal: 15, blobsDone: 15 });
      // Only the blobs after the recorded cursor are copied again.
      expect(copiedAgain).toHaveLength(15 - savedDone);
      const blobs = Object.values(files).map(sha256);
      await expectIn(target, blobs);
      await expectAssets(node, "big", files);
      return blobs;
    },
  };
}

/** What the scenarios need of a set-up, read when each test starts. */
export interface MoveSetup {
  /** The node a step is asked of, and the other one (the same server on one machine). */
  readonly a: MoveNode;
  readonly b: MoveNode;
  /** Every node, each expected to serve. */
  readonly nodes: readonly MoveNode[];
  /** The database the nodes share. */
  readonly db: MetadataDb;
  /** Where a feed without a setting keeps its blobs. */
  readonly home: StoreView;
  newContainer(): Promise<Container>;
  /**
   * Whether a move deletes the blobs it copied from the old store at once (one machine), or leaves
   * them to garbage collection (a cluster: docs/cluster-mode.md, Known differences).
   */
  readonly deletesOldCopies: boolean;
  readonly seams: MoveSeams;
}

/** The moves both set-ups must do, as tests of the enclosing describe. */
export function describeFeedMoves(setup: () => MoveSetup): void {
  it("moves a universal feed and an asset directory to another store and back, every node serving throughout", async () => {
    const { a, b, nodes, home, seams, deletesOldCopies, newContainer } = setup();
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
    const blobs = [...[...packages.values()].map(sha256), ...Object.values(assets).map(sha256)];
    await expectIn(home, blobs);
    const expectServedEverywhere = async () => {
      for (const node of nodes) {
        await expectPackages(node, "pkgs", packages);
        await expectAssets(node, "files", assets);
      }
    };

    const downloadsDuringMove: Array<Promise<void>> = [];
    // Mid-copy: some blobs in the new store, some only in the old one; the other node serves them all.
    seams.afterBlob = async (_feedId, phase, done) => {
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
    // Each move (package feed, asset directory) downloaded everything once mid-copy.
    expect(downloadsDuringMove).toHaveLength(4);
    await expectIn(other, blobs);
    await expectIn(home, blobs, !deletesOldCopies);
    await expectServedEverywhere();

    // And back to the server's default, asked of the other node, serving mid-copy again.
    expect((await setStorage(b, "pkgs", DEFAULT_STORE)).headers["x-wharf-store-move"]).toBe("copying");
    expect((await setStorage(b, "files", DEFAULT_STORE)).headers["x-wharf-store-move"]).toBe("copying");
    const back = await settledMove(a, "pkgs");
    expect(back).toMatchObject({ from: other.key, to: home.key, state: "done", blobsDone: 4 });
    expect((await settledMove(a, "files")).state).toBe("done");
    expect(downloadsDuringMove).toHaveLength(8);
    await expectIn(home, blobs);
    await expectIn(other, blobs, !deletesOldCopies);
    await expectServedEverywhere();
  });

  it("moves the assembled packages of virtual versions with the feed", async () => {
    const { a, b, db, home, deletesOldCopies, newContainer } = setup();
    const other = await newContainer();
    await createFeed(a, "virtual", "universal");
    const packages = await uploadPackages(a, "virtual", 1);
    // As a download of a virtual version leaves it: an ordinary blob named by upack_assembled.
    const assembled = randomBytes(3300);
    const info = await home.put(assembled);
    await execute(
      db,
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
    await expectIn(home, [info.sha256], !deletesOldCopies);
  });

  it("new uploads only: moves nothing, old blobs stay served, new ones go to the new store on every node", async () => {
    const { a, b, nodes, home, deletesOldCopies, newContainer } = setup();
    const other = await newContainer();
    await createFeed(a, "keep", "universal");
    const old = await uploadPackages(a, "keep", 2);
    const oldBlobs = [...old.values()].map(sha256);

    const res = await setStorage(a, "keep", other.storage, false);
    expect(res.statusCode).toBe(200);
    expect(res.headers["x-wharf-store-move"]).toBeUndefined();
    expect(res.body).not.toContain(AZURITE_KEY);
    expect((await api(b, "GET", "/api/storage/move?feed=keep")).statusCode).toBe(404);
    await expectIn(home, oldBlobs);
    await expectIn(other, oldBlobs, false);
    // Uploaded through the node that did not change the setting, downloaded through every node.
    const added = await uploadPackages(b, "keep", 1, 10);
    const newBlobs = [...added.values()].map(sha256);
    await expectIn(other, newBlobs);
    await expectIn(home, newBlobs, false);
    for (const node of nodes) await expectPackages(node, "keep", new Map([...old, ...added]));

    // Later, POST /api/storage/move (on the other node) gathers the old blobs into the feed's store.
    const gather = await api(b, "POST", "/api/storage/move?feed=keep");
    expect(gather.statusCode).toBe(200);
    expect(await settledMove(a, "keep")).toMatchObject({ state: "done", to: other.key, blobsDone: 3 });
    await expectIn(other, [...oldBlobs, ...newBlobs]);
    await expectIn(home, oldBlobs, !deletesOldCopies);
    for (const node of nodes) await expectPackages(node, "keep", new Map([...old, ...added]));
  });

  it("reports a failed move, refuses a second change on every node while one runs, and retries", async () => {
    const { a, b, nodes, home, seams, deletesOldCopies, newContainer } = setup();
    const other = await newContainer();
    let release: (() => void) | undefined;
    let paused: Promise<void> | undefined;
    seams.afterBlob = (_feedId, phase, done) => {
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
    await home.delete(lost);

    expect((await setStorage(a, "flaky", other.storage)).statusCode).toBe(200);
    await expect.poll(() => release !== undefined).toBe(true);
    for (const node of nodes) {
      expect((await api(node, "GET", "/api/storage/move?feed=flaky")).json()).toMatchObject({ state: "copying" });
      const again = await setStorage(node, "flaky", DEFAULT_STORE);
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

    await home.put(lostBytes);
    const retried = await api(b, "POST", "/api/storage/move?feed=flaky");
    expect(retried.statusCode).toBe(200);
    expect(await settledMove(a, "flaky")).toMatchObject({ state: "done", blobsDone: 3 });
    await expectIn(other, sorted);
    await expectIn(home, [lost], !deletesOldCopies);
    await expectAssets(a, "flaky", files);
  });

  it("a store that is down fails the move; the feed keeps serving; posting the setting again retries", async () => {
    const { a, b, nodes, home, seams, deletesOldCopies, newContainer } = setup();
    const other = await newContainer();
    await createFeed(a, "outage", "universal");
    const packages = await uploadPackages(a, "outage", 3);
    const blobs = [...packages.values()].map(sha256);
    seams.down.add(other.key);
    expect((await setStorage(a, "outage", other.storage)).headers["x-wharf-store-move"]).toBe("copying");
    const failed = await settledMove(b, "outage");
    expect(failed).toMatchObject({ state: "failed", blobsDone: 0, error: "Azure storage did not answer." });
    for (const node of nodes) await expectPackages(node, "outage", packages);
    await expectIn(home, blobs);

    seams.down.clear();
    const again = await setStorage(b, "outage", other.storage);
    expect(again.headers["x-wharf-store-move"]).toBe("copying");
    expect(await settledMove(a, "outage")).toMatchObject({ state: "done", blobsDone: 3 });
    await expectIn(other, blobs);
    await expectIn(home, blobs, !deletesOldCopies);
    for (const node of nodes) await expectPackages(node, "outage", packages);
  });

  it("answers 404 for a feed that never moved, 400 for a bad move parameter, 401 without a key", async () => {
    const { a, b } = setup();
    await createFeed(a, "still", "asset");
    const never = await api(b, "GET", "/api/storage/move?feed=still");
    expect(never.statusCode).toBe(404);
    expect(never.headers["x-wharf-error"]).toBe("MOVE_NOT_FOUND");
    expect((await api(b, "GET", "/api/storage/move?feed=nothere")).statusCode).toBe(404);
    const bad = await api(b, "POST", "/api/storage?feed=still&move=maybe", DEFAULT_STORE);
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain("move");
    expect((await b.app.inject({ method: "GET", url: "/api/storage/move?feed=still" })).statusCode).toBe(401);
    const openapi = await b.app.inject({ method: "GET", url: "/openapi.json" });
    expect(Object.keys(openapi.json<{ paths: object }>().paths)).toContain("/api/storage/move");
  });

  it("wharf storage move and status against a server: progress lines, a summary, and no secret", async () => {
    const { a, b, home, seams, newContainer } = setup();
    const other = await newContainer();
    // Slow enough for the CLI to see the move under way.
    seams.afterBlob = () => new Promise((resolve) => setTimeout(resolve, 60));
    await createFeed(a, "cli", "universal");
    await uploadPackages(b, "cli", 6);
    const address = await a.app.listen({ port: 0, host: "127.0.0.1" });
    const settingsDir = await mkdtemp(path.join(os.tmpdir(), "wharf-move-cli-"));
    const settings = path.join(settingsDir, "to-azure.json");
    await writeFile(settings, JSON.stringify(other.storage));
    const { wharf, out, err } = storageCli(a.config, { address, adminKey: a.adminKey });
    try {
      expect(await wharf("status", "cli")).toBe(0);
      expect(out).toEqual(["cli has never moved stores"]);
      out.length = 0;

      expect(await wharf("move", "cli", "--to", settings)).toBe(0);
      expect(err).toEqual([]);
      expect(out.length).toBeGreaterThan(1);
      expect(out[0]).toMatch(/^copying \d\/6 blobs, .+ \(\d+%\)/);
      expect(out.some((line) => /, ETA /.test(line))).toBe(true);
      expect(out.at(-1)).toMatch(
        new RegExp(`^moved cli: 6 blobs \\(.+\\) from ${escape(home.key)} to ${escape(other.key)} in `),
      );
      out.length = 0;

      expect(await wharf("status", "cli")).toBe(0);
      expect(out[0]).toMatch(new RegExp(`^cli: done, from ${escape(home.key)} to ${escape(other.key)}, 6/6 blobs`));

      // "default" is the server's default store: the disk, or a cluster's object store.
      expect(await wharf("move", "cli", "--to", "default", "--new-uploads-only")).toBe(0);
      expect(out.at(-1)).toBe("cli: new uploads go to the new store; stored blobs stay where they are");
      expect(await wharf("move", "cli", "--retry")).toBe(0);
      expect(out.at(-1)).toMatch(
        new RegExp(`^moved cli: 6 blobs .* from ${escape(other.key)} to ${escape(home.key)} in `),
      );
      expect(out.join("\n")).not.toContain(AZURITE_KEY);

      expect(await wharf("move", "cli")).toBe(2);
      expect(err.join("\n")).toContain("--to <file|default> or --retry");
    } finally {
      await rm(settingsDir, { recursive: true, force: true });
    }
  });
}
