import { beforeAll, expect, it } from "vitest";
import {
  createFeedStoreMoveRepository,
  type FeedStoreMoveRepository,
} from "../../../src/storage/feed-store-move-repository.js";
import { createPostgresFeedStoreMoveRepository } from "../../../src/storage/feed-store-move-repository-postgres.js";
import { openPostgres } from "../../../src/storage/postgres/connection.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";

const T0 = "2026-11-29T10:00:00.000Z";
const T1 = "2026-11-29T10:01:00.000Z";
const T2 = "2026-11-29T10:02:00.000Z";
const sha = (c: string) => c.repeat(64);
/** On PostgreSQL, the cluster node the repository under test runs moves for. */
const THIS_NODE = "node-here";

const repositoryOn = (database: TestDatabase): FeedStoreMoveRepository =>
  database.kind === "sqlite"
    ? createFeedStoreMoveRepository(database.sqlite)
    : createPostgresFeedStoreMoveRepository(database.postgres, THIS_NODE);

describeOnBothDatabases("Feed store move repository", (database) => {
  let moves: FeedStoreMoveRepository;
  let feedA: number;
  let feedB: number;
  let empty: number;
  beforeAll(async () => {
    moves = repositoryOn(database());
    const { exec } = database();
    const feed = async (name: string) =>
      (
        (await exec(
          "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (?, 'universal', ?, '{}', ?, ?) RETURNING id",
          [name, `k-${name}`, T0, T0],
        )) as [{ id: number }]
      )[0].id;
    feedA = await feed("a");
    feedB = await feed("b");
    empty = await feed("empty");
    const [{ id: packageA }] = (await exec(
      "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', 'p', '', 'p') RETURNING id",
      [feedA],
    )) as [{ id: number }];
    const [{ id: packageB }] = (await exec(
      "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', 'p', '', 'p') RETURNING id",
      [feedB],
    )) as [{ id: number }];
    const version = async (packageId: number, v: string, blob: string, size: number) =>
      (
        (await exec(
          `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
             file_list, is_virtual, published_at) VALUES (?, ?, ?, ?, '{}', ?, 'x', ?, '[]', 0, ?) RETURNING id`,
          [packageId, v, v, v, blob, size, T0],
        )) as [{ id: number }]
      )[0].id;
    // Feed a: blobs c (twice: dedup, larger size wins), a (assembled), e (asset file); b shares c.
    const v1 = await version(packageA, "1.0.0", sha("c"), 100);
    await version(packageA, "2.0.0", sha("c"), 120);
    await exec(
      "INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at) VALUES (?, ?, 'x', 7, ?)",
      [v1, sha("a"), T0],
    );
    await exec(
      `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
         created_at, modified_at)
       VALUES (?, 'f.txt', 'f.txt', '', 0, ?, 3000000000, 'm', 's', 'x', ?, ?),
              (?, 'dir', 'dir', '', 1, NULL, NULL, NULL, NULL, NULL, ?, ?)`,
      [feedA, sha("e"), T0, T0, feedA, T0, T0],
    );
    await version(packageB, "1.0.0", sha("c"), 100);
    await version(packageB, "3.0.0", sha("b"), 5);
  });

  it("reads a feed's blobs in address order, deduplicated, with their totals (sizes past 2^32 too)", async () => {
    expect(await moves.blobsOf(feedA)).toEqual([
      { sha256: sha("a"), size: 7 },
      { sha256: sha("c"), size: 120 },
      { sha256: sha("e"), size: 3_000_000_000 },
    ]);
    expect(await moves.totals(feedA)).toEqual({ blobs: 3, bytes: 3_000_000_127 });
    expect(await moves.totals(empty)).toEqual({ blobs: 0, bytes: 0 });
    expect(await moves.blobsOf(empty)).toEqual([]);
  });

  it("tells whether this feed, or another one, references a blob", async () => {
    expect(await moves.referencedBy(feedA, sha("a"))).toBe(true);
    expect(await moves.referencedBy(feedA, sha("e"))).toBe(true);
    expect(await moves.referencedBy(feedA, sha("b"))).toBe(false);
    expect(await moves.referencedElsewhere(feedA, sha("c"))).toBe(true);
    expect(await moves.referencedElsewhere(feedA, sha("a"))).toBe(false);
    expect(await moves.referencedElsewhere(feedB, sha("e"))).toBe(true);
    expect(await moves.referencedElsewhere(feedB, sha("b"))).toBe(false);
  });

  it("begins, records progress, deletes, finishes; a missing row is undefined and changes nothing", async () => {
    expect(await moves.find(feedA)).toBeUndefined();
    expect(await moves.progress(feedA, progress("x"), T1)).toBe(false);
    expect(await moves.startDeleting(feedA, T1)).toBe(false);
    await moves.begin(feedA, "disk", "s3:x", { blobs: 3, bytes: 127 }, T0);
    expect(await moves.find(feedA)).toEqual({
      feedId: feedA,
      fromStore: "disk",
      toStore: "s3:x",
      state: "copying",
      cursor: "",
      blobsTotal: 3,
      blobsDone: 0,
      bytesTotal: 127,
      bytesDone: 0,
      startedAt: T0,
      updatedAt: T0,
    });
    expect(await moves.progress(feedA, progress(sha("a")), T1)).toBe(true);
    expect(await moves.find(feedA)).toMatchObject({
      cursor: sha("a"),
      blobsDone: 1,
      bytesDone: 7,
      blobsTotal: 4,
      bytesTotal: 200,
      updatedAt: T1,
    });
    expect(await moves.claimUnfinished(true)).toEqual([feedA]);
    expect(await moves.startDeleting(feedA, T2)).toBe(true);
    expect(await moves.find(feedA)).toMatchObject({ state: "deleting", cursor: "", updatedAt: T2 });
    await moves.finish(feedA, T2);
    expect(await moves.find(feedA)).toEqual({
      feedId: feedA,
      fromStore: "disk",
      toStore: "s3:x",
      state: "done",
      cursor: "",
      blobsTotal: 4,
      blobsDone: 1,
      bytesTotal: 200,
      bytesDone: 7,
      startedAt: T0,
      updatedAt: T2,
      finishedAt: T2,
    });
    expect(await moves.claimUnfinished(true)).toEqual([]);
  });

  it("fails in a phase, resumes in it, and a new begin replaces the whole row", async () => {
    await moves.begin(feedB, "disk", "s3:x", { blobs: 2, bytes: 105 }, T0);
    await moves.startDeleting(feedB, T0);
    await moves.fail(feedB, "deleting", "store down", T1);
    expect(await moves.find(feedB)).toMatchObject({ state: "failed", failedIn: "deleting", error: "store down" });
    await moves.resume(feedB, T2);
    const resumed = await moves.find(feedB);
    expect(resumed).toMatchObject({ state: "deleting", updatedAt: T2 });
    expect(resumed).not.toHaveProperty("failedIn");
    expect(resumed).not.toHaveProperty("error");
    await moves.fail(feedB, "copying", "again", T2);
    await moves.finish(feedA, T2);
    expect(await moves.claimUnfinished(true)).toEqual([]);
    // A failed row replaced by a new move: no failedIn, error or finishedAt left over.
    await moves.begin(feedB, "s3:x", "disk", { blobs: 1, bytes: 5 }, T1);
    expect(await moves.find(feedB)).toEqual({
      feedId: feedB,
      fromStore: "s3:x",
      toStore: "disk",
      state: "copying",
      cursor: "",
      blobsTotal: 1,
      blobsDone: 0,
      bytesTotal: 5,
      bytesDone: 0,
      startedAt: T1,
      updatedAt: T1,
    });
    await moves.fail(feedB, "copying", "x", T2);
    await moves.resume(feedB, T2);
    expect(await moves.find(feedB)).toMatchObject({ state: "copying" });
    expect(await moves.claimUnfinished(true)).toEqual([feedB]);
    // finish after a resumed one clears the error as well; a done row is replaced by begin too.
    await moves.begin(feedA, "s3:x", "disk", { blobs: 3, bytes: 127 }, T2);
    expect(await moves.find(feedA)).not.toHaveProperty("finishedAt");
    expect(await moves.claimUnfinished(true)).toEqual([feedA, feedB]);
  });

  it("loses the row with its feed (cascade)", async () => {
    await database().exec("DELETE FROM feeds WHERE id = ?", [feedB]);
    expect(await moves.find(feedB)).toBeUndefined();
    expect(await moves.progress(feedB, progress("z"), T2)).toBe(false);
    expect(await moves.claimUnfinished(true)).toEqual([feedA]);
  });

  it("two nodes beginning the same feed's move at once both succeed; one row remains (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const pools = [0, 1].map(() =>
      openPostgres(db.postgres.pool.options.connectionString as string, {
        applicationName: "wharf test, another node",
      }),
    );
    try {
      const [one, two] = pools.map((pool, i) =>
        createPostgresFeedStoreMoveRepository({ pool, committed: () => undefined }, `node-${i}`),
      );
      for (let round = 0; round < 5; round++) {
        await Promise.all([
          one?.begin(empty, "disk", "s3:one", { blobs: 1, bytes: 1 }, T1),
          two?.begin(empty, "disk", "s3:two", { blobs: 2, bytes: 2 }, T2),
        ]);
        const row = await moves.find(empty);
        expect(["s3:one", "s3:two"]).toContain(row?.toStore);
      }
      expect(await db.exec("SELECT count(*) AS n FROM feed_store_moves WHERE feed_id = ?", [empty])).toEqual([
        { n: 1 },
      ]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it("in a cluster, claims only the moves no live node runs; a node whose move was taken over writes to it no more (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const { exec } = db;
    const feeds: number[] = [];
    for (const name of ["live", "stale", "vanished", "imported"]) {
      const [{ id }] = (await exec(
        "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES (?, 'universal', ?, '{}', ?, ?) RETURNING id",
        [`claim-${name}`, `k-claim-${name}`, T0, T0],
      )) as [{ id: number }];
      feeds.push(id);
    }
    const [live, stale, vanished, imported] = feeds as [number, number, number, number];
    // This node and "node-live" beat; "node-stale" last beat an hour ago; "node-vanished" has no row (it stopped).
    await exec(
      `INSERT INTO cluster_nodes (node_id, version, last_heartbeat_at) VALUES
         (?, 'v', now()), ('node-live', 'v', now()), ('node-stale', 'v', now() - interval '1 hour')`,
      [THIS_NODE],
    );
    const nodeRepository = (id: string) => createPostgresFeedStoreMoveRepository(db.postgres, id);
    const [liveNode, staleNode] = [nodeRepository("node-live"), nodeRepository("node-stale")];
    await liveNode.begin(live, "disk", "s3:x", { blobs: 1, bytes: 1 }, T0);
    await staleNode.begin(stale, "disk", "s3:x", { blobs: 1, bytes: 1 }, T0);
    await nodeRepository("node-vanished").begin(vanished, "disk", "s3:x", { blobs: 1, bytes: 1 }, T0);
    await staleNode.begin(imported, "disk", "s3:x", { blobs: 1, bytes: 1 }, T0);
    await exec("DELETE FROM feed_store_move_nodes WHERE feed_id = ?", [imported]);
    // Of the moves under way from the tests above, feedA's is this node's, and the empty feed's is
    // a node's that never had a row (node-0 or node-1, above).
    expect(await moves.claimUnfinished(false)).toEqual([feedA]);
    expect(await liveNode.claimUnfinished(false)).toEqual([live]);
    expect(await staleNode.claimUnfinished(false)).toEqual([stale]);

    // The leader takes over the stale, vanished and imported moves; the live node's stays its own.
    const before = db.commits();
    const orphans = [feedA, empty, stale, vanished, imported].sort((a, b) => a - b);
    expect(await moves.claimUnfinished(true)).toEqual(orphans);
    expect(db.commits()).toBe(before + 1);
    expect(await staleNode.claimUnfinished(false)).toEqual([]);
    expect(await liveNode.claimUnfinished(true)).toEqual([live]);
    // Claiming nothing new writes nothing: the node's caches keep their version.
    expect(await moves.claimUnfinished(true)).toEqual(orphans);
    expect(db.commits()).toBe(before + 1);

    // The stale node, still running after all, writes nothing more to the move it lost.
    expect(await staleNode.progress(stale, progress(sha("s")), T1)).toBe(false);
    expect(await staleNode.startDeleting(stale, T1)).toBe(false);
    await staleNode.fail(stale, "copying", "lost", T1);
    await staleNode.finish(stale, T1);
    expect(await moves.find(stale)).toMatchObject({ state: "copying", cursor: "", updatedAt: T0 });
    expect(await moves.progress(stale, progress(sha("s")), T1)).toBe(true);
    // Unless it begins a move again: then it is its own.
    await staleNode.begin(stale, "s3:x", "disk", { blobs: 1, bytes: 1 }, T2);
    expect(await staleNode.progress(stale, progress(sha("t")), T2)).toBe(true);
    expect(await moves.progress(stale, progress(sha("u")), T2)).toBe(false);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    await moves.progress(feedA, progress("q"), T2);
    await moves.finish(feedA, T2);
    expect(db.commits()).toBe(before + 2);
  });
});

function progress(cursor: string) {
  return { cursor, blobsDone: 1, bytesDone: 7, blobsTotal: 4, bytesTotal: 200 };
}
