import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import {
  api,
  azureContainer,
  type Container,
  createFeed,
  cleanupsAfterEach,
  describeFeedMoves,
  expectIn,
  moveSeams,
  expectPackages,
  moveStoppedAfterTwelve,
  seamDeps,
  setStorage,
  sha256,
  uploadPackages,
} from "../helpers/feed-store-move-scenarios.js";
import { readOne } from "../helpers/fixtures.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * The cluster forms of feed-store-move.test.ts (issue 15 section 4, docs/cluster-mode.md): two
 * nodes of one cluster (PostgreSQL, Azurite) do the moves of feed-store-move-scenarios.ts between
 * the cluster's package store and another container, one node asked, the other serving and
 * refusing a second change. The disk store is no store of a cluster: "back to the default" is the
 * cluster's object store, and no node deletes a blob eagerly there, so the old store keeps its
 * copies (feed-store-move.test.ts checks their deletion on one machine). Here only: a move stopped
 * with its node resumes on the node that takes the lead, or on the leader when the node asked did
 * not lead; a node started before another named a
 * store serves and collects it. It runs in the in-process project, as the other cluster-*.test.ts
 * files do (two nodes of its own, skipped without PostgreSQL).
 */

let azurite: AzuriteServer;

/** The node that runs the cluster's schedulers, as `node`'s cluster view says. */
async function leaderOf(node: ClusterTestApp): Promise<string | undefined> {
  const view = (await api(node, "GET", "/api/cluster/nodes")).json<{
    nodes: Array<{ nodeId: string; runsSchedulers: boolean }>;
  }>();
  return view.nodes.find((entry) => entry.runsSchedulers)?.nodeId;
}
const cleanups = cleanupsAfterEach();

const newContainer = () => azureContainer(azurite, cleanups);

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
    /** The cluster's own package store (WHARF_PACKAGE_STORE): where feeds without a setting live. */
    let home: Container;
    const homeSpool: Array<() => Promise<void>> = [];
    const seams = moveSeams();

    beforeAll(async () => {
      cluster = await testCluster(await testPostgres().createDatabase(), azurite);
      const env = { WHARF_GC_INTERVAL_HOURS: "0" };
      a = await buildClusterTestApp(cluster, { env, deps: seamDeps(seams) });
      b = await buildClusterTestApp(cluster, { env, deps: seamDeps(seams) });
      home = await azureContainer(azurite, homeSpool, {
        containerName: cluster.storeEnv.WHARF_AZURE_CONTAINER_NAME,
        targetPath: cluster.storeEnv.WHARF_AZURE_TARGET_PATH,
      });
    }, 60_000);
    afterAll(async () => {
      await a?.close();
      await b?.close();
      for (const cleanup of homeSpool) await cleanup();
    });

    describeFeedMoves(() => ({
      a,
      b,
      nodes: [a, b],
      db: a.db,
      home,
      newContainer,
      deletesOldCopies: false,
      seams,
    }));

    it("serves, on a node started before, a feed another node put on a store new to the cluster", async () => {
      const other = await newContainer();
      await createFeed(a, "fresh", "universal");
      expect((await setStorage(a, "fresh", other.storage)).statusCode).toBe(200);
      const added = await uploadPackages(a, "fresh", 1);
      await expectIn(other, [...added.values()].map(sha256));
      await expectPackages(b, "fresh", added);
    });

    it("collects, on a node started before, the garbage of a store another node named since", async () => {
      const other = await newContainer();
      await createFeed(b, "collected", "universal");
      expect((await setStorage(b, "collected", other.storage)).statusCode).toBe(200);
      const [bytes] = [...(await uploadPackages(b, "collected", 1)).values()] as [Buffer];
      const removed = await api(b, "POST", "/upack/collected/delete/tool/1.0.1");
      expect(removed.statusCode, removed.body).toBe(200);
      await expectIn(other, [sha256(bytes)]);

      // Marked by the first sight (deleted only after the grace period), in the store new to `a`.
      const gc = await api(a, "POST", "/api/storage/gc?dryRun=false");
      expect(gc.statusCode, gc.body).toBe(200);
      const { stores } = gc.json<{ stores: Array<{ store: string; examined: number; error?: string }> }>();
      expect(stores.find((part) => part.store === other.key)).toMatchObject({ examined: 1 });
      expect(stores.every((part) => part.error === undefined)).toBe(true);
    });
  });

  describe("a move whose node stops", () => {
    let cluster: TestCluster;
    beforeAll(async () => {
      cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    }, 60_000);

    it("is resumed by the node that takes the lead, from where its row says", async () => {
      const move = moveStoppedAfterTwelve();
      const env = { WHARF_GC_INTERVAL_HOURS: "0" };
      // The leader (started first) moves, and goes away.
      const first: ClusterTestApp = await buildClusterTestApp(cluster, {
        env,
        deps: { feedStoreMoveHooks: move.stoppingHooks(() => first.close()) },
      });
      cleanups.push(async () => void (await (move.closing() ?? first.close())));
      const second = await buildClusterTestApp(cluster, { env, deps: { feedStoreMoveHooks: move.resumingHooks } });
      cleanups.push(() => second.close());
      // The move is resumed by a node that takes the lead: the node asked to move must lead first.
      await expect.poll(() => leaderOf(second), { timeout: 10_000 }).toBe(first.nodeId);
      const other = await newContainer();
      await move.start(first, other);
      const saved = await readOne<{ state: string; done: number }>(
        second.db,
        "SELECT state, blobs_done AS done FROM feed_store_moves",
      );
      const savedDone = move.expectSaved(saved);

      // The second node takes the lead (within its next try, every 5 s) and resumes the move.
      await move.expectResumed(second, other, savedDone);
    });

    it("asked of a node that does not lead, is resumed by the leader once that node stops", async () => {
      const move = moveStoppedAfterTwelve();
      const env = { WHARF_GC_INTERVAL_HOURS: "0" };
      const separate = await testCluster(await testPostgres().createDatabase(), azurite);
      const leading = await buildClusterTestApp(separate, { env, deps: { feedStoreMoveHooks: move.resumingHooks } });
      cleanups.push(() => leading.close());
      await expect.poll(() => leaderOf(leading), { timeout: 10_000 }).toBe(leading.nodeId);
      const asked: ClusterTestApp = await buildClusterTestApp(separate, {
        env,
        deps: { feedStoreMoveHooks: move.stoppingHooks(() => asked.close()) },
      });
      cleanups.push(async () => void (await (move.closing() ?? asked.close())));
      const other = await newContainer();
      await move.start(asked, other);
      const saved = await readOne<{ state: string; done: number; node: string }>(
        leading.db,
        "SELECT state, blobs_done AS done, n.node_id AS node FROM feed_store_moves JOIN feed_store_move_nodes n USING (feed_id)",
      );
      expect(saved?.node).toBe(asked.nodeId);
      const savedDone = move.expectSaved(saved);

      // The leader, which kept the lead, takes the move over at its next look (every heartbeat, 10 s).
      await move.expectResumed(leading, other, savedDone);
      expect(await readOne<{ node: string }>(leading.db, "SELECT node_id AS node FROM feed_store_move_nodes")).toEqual({
        node: leading.nodeId,
      });
    });
  });
});
