import { DomainError } from "../domain/errors.js";
import type { BlobStore } from "./blob-store.js";
import type { Db } from "./database.js";

/**
 * Which blobs uploads in this process (universal packages and assets alike: one keeper per app)
 * are working with, so that a failed or replaced upload can
 * delete the blob it stored without pulling it from under another upload of the same bytes
 * (content addressing makes identical uploads share one blob). Anything not deleted here is left
 * to garbage collection, which must give unreferenced blobs a grace period.
 */
export interface BlobKeeper {
  /**
   * Marks a blob that a put just returned as in use until `release` is called. Fails with
   * `unavailable` (retry) in the rare case that a deletion of the same content removed it after
   * the put found it already stored.
   */
  hold(sha256: string): Promise<() => void>;
  /** Deletes the blob when nothing references it and no upload holds it; otherwise leaves it. */
  discardIfUnused(sha256: string): Promise<void>;
}

export function createBlobKeeper(blobs: BlobStore, isReferenced: (sha256: string) => Promise<boolean>): BlobKeeper {
  const held = new Map<string, number>();
  const deleting = new Map<string, Promise<void>>();
  // Bumped by every hold and release: a deletion decided before a change is not trusted after it.
  let epoch = 0;

  const release = (sha256: string) => {
    epoch++;
    const count = (held.get(sha256) ?? 1) - 1;
    if (count > 0) held.set(sha256, count);
    else held.delete(sha256);
  };

  return {
    async hold(sha256) {
      epoch++;
      held.set(sha256, (held.get(sha256) ?? 0) + 1);
      let released = false;
      const releaseOnce = () => {
        if (released) return;
        released = true;
        release(sha256);
      };
      try {
        await deleting.get(sha256);
        if ((await blobs.stat(sha256)) === undefined) {
          throw new DomainError(
            "unavailable",
            "UPLOAD_RACED",
            "The uploaded content was removed by a concurrent failed upload of the same bytes; please retry.",
          );
        }
      } catch (error) {
        releaseOnce();
        throw error;
      }
      return releaseOnce;
    },

    async discardIfUnused(sha256) {
      const before = epoch;
      if (held.has(sha256) || deleting.has(sha256)) return;
      if (await isReferenced(sha256)) return;
      // Another upload may have taken (and even committed and released) it while we looked.
      if (epoch !== before || held.has(sha256) || deleting.has(sha256)) return;
      const deletion = blobs.delete(sha256).finally(() => deleting.delete(sha256));
      deleting.set(sha256, deletion);
      await deletion;
    },
  };
}

/** Whether any row keeps the blob alive: the `blob_references` view lists every such table. */
export function blobReferenceCheck(db: Db): (sha256: string) => Promise<boolean> {
  const reference = db.prepare<[string], { one: number }>(
    "SELECT 1 AS one FROM blob_references WHERE blob_sha256 = ? LIMIT 1",
  );
  return async (sha256) => reference.get(sha256) !== undefined;
}
