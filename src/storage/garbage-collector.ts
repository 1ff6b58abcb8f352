import { performance } from "node:perf_hooks";
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Clock } from "../domain/clock.js";
import { DomainError } from "../domain/errors.js";
import { eachConcurrently } from "../domain/concurrently.js";
import type { BlobReferenceCheck } from "./blob-keeper.js";
import type { BlobStore } from "./blob-store.js";

/** One blob that a collection deleted, or would delete in a dry run. */
export interface CollectedBlob {
  readonly sha256: string;
  readonly size: number;
  /** The package store it was in (blob-stores.ts key), when several were collected. */
  readonly store?: string;
}

/** What one collection did (or, in a dry run, would do). */
export interface CollectionResult {
  readonly dryRun: boolean;
  /** Blobs listed by the store. */
  readonly examined: number;
  /** Blobs no row references right now (garbage, whether old enough to delete or not). */
  readonly unreferenced: number;
  /** Unreferenced blobs kept because they were not yet seen unreferenced for the grace period. */
  readonly inGracePeriod: number;
  /** Deleted (or, in a dry run, that would be deleted). */
  readonly deleted: number;
  readonly bytesFreed: number;
  readonly blobs: readonly CollectedBlob[];
  readonly durationMs: number;
}

export interface GarbageCollectorDeps {
  readonly blobs: BlobStore;
  /**
   * Whether a row keeps the blob alive (blobReferenceCheck: the `blob_references` view); its
   * `unreferencedAmong`, when given, checks a whole batch of listed addresses in one go.
   */
  readonly isReferenced: BlobReferenceCheck;
  /**
   * Deletes the blob unless a row references it or an upload holds it, checked right before the
   * delete, and says whether it deleted it: BlobKeeper.discardIfUnused, so that an upload of the
   * same bytes that starts meanwhile either holds it first or waits for the deletion and stores
   * its own copy.
   */
  readonly discardIfUnused: (sha256: string) => Promise<boolean>;
  readonly clock: Clock;
  /** How long a blob must have been seen unreferenced before it is deleted; 0 = at once. */
  readonly graceMs: number;
  /** Listed addresses whose references are checked together. */
  readonly batchSize?: number;
  /** Deletions under way at once (DELETE_CONCURRENCY unless given). */
  readonly deleteConcurrency?: number;
  /** Called after a collection that deleted something (the metrics' cached store size). */
  readonly onDeleted?: () => void;
}

export interface GarbageCollector {
  /** Runs one collection; fails with conflict `GC_RUNNING` while another one runs. */
  collect(options?: { dryRun?: boolean }): Promise<CollectionResult>;
}

const DEFAULT_BATCH = 200;
/**
 * Longest stretch the collector works on the event loop before it lets other work run: uploads
 * beside a collection must not wait for it (issue 15: no more than 50 ms). Listing a store whose
 * pages arrive at once, checking a batch, or settling deletions could otherwise run on unbroken.
 * An upload passes through the event loop several times (body, blob, fsyncs, commit) and may wait
 * a slice at each: 2 ms kept the slowest upload beside a collection under 50 ms where 5 ms let one
 * reach 62 ms (bench/gc.ts), at no cost in the collection's time.
 */
const SLICE_MS = 2;
/**
 * How long a blob must have been seen unreferenced before it is deleted: longer than any upload
 * takes between storing its blob and committing the row that names it.
 */
export const GC_GRACE_MS = 3_600_000;
/** Deletions under way at once: enough to hide an object store's latency, few enough to leave it to uploads. */
const DELETE_CONCURRENCY = 8;

/**
 * Mark and sweep over the blob store, through nothing but the BlobStore interface (so it works on
 * every store). A blob is deleted only when it was seen unreferenced by two collections at least
 * the grace period apart (the first marks it, in memory) and, right before the delete, the keeper
 * finds no row referencing it and no upload holding it. The grace period covers writers that store
 * a blob before they commit the row naming it; the keeper covers uploads that find the same bytes
 * already stored. Nothing here must be finished after a crash: each delete stands alone, and marks
 * lost with the process only delay deletions by one collection (and the start-up sweep removes
 * every unreferenced blob anyway). The database is only read: listed addresses are checked a batch
 * at a time, and each deletion once more on its own right before it.
 */
