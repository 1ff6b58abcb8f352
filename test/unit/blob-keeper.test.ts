import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createBlobKeeper } from "../../src/storage/blob-keeper.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";

/**
 * The keeper's promise (issue 11 section 7): an upload refused after storing its bytes deletes
 * them only if no other upload of the same bytes is using them, including one whose put has
 * found them stored but not yet returned, and one whose put starts while the deletion runs.
 */

let dir: string;
let store: BlobStore;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-keeper-"));
  store = createFileBlobStore(dir);
});
afterEach(async () => fs.rm(dir, { recursive: true, force: true }));

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const notReferenced = async () => false;

describe("BlobKeeper", () => {
  it("keeps a blob that a put found stored, even when the upload that stored it discards it before the put returns", async () => {
    const content = randomBytes(1000);
    const slowReturn = gate();
    let found: (() => void) | undefined;
    const foundIt = new Promise<void>((resolve) => {
      found = resolve;
    });
    // The second put returns late: the moment in which an upload used to lose its blob.
    let puts = 0;
    const delayed: BlobStore = {
      ...store,
      async put(source, options) {
        const info = await store.put(source, options);
        if (++puts === 2) {
          found?.();
          await slowReturn.opened;
        }
        return info;
      },
    };
    const keeper = createBlobKeeper(delayed, notReferenced);
    const a = await keeper.put(Readable.from([content]));

    const b = keeper.put(Readable.from([content]));
    await foundIt;
    a.release();
    await keeper.discardIfUnused(a.blob.sha256); // the first upload is refused now
    expect(await store.stat(a.blob.sha256)).toEqual({ size: 1000 });

    slowReturn.open();
    const held = await b;
    expect(held.blob.sha256).toBe(a.blob.sha256);
    held.release();
    await keeper.discardIfUnused(held.blob.sha256);
    expect(await store.stat(held.blob.sha256)).toBeUndefined();
  });

  it("lets a deletion under way finish before a put of the same bytes publishes them again", async () => {
    const content = randomBytes(1000);
    const slowDelete = gate();
    let deleting: (() => void) | undefined;
    const deletionStarted = new Promise<void>((resolve) => {
      deleting = resolve;
    });
    const delayed: BlobStore = {
      ...store,
      async delete(sha256) {
        deleting?.();
        await slowDelete.opened;
        await store.delete(sha256);
      },
    };
    const keeper = createBlobKeeper(delayed, notReferenced);
    const a = await keeper.put(Readable.from([content]));
    a.release();
    const discarded = keeper.discardIfUnused(a.blob.sha256);
    await deletionStarted;

    const b = keeper.put(Readable.from([content]));
    slowDelete.open();
    await discarded;
    const held = await b;
    expect(await store.stat(held.blob.sha256)).toEqual({ size: 1000 });
    held.release();
  });

  it("releases the claim of a put that fails after claiming the address", async () => {
    const content = randomBytes(1000);
    const failing: BlobStore = {
      ...store,
      async put(source, options) {
        await store.put(source, options);
        throw new Error("the disk went away after the claim");
      },
    };
    const keeper = createBlobKeeper(failing, notReferenced);
    await expect(keeper.put(Readable.from([content]))).rejects.toThrow("the disk went away");
    const sha256 = createHash("sha256").update(content).digest("hex");
    expect(await store.stat(sha256)).toEqual({ size: 1000 });
    await keeper.discardIfUnused(sha256);
    expect(await store.stat(sha256)).toBeUndefined();
  });

  it("closes the other store's copy when a hold's copy fails before reading it (the store down)", async () => {
    const other = createFileBlobStore(path.join(dir, "other"));
    const { sha256 } = await other.put(Readable.from([randomBytes(1000)]));
    const opened: Readable[] = [];
    const source: BlobStore = {
      ...other,
      async open(address, range) {
        const stream = await other.open(address, range);
        if (stream) opened.push(stream);
        return stream;
      },
    };
    const down: BlobStore = {
      ...store,
      async put() {
        throw new Error("the store is down");
      },
    };
    const keeper = createBlobKeeper(down, notReferenced, source);
    await expect(keeper.hold(sha256)).rejects.toThrow("the store is down");
    // Its file is closed now, not whenever garbage collection finds the handle.
    expect(opened.map((stream) => stream.destroyed)).toEqual([true]);
  });
});
