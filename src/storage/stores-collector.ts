import { DomainError } from "../domain/errors.js";
import type { Clock } from "../domain/clock.js";
import type { BlobReferenceCheck } from "./blob-keeper.js";
import { canAbortAbandonedUploads } from "./blob-store.js";
import type { StoreEntry } from "./blob-stores.js";
import { type CollectionResult, createGarbageCollector, type GarbageCollector } from "./garbage-collector.js";

/** What one collection did in one package store; `error` when that store could not be collected. */
export interface StoreCollection {
  readonly store: string;
  readonly examined: number;
  readonly deleted: number;
  readonly bytesFreed: number;
  /** Unfinished uploads left on the store's server (S3 multipart) that were aborted. */
  readonly abandonedUploads?: number;
  readonly error?: string;
}

/** A collection over every store: the totals of CollectionResult, and each store's part. */
export interface EveryStoreCollection extends CollectionResult {
  readonly stores: readonly StoreCollection[];
}

export interface EveryStoreCollectorDeps {
  /**
   * The stores to collect, asked at each collection (a feed may have named a new one, in a cluster
   * through another node: BlobStores.allRecorded).
   */
  readonly stores: () => readonly StoreEntry[] | Promise<readonly StoreEntry[]>;
  /** blobReferenceCheck: its batch check marks each store quickly. */
  readonly isReferenced: BlobReferenceCheck;
  readonly clock: Clock;
  readonly graceMs: number;
  readonly onDeleted?: () => void;
}

export interface EveryStoreCollector {
  collect(options?: { dryRun?: boolean }): Promise<EveryStoreCollection>;
}

/**
 * Deletions under way at once in the data directory's store: each is a quick local unlink, and
 * every one under way holds a thread of libuv's pool (4 by default) that uploads beside the
 * collection need for their own writes and fsyncs.
 */
const DISK_DELETE_CONCURRENCY = 2;

/** An upload on a store's server begun this long ago is abandoned (a crash, a lost connection). */
const ABANDONED_UPLOAD_MS = 24 * 3_600_000;

/**
 * Garbage collection of every package store, one after the other, each with its own collector
 * (garbage-collector.ts: its marks, its keeper). A store that cannot be reached is reported in
 * `stores` and the others are still collected: an object store being down must not let the disk fill.
 */
export function createEveryStoreCollector(deps: EveryStoreCollectorDeps): EveryStoreCollector {
  const collectors = new Map<string, GarbageCollector>();
  let running = false;

  const collectorOf = (entry: StoreEntry) => {
    let collector = collectors.get(entry.key);
    if (collector === undefined) {
      collector = createGarbageCollector({
        blobs: entry.blobs,
        isReferenced: deps.isReferenced,
        discardIfUnused: (sha256) => entry.collectThrough.discardIfUnused(sha256),
        clock: deps.clock,
        graceMs: deps.graceMs,
        ...(entry.kind === "disk" ? { deleteConcurrency: DISK_DELETE_CONCURRENCY } : {}),
        ...(deps.onDeleted ? { onDeleted: deps.onDeleted } : {}),
      });
      collectors.set(entry.key, collector);
    }
    return collector;
  };

  return {
    async collect({ dryRun = false } = {}) {
      if (running) throw new DomainError("conflict", "GC_RUNNING", "A garbage collection is already running.");
      running = true;
      const started = Date.now();
      try {
        const parts: Array<{ store: string; result?: CollectionResult; abandoned?: number; error?: string }> = [];
        for (const entry of await deps.stores()) {
          try {
            const result = await collectorOf(entry).collect({ dryRun });
            const abandoned =
              !dryRun && canAbortAbandonedUploads(entry.blobs)
                ? (await entry.blobs.abortAbandonedUploads(ABANDONED_UPLOAD_MS)).files
                : undefined;
            parts.push({ store: entry.key, result, ...(abandoned === undefined ? {} : { abandoned }) });
          } catch (error) {
            parts.push({ store: entry.key, error: error instanceof Error ? error.message : String(error) });
          }
        }
        const results = parts.flatMap((part) => (part.result ? [part.result] : []));
        const sum = (field: "examined" | "unreferenced" | "inGracePeriod" | "deleted" | "bytesFreed") =>
          results.reduce((total, result) => total + result[field], 0);
        return {
          dryRun,
          examined: sum("examined"),
          unreferenced: sum("unreferenced"),
          inGracePeriod: sum("inGracePeriod"),
          deleted: sum("deleted"),
          bytesFreed: sum("bytesFreed"),
          blobs: parts.flatMap((part) => (part.result?.blobs ?? []).map((blob) => ({ ...blob, store: part.store }))),
          durationMs: Date.now() - started,
          stores: parts.map(({ store, result, abandoned, error }) => ({
            store,
            examined: result?.examined ?? 0,
            deleted: result?.deleted ?? 0,
            bytesFreed: result?.bytesFreed ?? 0,
            ...(abandoned === undefined ? {} : { abandonedUploads: abandoned }),
            ...(error === undefined ? {} : { error }),
          })),
        };
      } finally {
        running = false;
      }
    },
  };
}
