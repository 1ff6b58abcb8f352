import { DomainError } from "../../domain/errors.js";
import { type PostgresDb, readRows } from "./database.js";

/**
 * BlobKeeper's holds across the nodes of a cluster (migrations/postgres/0005-blob-holds.sql). On
 * one machine the keeper's in-process holds keep garbage collection off a blob an upload is
 * working with; in a cluster the upload may be on another node, so each hold is also a row, and
 * collection's delete and an upload's hold take turns on the blob's advisory lock:
 * - a hold is recorded once the upload knows the blob's address, before it looks for the blob, and
 *   dropped after the row naming the blob committed (HeldBlob.release);
 * - collection deletes only when, under the lock, no hold names the blob and no row references it,
 *   and marks the blob `deleting` until the delete is done; an upload of the same bytes that comes
 *   meanwhile waits for the mark to go, then finds the blob absent and stores its own copy.
 * A row a node never dropped (it died) stops counting at `held_until`. Taking a hold and marking a
 * delete are each one call of a function of migrations/postgres/0011, which takes the lock.
 */
export interface SharedBlobHolds {
  /** Holds the blob for this node (waiting while collection deletes it); resolves the release. */
  take(sha256: string): Promise<() => void>;
  /**
   * Runs `remove` if no node holds the blob and no row references it, marking it as being deleted
   * meanwhile; whether it ran.
   */
  deleteIfUnheld(sha256: string, remove: () => Promise<void>): Promise<boolean>;
}

/** Longer than any upload takes from knowing its address to committing its row. */
const HOLD_FOR = "make_interval(hours => 6)";
/** Longer than one blob's delete takes: a collection that died mid-delete stops blocking uploads then. */
const MARK_FOR = "make_interval(mins => 10)";
/** How long an upload waits for a delete of the same bytes before it gives up (503, retry). */
const WAIT_FOR_DELETE_MS = 60_000;
const RETRY_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function createSharedBlobHolds(
  db: PostgresDb,
  nodeId: string,
  onError: (error: unknown) => void = () => {},
): SharedBlobHolds {
  /** Never rejects: a hold that could not be dropped stops counting at its held_until. */
  const drop = (id: number): Promise<void> =>
    db.pool.query("DELETE FROM blob_holds WHERE id = $1", [id]).then(
      () => undefined,
      (error: unknown) => onError(error),
    );

  /**
   * One round trip to a function of 0011 that takes the blob's lock, checks and inserts (a plain
   * statement could not: it would check with a snapshot from before the lock). Through readRows,
   * whose checkout the change feed takes for one that notifies nothing: no trigger is on
   * blob_holds, as no cache reads it. The new row's id, or undefined when the function refused.
   */
  const callReturningId = async (fn: string, sha256: string, lasting: string) => {
    const [row] = await readRows<{ id: number | null }>(db, `SELECT ${fn}($1, $2, ${lasting}) AS id`, [sha256, nodeId]);
    return row?.id ?? undefined;
  };

  return {
    async take(sha256) {
      const until = performance.now() + WAIT_FOR_DELETE_MS;
      for (;;) {
        // Undefined while collection is deleting the blob.
        const id = await callReturningId("wharf_take_blob_hold", sha256, HOLD_FOR);
        if (id !== undefined) return () => void drop(id);
        if (performance.now() > until) {
          throw new DomainError(
            "unavailable",
            "UPLOAD_RACED",
            "The same content is being deleted by garbage collection on another node; please retry.",
          );
        }
        await sleep(RETRY_MS);
      }
    },

    async deleteIfUnheld(sha256, remove) {
      // Undefined when a live hold or a row names the blob.
      const mark = await callReturningId("wharf_mark_blob_deleting", sha256, MARK_FOR);
      if (mark === undefined) return false;
      try {
        await remove();
      } finally {
        // Awaited: an upload of the same bytes waiting for the mark goes on at once.
        await drop(mark);
      }
      return true;
    },
  };
}
