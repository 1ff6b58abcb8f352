import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AppDeps, buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { AZURITE_KEY, type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import {
  azureContainer,
  createFeed,
  cleanupsAfterEach,
  describeFeedMoves,
  diskStore,
  escape,
  expectAssets,
  expectIn,
  moveSeams,
  moveStoppedAfterTwelve,
  seamDeps,
  setStorage,
  settledMove,
  sha256,
  storageCli,
  uploadAssets,
} from "../helpers/feed-store-move-scenarios.js";

/**
 * Moving a feed between package stores (issue 15 section 4) on one machine: a universal feed and
 * an asset directory go from disk to an Azure container (Azurite) and back; every blob ends in the
 * target and leaves the source unless another feed there references it; the feed serves downloads
 * during the move; "new uploads only" copies nothing; a move stopped in the middle resumes at the
 * next start; a failed move is reported and retried; the API and the CLI report it without a
 * secret. The moves a cluster does too are in feed-store-move-scenarios.ts.
 */

let azurite: AzuriteServer;
const cleanups = cleanupsAfterEach();
beforeAll(async () => {
  azurite = await startAzurite();
}, 30_000);
afterAll(async () => {
  await azurite?.stop();
});

interface Server {
  readonly app: FastifyInstance;
  readonly db: Db;
  readonly config: Config;
  readonly dataDir: string;
  readonly adminKey: string;
  /** Closes the app and its database; the data directory stays (for a restart). */
  close(): Promise<void>;
}

/** An app on `dataDir` (new when absent), closed after the test unless closed before. */
async function startServer(
  options: { dataDir?: string; deps?: Pick<AppDeps, "feedStoreMoveHooks" | "createObjectStore"> } = {},
): Promise<Server> {
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(os.tmpdir(), "wharf-move-")));
  if (options.dataDir === undefined) cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const adminKey = "move-test-admin-key-0123456789";
  const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", WHARF_GC_INTERVAL_HOURS: "0" });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  bootstrapAdminKey(db, dataDir, adminKey, systemClock);
  const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), logger: false, ...options.deps });
  await app.ready();
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await app.close();
    db.close();
  };
  cleanups.push(close);
  return { app, db, config, dataDir, adminKey, close };
}

const newContainer = () => azureContainer(azurite, cleanups);

describe("moving a feed between package stores", { timeout: 60_000 }, () => {
  describe("the moves a cluster does too, on one server and its disk", () => {
    const seams = moveSeams();
    let s: Server;
    beforeEach(async () => {
      s = await startServer({ deps: seamDeps(seams) });
    });
    describeFeedMoves(() => ({
      a: s,
      b: s,
      nodes: [s],
      db: s.db,
      home: diskStore(s.dataDir),
      newContainer,
      deletesOldCopies: true,
      seams,
    }));
  });

  it("keeps the old copy of a blob another feed on the old store references", async () => {
    const s = await startServer();
    const disk = diskStore(s.dataDir);
    const azure = await newContainer();
    await createFeed(s, "mine", "asset");
    await createFeed(s, "theirs", "asset");
    const shared = randomBytes(4000);
    const own = randomBytes(4100);
    await uploadAssets(s, "mine", { "shared.bin": shared, "own.bin": own });
    await uploadAssets(s, "theirs", { "copy-of-shared.bin": shared });

    await setStorage(s, "mine", azure.storage);
    expect(await settledMove(s, "mine")).toMatchObject({ state: "done", blobsDone: 2 });
    await expectIn(azure, [sha256(shared), sha256(own)]);
    await expectIn(disk, [sha256(shared)]);
    await expectIn(disk, [sha256(own)], false);
    await expectAssets(s, "theirs", { "copy-of-shared.bin": shared });
  });

  it("resumes a move stopped in the middle at the next start, from where its row says", async () => {
    const move = moveStoppedAfterTwelve();
    const first: Server = await startServer({ deps: { feedStoreMoveHooks: move.stoppingHooks(() => first.close()) } });
    const dataDir = first.dataDir;
    const azure = await newContainer();
    await move.start(first, azure);
    const stopped = openDatabase(path.join(dataDir, "wharf.sqlite"));
    const saved = stopped.prepare("SELECT state, blobs_done AS done FROM feed_store_moves").get() as {
      state: string;
      done: number;
    };
    stopped.close();
    const savedDone = move.expectSaved(saved);

    const second = await startServer({ dataDir, deps: { feedStoreMoveHooks: move.resumingHooks } });
    const blobs = await move.expectResumed(second, azure, savedDone);
    await expectIn(diskStore(dataDir), blobs, false);
    await second.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("wharf storage move with no server running moves the feed itself, holding the data directory's lock", async () => {
    const s = await startServer();
    const azure = await newContainer();
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
    const { wharf, out, err } = storageCli(s.config);

    expect(await wharf("move", "offline", "--to", settings)).toBe(0);
    expect(err).toEqual([]);
    expect(out.at(-1)).toMatch(new RegExp(`^moved offline: 2 blobs .* from disk to ${escape(azure.key)} in `));
    const blobs = Object.values(files).map(sha256);
    await expectIn(azure, blobs);
    await expectIn(diskStore(s.dataDir), blobs, false);
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
