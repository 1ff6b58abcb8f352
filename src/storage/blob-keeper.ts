import type { Readable } from "node:stream";
import { DomainError } from "../domain/errors.js";
import type { BlobInfo, BlobStore, PutOptions } from "./blob-store.js";
import type { Db } from "./database.js";
import type { SharedBlobHolds } from "./postgres/blob-holds.js";

/** A blob in the store that a caller holds until `release`; no discardIfUnused deletes it meanwhile. */
export interface HeldBlob {
  readonly blob: BlobInfo;
  readonly release: () => void;
}

/**
 * Which blobs uploads in this process (universal packages and assets alike: one keeper per app)
 * are working with, so that a failed or replaced upload can
 * delete the blob it stored without pulling it from under another upload of the same bytes
 * (content addressing makes identical uploads share one blob). Anything not deleted here is left
 * to garbage collection, which must give unreferenced blobs a grace period.
 */
export interface BlobKeeper {
  /**
   * Stores the content (BlobStore.put) and holds its blob until `release`. The hold starts as soon
   * as the put knows the address, before it looks for the blob or publishes it, and a deletion of
   * the same bytes already under way finishes first: so a put that found the blob stored by a
   * concurrent upload keeps it even if that upload is refused and discards it at that moment.
   */
  put(source: Readable | AsyncIterable<Uint8Array>, options?: Omit<PutOptions, "beforePublish">): Promise<HeldBlob>;
  /**
   * Marks a blob stored earlier (a row references it, or another hold keeps it) as in use until
   * `release` is called. Fails with `unavailable` (retry) when it is gone: a deletion of the same
   * content removed it first.
   */
  hold(sha256: string): Promise<() => void>;
  /**
   * Deletes the blob when nothing references it and no upload holds it; otherwise leaves it.
   * Resolves true when this call deleted it (garbage collection counts what it freed).
   * `isReferenced` replaces the keeper's own check of the rows: a feed moved to another store
   * (feed-store-move.ts) drops its old copy here when no other feed's row names it.
   */
  discardIfUnused(sha256: string, isReferenced?: (sha256: string) => Promise<boolean>): Promise<boolean>;
}

/**
 * `copyFrom` (optional) is where `hold` finds a blob this store lacks: another store's copy of the
 * same bytes (a package imported from a feed on another store), copied here and checked by its SHA-256.
 */
/** The keeper of the package store a feed writes to (storage/blob-stores.ts), resolved at each call. */
export interface FeedKeepers {
  keeperFor(feedId: number): BlobKeeper;
  /**
   * As keeperFor, with the feed's store resolved once, at the keeper's first use, for all its
   * blobs: an archive import's thousands of files would each read the feed's storage setting (on
   * PostgreSQL a round trip). Without it (a keeper that is not resolved per feed), keeperFor.
   */
  pinnedKeeperFor?(feedId: number): BlobKeeper;
  /**
   * Deletes a blob of the feed's store unless a row references it or an upload (on any node) holds
   * it, in cluster mode too, where keeperFor's keeper never deletes: for blobs the caller knows it
   * alone wrote and dropped (multipart parts). Without it, garbage collection deletes them.
   */
  discardUnused?(feedId: number, sha256: string): Promise<boolean>;
}