export function createGarbageCollector(deps: GarbageCollectorDeps): GarbageCollector {
  const batchSize = Math.max(1, deps.batchSize ?? DEFAULT_BATCH);
  const unreferencedAmong = deps.isReferenced.unreferencedAmong ?? oneByOne(deps.isReferenced);
  /** Address -> when a collection first saw it unreferenced (ms): only the garbage, never the whole store. */
  let marks = new Map<string, number>();
  let running = false;

  async function collect({ dryRun = false }: { dryRun?: boolean } = {}): Promise<CollectionResult> {
    if (running) throw new DomainError("conflict", "GC_RUNNING", "A garbage collection is already running.");
    running = true;
    const started = Date.now();
    try {
      const slice = new TimeSlice();
      const now = deps.clock.now().getTime();
      const nextMarks = new Map<string, number>();
      const due: string[] = [];
      let examined = 0;
      let unreferenced = 0;
      let batch: string[] = [];
      const mark = async () => {
        for (const sha256 of await unreferencedAmong(batch)) {
          if (nextMarks.has(sha256)) continue;
          unreferenced++;
          const firstSeen = marks.get(sha256) ?? now;
          nextMarks.set(sha256, firstSeen);
          if (now - firstSeen >= deps.graceMs) due.push(sha256);
        }
        batch = [];
      };
      for await (const sha256 of deps.blobs.list()) {
        examined++;
        batch.push(sha256);
        if (batch.length >= batchSize) await mark();
        if (slice.spent()) await slice.yield();
      }
      await mark();
      // Blobs referenced again (or gone) lose their mark: a later unreferenced spell starts afresh.
      marks = nextMarks;

      const collected: CollectedBlob[] = [];
      await eachInSlices(due, deps.deleteConcurrency ?? DELETE_CONCURRENCY, slice, async (sha256) => {
        const size = (await deps.blobs.stat(sha256))?.size;
        if (size === undefined) {
          marks.delete(sha256);
          return;
        }
        if (dryRun) {
          // The same last check the real run makes, without the delete.
          if (!(await deps.isReferenced(sha256))) collected.push({ sha256, size });
          return;
        }
        if (await deps.discardIfUnused(sha256)) {
          marks.delete(sha256);
          collected.push({ sha256, size });
        }
      });
      if (!dryRun && collected.length > 0) deps.onDeleted?.();
      collected.sort((a, b) => (a.sha256 < b.sha256 ? -1 : 1));
      return {
        dryRun,
        examined,
        unreferenced,
        inGracePeriod: unreferenced - due.length,
        deleted: collected.length,
        bytesFreed: collected.reduce((sum, blob) => sum + blob.size, 0),
        blobs: collected,
        durationMs: Date.now() - started,
      };
    } finally {
      running = false;
    }
  }

  return { collect };
}

/** A batch check made of single ones, for callers that give only `isReferenced`. */
function oneByOne(isReferenced: (sha256: string) => Promise<boolean>) {
  return async (addresses: readonly string[]): Promise<string[]> => {
    const unreferenced: string[] = [];
    for (const sha256 of addresses) if (!(await isReferenced(sha256))) unreferenced.push(sha256);
    return unreferenced;
  };
}

/**
 * Work on the event loop measured by time rather than by count: a batch may be cheap (a directory
 * of the file store) or not (a page of an object store's listing), and only the time it takes
 * delays the uploads waiting behind it.
 */
class TimeSlice {
  private startedAt = performance.now();

  spent(): boolean {
    return performance.now() - this.startedAt >= SLICE_MS;
  }

  /** Lets timers and I/O (uploads) run, then starts a new slice. */
  async yield(): Promise<void> {
    await yieldToEventLoop();
    this.startedAt = performance.now();
  }
}

/** Runs `work` on every item, `concurrency` at a time, yielding whenever the slice is spent. */
function eachInSlices(
  items: readonly string[],
  concurrency: number,
  slice: TimeSlice,
  work: (item: string) => Promise<void>,
): Promise<void> {
  return eachConcurrently(items, concurrency, async (item) => {
    await work(item);
    if (slice.spent()) await slice.yield();
  });
}

/** Runs a collection every `intervalMs` (0 = never); returns the stop function. Failures go to `onError`. */
export function scheduleGarbageCollection<Result extends CollectionResult>(
  collector: { collect(): Promise<Result> },
  intervalMs: number,
  report: { onResult: (result: Result) => void; onError: (error: unknown) => void },
): () => void {
  if (intervalMs <= 0) return () => {};
  const timer = setInterval(() => {
    collector.collect().then(report.onResult, (error: unknown) => {
      // A collection still running (an on-demand one) is not a failure of the schedule.
      if (error instanceof DomainError && error.code === "GC_RUNNING") return;
      report.onError(error);
    });
  }, intervalMs);
  // The schedule never keeps the process alive on its own.
  timer.unref();
  return () => clearInterval(timer);
}
