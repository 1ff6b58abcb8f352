import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFeedService, type FeedService } from "../../src/areas/management/index.js";
import {
  createPackageDeploymentService,
  type PackageDeploymentService,
} from "../../src/areas/package-deployment/index.js";
import { type Caller, createPromotionServices, type PromotionService } from "../../src/areas/promotions/index.js";
import { createPostgresUpackQueryRepository } from "../../src/areas/upack/read/query-repository-postgres.js";
import { createPostgresUpackWriteRepository } from "../../src/areas/upack/repository-postgres.js";
import { createUpackWriteService, type UpackWriteService } from "../../src/areas/upack/write/upload-service.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import type { Principal } from "../../src/domain/principal.js";
import { createEventOutbox } from "../../src/lifecycle/events.js";
import { createBlobKeeper } from "../../src/storage/blob-keeper.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * Promotions, repackagings, package deployment records and the lifecycle event outbox built on
 * PostgreSQL (cluster mode), through their factories as app.ts builds them. The universal feed's
 * write side and queries under them are PostgreSQL's too (the upack area's own repositories).
 */

const ANN: Principal = { type: "user", userId: 1, userName: "ann", via: "password" };
/** An administrator: every need met. */
const admin: Caller = { principal: ANN, can: async () => true };
/** May view nothing, add nothing. */
const outsider: Caller = { principal: { type: "anonymous" }, can: async () => false };

describe.skipIf(!postgresInstalled())("promotions and package deployment records on PostgreSQL", () => {
  let dir: string;
  let node: NodeDatabase;
  let feeds: FeedService;
  let write: UpackWriteService;
  let promotions: PromotionService;
  let deployments: PackageDeploymentService;

  const publish = async (feedName: string, version: string) => {
    const feed = await feeds.getFeed(feedName);
    const bytes = await buildUpack({ group: "acme", name: "app", version, files: { "a.txt": `v${version}` } });
    return write.importPackage({
      feedId: feed.id,
      principal: ANN,
      canOverwrite: async () => true,
      source: { open: () => Readable.from([bytes]) },
    });
  };

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-promotions-pg-"));
    const config = loadConfig({ WHARF_DATA_DIR: dir });
    node = await openNodeDatabase({ url: await testPostgres().createDatabase(), nodeId: "test", migrate: true });
    const db = node.db;
    const blobs = createFileBlobStore(path.join(dir, "blobs"));
    // Never deletes eagerly: cluster mode leaves unreferenced blobs to garbage collection.
    const keeper = createBlobKeeper(blobs, async () => true);
    feeds = createFeedService({ db, clock: systemClock, config });
    write = createUpackWriteService({
      repository: createPostgresUpackWriteRepository(db),
      blobs,
      keepers: { keeperFor: () => keeper },
      clock: systemClock,
      maxUploadBytes: config.maxUploadBytes,
      tempDir: dir,
    });
    const queries = createPostgresUpackQueryRepository(db, node.watch);
    promotions = createPromotionServices({ db, clock: systemClock, feeds, upack: { write, queries }, blobs });
    deployments = createPackageDeploymentService({ db, clock: systemClock, feeds });
    for (const name of ["dev", "prod"]) await feeds.createFeed({ name, feedType: "universal" });
  });
  afterAll(async () => {
    await node?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("promotes a version to another feed and lists the promotion record", async () => {
    const published = await publish("dev", "1.0.0");
    const row = await promotions.promote(
      { fromFeed: "dev", toFeed: "prod", group: "acme", name: "app", version: "1.0.0", comments: "ship it" },
      admin,
    );
    expect(row).toMatchObject({
      from_feed_name: "dev",
      to_feed_name: "prod",
      package_group: "acme",
      package_name: "app",
      version: "1.0.0",
      promoted_by: "ann",
      comments: "ship it",
      sha1: published.sha1,
      sha256: published.sha256,
    });
    expect(await promotions.listPromotions({ feed: "prod", limit: 10 }, admin)).toEqual([row]);
    expect(await promotions.listPromotions({ limit: 10 }, { ...admin, can: async () => false })).toEqual([]);
    await expect(
      promotions.promote({ fromFeed: "dev", toFeed: "prod", group: "acme", name: "app", version: "1.0.0" }, outsider),
    ).rejects.toMatchObject({ kind: "unauthenticated" });
    await expect(
      promotions.promote({ fromFeed: "dev", toFeed: "nowhere", group: "acme", name: "app", version: "1.0.0" }, admin),
    ).rejects.toMatchObject({ kind: "not_found", code: "FEED_NOT_FOUND" });
  });

  it("repackages a version under a new one and lists the repackaging record", async () => {
    const row = await promotions.repackage(
      { feed: "dev", toFeed: "prod", group: "acme", name: "app", version: "1.0.0", newVersion: "1.0.1" },
      admin,
    );
    expect(row).toMatchObject({
      feed_name: "prod",
      from_feed_name: "dev",
      from_version: "1.0.0",
      new_version: "1.0.1",
      repackaged_by: "ann",
    });
    expect(await promotions.listRepackagings({ version: "1.0.1", limit: 10 }, admin)).toEqual([row]);
  });

  it("records deployments with their package.deployed event, lists and counts them", async () => {
    const details = { application: "shop", description: "release 1", target: "web-1" };
    const first = await deployments.record(
      { feedName: "PROD", groupName: "acme", packageName: "app", version: "1.0.0", details },
      ANN,
    );
    expect(first).toMatchObject({ feedName: "prod", packageName: "app", version: "1.0.0", userName: "ann" });
    const prod = await feeds.getFeed("prod");
    await deployments.recordDownload(
      { feedId: prod.id, group: "acme", name: "app", version: "1.0.1" },
      { ...details, target: "web-2" },
      ANN,
    );
    const listed = await deployments.list({ feedName: "prod", groupName: "ACME", packageName: "App", limit: 10 });
    expect(listed.map((record) => [record.version, record.target])).toEqual([
      ["1.0.1", "web-2"],
      ["1.0.0", "web-1"],
    ]);
    expect([...(await deployments.countsByVersion(prod.id)).values()]).toEqual([1, 1]);
    await expect(
      deployments.record({ feedName: "gone", groupName: "", packageName: "app", version: "1", details }, ANN),
    ).rejects.toMatchObject({ kind: "not_found", code: "FEED_NOT_FOUND" });
  });

  it("leaves every change's event in the PostgreSQL outbox createEventOutbox reads", async () => {
    const events = await createEventOutbox(node.db).pending(-1);
    expect(events.map((event) => [event.type, event.feedName, event.package?.version])).toEqual([
      ["package.added", "dev", "1.0.0"],
      ["package.promoted", "prod", "1.0.0"],
      ["package.added", "prod", "1.0.1"],
      ["package.deployed", "prod", "1.0.0"],
      ["package.deployed", "prod", "1.0.1"],
    ]);
    expect(events[1]?.data).toMatchObject({ fromFeed: "dev", comments: "ship it" });
    expect(events[3]?.data).toEqual({ application: "shop", target: "web-1", deployedBy: "ann" });
  });
});
