import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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
  const holds = async () => (await pool.query("SELECT node_id, deleting FROM blob_holds ORDER BY id")).rows;

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
});
