import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type BlobKeeper, createBlobKeeper } from "../../src/storage/blob-keeper.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  type CollectionResult,
  createGarbageCollector,
  type GarbageCollector,
  scheduleGarbageCollection,
} from "../../src/storage/garbage-collector.js";
import { manualClock } from "../helpers/clock.js";

/**
 * The collector on a real file store with a real keeper; "rows" are a set the test controls.
 * Grace 0 where the point is the keeper's protection alone: the hardest case for it.
 */

let dir: string;
let blobs: BlobStore;
let keeper: BlobKeeper;
let referenced: Set<string>;
const time = manualClock();

function collector(graceMs: number, batchSize?: number): GarbageCollector {
  return createGarbageCollector({
    blobs,
    isReferenced: async (sha256) => referenced.has(sha256),
    discardIfUnused: (sha256) => keeper.discardIfUnused(sha256),
    clock: time.clock,
    graceMs,
    ...(batchSize === undefined ? {} : { batchSize }),
  });
}

const bytesOf = (text: string) => Readable.from([Buffer.from(text)]);

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-gc-"));
  blobs = createFileBlobStore(dir);
  referenced = new Set();
  keeper = createBlobKeeper(blobs, async (sha256) => referenced.has(sha256));
});
afterEach(async () => fs.rm(dir, { recursive: true, force: true }));

describe("garbage collector", () => {
  it("keeps a blob an upload in progress holds, and frees it once released unreferenced", async () => {
    const held = await keeper.put(bytesOf("in flight"));
    const gc = collector(0);
    expect(await gc.collect()).toMatchObject({ examined: 1, unreferenced: 1, deleted: 0 });
    expect(await blobs.stat(held.blob.sha256)).toBeDefined();
    held.release();
    expect(await gc.collect()).toMatchObject({ deleted: 1, bytesFreed: 9 });
    expect(await blobs.stat(held.blob.sha256)).toBeUndefined();
  });

  it("deletes only after two sightings the grace period apart; a reference in between resets the mark", async () => {
    const { blob, release } = await keeper.put(bytesOf("garbage"));
    release();
    const gc = collector(60_000);
    expect(await gc.collect()).toMatchObject({ unreferenced: 1, inGracePeriod: 1, deleted: 0 });
    time.advance(30_000);
    referenced.add(blob.sha256);
    expect(await gc.collect()).toMatchObject({ unreferenced: 0, deleted: 0 });
    referenced.delete(blob.sha256);
    time.advance(30_000);
    expect(await gc.collect()).toMatchObject({ inGracePeriod: 1, deleted: 0 });
    time.advance(60_000);
    expect(await gc.collect({ dryRun: true })).toMatchObject({ deleted: 1, bytesFreed: 7 });
    expect(await blobs.stat(blob.sha256)).toBeDefined();
    expect(await gc.collect()).toMatchObject({ deleted: 1, bytesFreed: 7 });
    expect(await blobs.stat(blob.sha256)).toBeUndefined();
  });

  it("marks through the batch check when the reference check has one, batchSize addresses at a time", async () => {
    const stored: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { blob, release } = await keeper.put(bytesOf(`batched ${i}`));
      release();
      stored.push(blob.sha256);
    }
    referenced.add(stored[0] as string);
    referenced.add(stored[3] as string);
    const batches: number[] = [];
    const isReferenced = Object.assign(async (sha256: string) => referenced.has(sha256), {
      unreferencedAmong: async (addresses: readonly string[]) => {
        batches.push(addresses.length);
        return addresses.filter((sha256) => !referenced.has(sha256));
      },
    });
    const gc = createGarbageCollector({
      blobs,
      isReferenced,
      discardIfUnused: (sha256) => keeper.discardIfUnused(sha256),
      clock: time.clock,
      graceMs: 0,
      batchSize: 2,
    });
    expect(await gc.collect()).toMatchObject({ examined: 5, unreferenced: 3, deleted: 3 });
    expect(batches).toEqual([2, 2, 1]);
    for (const sha256 of stored) expect((await blobs.stat(sha256)) !== undefined).toBe(referenced.has(sha256));
  });

  it("one collection at a time: a second is refused with GC_RUNNING", async () => {
    for (let i = 0; i < 5; i++) (await keeper.put(bytesOf(`blob ${i}`))).release();
    const gc = collector(0, 1);
    const first = gc.collect();
    await expect(gc.collect()).rejects.toMatchObject({ code: "GC_RUNNING" });
    expect(await first).toMatchObject({ deleted: 5 });
  });

  it("uploads of the same bytes racing collections never lose the blob they hold", async () => {
    const gc = collector(0, 1);
    let stop = false;
    let deletions = 0;
    const collecting = (async () => {
      while (!stop) deletions += (await gc.collect()).deleted;
    })();
    const uploads = Array.from({ length: 4 }, async () => {
      for (let round = 0; round < 50; round++) {
        const { blob, release } = await keeper.put(bytesOf("same bytes every time"));
        // While held (as between an upload's put and its row's commit), the bytes are there.
        await new Promise((resolve) => setImmediate(resolve));
        expect(await blobs.stat(blob.sha256)).toEqual({ size: 21 });
        const stream = await blobs.open(blob.sha256);
        expect(stream).toBeDefined();
        stream?.destroy();
        release();
      }
    });
    await Promise.all(uploads);
    stop = true;
    await collecting;
    // The collector did take the released blob between uploads: the race was real.
    expect(deletions).toBeGreaterThan(0);
  });
});

describe("scheduled collections", () => {
  it("runs every interval, reports results and failures (not GC_RUNNING), and stops; 0 never runs", async () => {
    vi.useFakeTimers();
    try {
      const outcomes: Array<() => Promise<CollectionResult>> = [
        async () => ({ deleted: 1 }) as CollectionResult,
        async () => {
          throw new DomainError("conflict", "GC_RUNNING", "running");
        },
        async () => {
          throw new Error("disk gone");
        },
      ];
      let runs = 0;
      const fake: GarbageCollector = { collect: () => (outcomes[runs++] as () => Promise<CollectionResult>)() };
      const results: unknown[] = [];
      const errors: unknown[] = [];
      const report = { onResult: (r: unknown) => results.push(r), onError: (e: unknown) => errors.push(e) };
      expect(scheduleGarbageCollection(fake, 0, report)).toBeTypeOf("function");
      vi.advanceTimersByTime(10_000);
      expect(runs).toBe(0);
      const stop = scheduleGarbageCollection(fake, 1000, report);
      vi.advanceTimersByTime(999);
      expect(runs).toBe(0);
      vi.advanceTimersByTime(2001);
      expect(runs).toBe(3);
      stop();
      vi.advanceTimersByTime(5000);
      expect(runs).toBe(3);
      await vi.waitFor(() => {
        expect(results).toEqual([{ deleted: 1 }]);
        expect(errors.map((e) => (e as Error).message)).toEqual(["disk gone"]);
      });
    } finally {
      vi.useRealTimers();
    }
  });
});