export function createBlobKeeper(
  blobs: BlobStore,
  isReferenced: (sha256: string) => Promise<boolean>,
  copyFrom?: BlobStore,
  /** Cluster mode: the holds of every node (storage/postgres/blob-holds.ts), besides this process's own. */
  shared?: SharedBlobHolds,
): BlobKeeper {
  const held = new Map<string, number>();
  const deleting = new Map<string, Promise<void>>();
  // Bumped by every hold and release: a deletion decided before a change is not trusted after it.
  let epoch = 0;

  /** Holds the address at once (synchronously: no deletion can be decided in between); returns its release. */
  const claim = (sha256: string): (() => void) => {
    epoch++;
    held.set(sha256, (held.get(sha256) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      epoch++;
      const count = (held.get(sha256) ?? 1) - 1;
      if (count > 0) held.set(sha256, count);
      else held.delete(sha256);
    };
  };

  /** Copies another store's copy of the blob here (the address is claimed by the caller); false when none has it. */
  async function copyHere(sha256: string): Promise<boolean> {
    const source = await copyFrom?.open(sha256);
    if (source === undefined) return false;
    try {
      await blobs.put(source, { expected: { sha256 } });
    } catch (error) {
      // A store that failed before reading it (down, full) leaves the source open: its file is closed here.
      source.destroy();
      throw error;
    }
    return true;
  }

  /**
   * The local claim (taken synchronously, before the first await) and, in a cluster, the shared
   * hold; one release drops both.
   */
  async function claimEverywhere(sha256: string): Promise<() => void> {
    const release = claim(sha256);
    if (shared === undefined) return release;
    try {
      const releaseShared = await shared.take(sha256);
      return () => {
        release();
        releaseShared();
      };
    } catch (error) {
      release();
      throw error;
    }
  }

  return {
    async put(source, options = {}) {
      const claimed: { release?: () => void } = {};
      try {
        const blob = await blobs.put(source, {
          ...options,
          beforePublish: async (sha256) => {
            claimed.release = await claimEverywhere(sha256);
            // Then the put finds the blob absent and publishes its own copy (or, should the
            // deletion have failed, finds it still there).
            await deleting.get(sha256)?.catch(() => undefined);
          },
        });
        if (claimed.release === undefined) throw new Error("the blob store did not call beforePublish");
        return { blob, release: claimed.release };
      } catch (error) {
        claimed.release?.();
        throw error;
      }
    },

    async hold(sha256) {
      const releaseOnce = await claimEverywhere(sha256);
      try {
        await deleting.get(sha256);
        if ((await blobs.stat(sha256)) === undefined && !(await copyHere(sha256))) {
          throw new DomainError(
            "unavailable",
            "UPLOAD_RACED",
            "The stored content was deleted by a concurrent request while this one was using it; please retry.",
          );
        }
      } catch (error) {
        releaseOnce();
        throw error;
      }
      return releaseOnce;
    },

    async discardIfUnused(sha256, referenced = isReferenced) {
      const before = epoch;
      if (held.has(sha256) || deleting.has(sha256)) return false;
      if (await referenced(sha256)) return false;
      // Another upload may have taken (and even committed and released) it while we looked.
      if (epoch !== before || held.has(sha256) || deleting.has(sha256)) return false;
      if (shared === undefined) {
        const deletion = blobs.delete(sha256).finally(() => deleting.delete(sha256));
        deleting.set(sha256, deletion);
        await deletion;
        return true;
      }
      // In a cluster another node may hold it, or commit a row naming it, meanwhile: the shared
      // holds decide under the blob's lock, and mark it as being deleted until it is gone.
      let settle = () => {};
      const deletion = new Promise<void>((resolve) => (settle = resolve)).finally(() => deleting.delete(sha256));
      deleting.set(sha256, deletion);
      try {
        return await shared.deleteIfUnheld(sha256, () => blobs.delete(sha256));
      } finally {
        settle();
      }
    },
  };
}

/**
 * Whether any row keeps a blob alive, for one address; `unreferencedAmong` (optional) answers for
 * a whole batch at once, which garbage collection uses to mark a large store quickly.
 */
export interface BlobReferenceCheck {
  (sha256: string): Promise<boolean>;
  /** The addresses of `addresses` that no row references (each once, in no particular order). */
  readonly unreferencedAmong?: (addresses: readonly string[]) => Promise<string[]>;
}

/**
 * The `blob_references` view lists every table whose rows keep blobs alive. A batch is one query,
 * each address looked up in each table's blob index: a collection over 100,000 blobs makes 500 of
 * them (of about a millisecond each, on the event loop) instead of 100,000 single lookups each
 * with its own promise.
 */
export function blobReferenceCheck(db: Db): BlobReferenceCheck {
  const reference = db.prepare<[string], { one: number }>(
    "SELECT 1 AS one FROM blob_references WHERE blob_sha256 = ? LIMIT 1",
  );
  const unreferenced = db
    .prepare<[string], string>(
      `SELECT DISTINCT value FROM json_each(?)
       WHERE NOT EXISTS (SELECT 1 FROM blob_references WHERE blob_sha256 = value)`,
    )
    .pluck();
  return Object.assign(async (sha256: string) => reference.get(sha256) !== undefined, {
    unreferencedAmong: async (addresses: readonly string[]) =>
      addresses.length === 0 ? [] : unreferenced.all(JSON.stringify(addresses)),
  });
}
