import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { postgresBlobReferenceCheck } from "../../src/storage/blob-keeper-postgres.js";
import { type BlobKeeper, createBlobKeeper } from "../../src/storage/blob-keeper.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { createSharedBlobHolds } from "../../src/storage/postgres/blob-holds.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import type { PostgresDb } from "../../src/storage/postgres/database.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Two nodes of a cluster on one package store (a shared directory stands for the object store),
 * each with its own keeper, coordinated only by PostgreSQL's blob holds
 * (storage/postgres/blob-holds.ts): garbage collection on one node never deletes a blob an upload
 * on the other is working with, nor one a committed row names.
 */
describe.skipIf(!postgresInstalled())("blob holds shared by the nodes of a cluster", () => {
  let pool: pg.Pool;
  let db: PostgresDb;
  let root: string;
  let store: BlobStore;
  let uploader: BlobKeeper;
  const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
  /** The hold rows, or those of `bytes`' blob. */
  const holds = async (bytes?: Buffer) =>
    (
      await pool.query(
        "SELECT node_id, deleting FROM blob_holds WHERE $1::text IS NULL OR blob_sha256 = $1 ORDER BY id",
        [bytes && sha256(bytes)],
      )
    ).rows;

  /** A node's keeper; `store` may be wrapped (a slow delete). */
  const keeperOf = (node: string, blobs: BlobStore = store) =>
    createBlobKeeper(blobs, postgresBlobReferenceCheck(db), undefined, createSharedBlobHolds(db, node));

  beforeAll(async () => {
    pool = openPostgres(await testPostgres().createDatabase(), { applicationName: "wharf blob holds test" });
    await migratePostgres(pool);
    db = { pool, committed: () => {} };
    root = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-holds-"));
    store = createFileBlobStore(root);
    uploader = keeperOf("node-a");
  });
  afterAll(async () => {
    await pool?.end();
    if (root) await fs.rm(root, { recursive: true, force: true });
  });

  it("collection on another node leaves a held blob alone, and deletes it once the hold is dropped", async () => {
    const bytes = Buffer.from("held by node a");
    const held = await uploader.put(Readable.from([bytes]));
    expect(await holds()).toEqual([{ node_id: "node-a", deleting: 0 }]);
    const collector = keeperOf("node-b");
    expect(await collector.discardIfUnused(sha256(bytes))).toBe(false);
    expect(await store.stat(sha256(bytes))).toEqual({ size: bytes.length });
    held.release();
    await vi.waitFor(async () => expect(await holds()).toEqual([]), { timeout: 5_000, interval: 10 });
    expect(await collector.discardIfUnused(sha256(bytes))).toBe(true);
    expect(await store.stat(sha256(bytes))).toBeUndefined();
    // The deleting mark went with the delete.
    expect(await holds()).toEqual([]);
  });

  it("never deletes a blob a committed row names, though no node holds it", async () => {
    const bytes = Buffer.from("named by an asset");
    const held = await uploader.put(Readable.from([bytes]));
    const [feed] = (
      await pool.query<{ id: number }>(
        "INSERT INTO feeds (name, feed_type, storage_key, settings, created_at, modified_at) VALUES ('assets', 'asset', 'k', '{}', 'now', 'now') RETURNING id",
      )
    ).rows;
    await pool.query(
      `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
                                created_at, modified_at)
       VALUES ($1, 'a.txt', 'a.txt', '', 0, $2, $3, 'm', 's', 's', 'now', 'now')`,
      [feed?.id, sha256(bytes), bytes.length],
    );
    held.release();
    await vi.waitFor(async () => expect(await holds()).toEqual([]), { timeout: 5_000, interval: 10 });
    expect(await keeperOf("node-b").discardIfUnused(sha256(bytes))).toBe(false);
    // The check under the blob's lock, too (the keeper asked the rows first): a row committed by an
    // upload that then dropped its hold is seen there.
    const holdsOfB = createSharedBlobHolds(db, "node-b");
    expect(await holdsOfB.deleteIfUnheld(sha256(bytes), () => store.delete(sha256(bytes)))).toBe(false);
    expect(await store.stat(sha256(bytes))).toEqual({ size: bytes.length });
  });

  it("an upload of bytes being deleted on another node waits, then stores its own copy", async () => {
    const bytes = Buffer.from("deleted while uploaded again");
    (await uploader.put(Readable.from([bytes]))).release();
    await vi.waitFor(async () => expect(await holds()).toEqual([]), { timeout: 5_000, interval: 10 });
    // Node b's delete is slow: it waits for `open` before it removes the file.
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const slowDeletes: BlobStore = {
      ...store,
      delete: async (address) => {
        await gate;
        await store.delete(address);
      },
    };
    const collecting = keeperOf("node-b", slowDeletes).discardIfUnused(sha256(bytes));
    await vi.waitFor(async () => expect(await holds()).toEqual([{ node_id: "node-b", deleting: 1 }]), {
      timeout: 5_000,
      interval: 10,
    });
    let uploaded = false;
    const upload = uploader.put(Readable.from([bytes])).then((held) => {
      uploaded = true;
      return held;
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Still waiting for the delete: had it gone on, it would have found the blob and kept nothing.
    expect(uploaded).toBe(false);
    open();
    expect(await collecting).toBe(true);
    const held = await upload;
    // The upload stored its own copy after the delete.
    expect(await store.stat(sha256(bytes))).toEqual({ size: bytes.length });
    expect(await holds()).toEqual([{ node_id: "node-a", deleting: 0 }]);
    held.release();
  });

  /**
   * The other side of the blob's advisory lock in a transaction of its own, as another node (or a
   * node of the previous release, which took the lock with this statement) holds it while it
   * writes: `write` runs under the lock, and `commit` ends the transaction (at the test's end at
   * the latest, so that a failed test leaves no lock behind).
   */
  const lockAsAnotherNode = async (bytes: Buffer, write: (client: pg.PoolClient) => Promise<unknown>) => {
    const client = await pool.connect();
    let open = true;
    const commit = async () => {
      if (!open) return;
      open = false;
      await client.query("COMMIT");
      client.release();
    };
    onTestFinished(commit);
    await client.query("BEGIN");
    await client.query("SELECT pg_advisory_xact_lock(('x' || substr($1::text, 1, 16))::bit(64)::bigint)", [
      sha256(bytes),
    ]);
    await write(client);
    return { commit };
  };
  /** Until some statement of this database waits for an advisory lock. */
  const untilOneWaitsForTheLock = () =>
    vi.waitFor(
      async () => {
        const waiting = await pool.query(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
        );
        expect(waiting.rowCount).toBe(1);
      },
      { timeout: 5_000, interval: 10 },
    );

  it("a hold waiting for the blob's lock sees the deleting mark committed meanwhile, and waits for the delete", async () => {
    const bytes = Buffer.from("marked while a hold waited for the lock");
    const collection = await lockAsAnotherNode(bytes, (client) =>
      client.query(
        "INSERT INTO blob_holds (blob_sha256, node_id, deleting, held_until) VALUES ($1, 'node-b', 1, now() + interval '1 hour')",
        [sha256(bytes)],
      ),
    );
    let taken = false;
    const take = createSharedBlobHolds(db, "node-a")
      .take(sha256(bytes))
      .then((release) => {
        taken = true;
        return release;
      });
    await untilOneWaitsForTheLock();
    await collection.commit();
    // The lock went to the waiting hold as the mark committed: once this lock is granted, that
    // attempt is over. It must have checked after the lock (a statement checking with a snapshot
    // from before it would have taken the hold beside the mark).
    await (await lockAsAnotherNode(bytes, async () => {})).commit();
    expect(await holds(bytes)).toEqual([{ node_id: "node-b", deleting: 1 }]);
    expect(taken).toBe(false);
    // The delete is done: the waiting upload takes its hold.
    await pool.query("DELETE FROM blob_holds WHERE blob_sha256 = $1", [sha256(bytes)]);
    const release = await take;
    expect(await holds(bytes)).toEqual([{ node_id: "node-a", deleting: 0 }]);
    release();
    await vi.waitFor(async () => expect(await holds(bytes)).toEqual([]), { timeout: 5_000, interval: 10 });
  });

  it("collection waiting for the blob's lock sees the hold committed meanwhile, and deletes nothing", async () => {
    const bytes = Buffer.from("held while collection waited for the lock");
    const upload = await lockAsAnotherNode(bytes, (client) =>
      client.query(
        "INSERT INTO blob_holds (blob_sha256, node_id, held_until) VALUES ($1, 'node-a', now() + interval '1 hour')",
        [sha256(bytes)],
      ),
    );
    let removed = false;
    const collecting = createSharedBlobHolds(db, "node-b").deleteIfUnheld(sha256(bytes), async () => {
      removed = true;
    });
    await untilOneWaitsForTheLock();
    await upload.commit();
    expect(await collecting).toBe(false);
    expect(removed).toBe(false);
    expect(await holds(bytes)).toEqual([{ node_id: "node-a", deleting: 0 }]);
    await pool.query("DELETE FROM blob_holds WHERE blob_sha256 = $1", [sha256(bytes)]);
  });
});
