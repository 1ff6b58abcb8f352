import type pg from "pg";
import { DomainError } from "../../domain/errors.js";
import { type PostgresDb, quietTransaction } from "./database.js";

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
 * A row a node never dropped (it died) stops counting at `held_until`.
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
const HOLD_HOURS = 6;
/** Longer than one blob's delete takes: a collection that died mid-delete stops blocking uploads then. */
const DELETING_MINUTES = 10;
/** How long an upload waits for a delete of the same bytes before it gives up (503, retry). */
const WAIT_FOR_DELETE_MS = 60_000;
const RETRY_MS = 50;

/** The blob's advisory lock (one-key form, apart from ADVISORY_LOCKS' two-key ones): its address's first 64 bits. */
const LOCK_BLOB = "SELECT pg_advisory_xact_lock(('x' || substr($1::text, 1, 16))::bit(64)::bigint)";
const LIVE = "blob_sha256 = $1 AND held_until > now()";

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

  /** The hold's id, or undefined while collection is deleting the blob. */
  const tryTake = (sha256: string) =>
    quietTransaction(db, async (client) => {
      await client.query(LOCK_BLOB, [sha256]);
      if ((await client.query(`SELECT 1 FROM blob_holds WHERE ${LIVE} AND deleting = 1`, [sha256])).rowCount) {
        return undefined;
      }
      const inserted = await client.query<{ id: number }>(
        `INSERT INTO blob_holds (blob_sha256, node_id, held_until)
         VALUES ($1, $2, now() + make_interval(hours => ${HOLD_HOURS})) RETURNING id`,
        [sha256, nodeId],
      );
      return inserted.rows[0]?.id;
    });

  return {
    async take(sha256) {
      const until = performance.now() + WAIT_FOR_DELETE_MS;
      for (;;) {
        const id = await tryTake(sha256);
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
      const mark = await quietTransaction(db, async (client: pg.PoolClient) => {
        await client.query(LOCK_BLOB, [sha256]);
        if ((await client.query(`SELECT 1 FROM blob_holds WHERE ${LIVE}`, [sha256])).rowCount) return undefined;
        // Under the lock: a row committed by an upload that has since dropped its hold is seen here.
        const referenced = await client.query("SELECT 1 FROM blob_references WHERE blob_sha256 = $1 LIMIT 1", [sha256]);
        if (referenced.rowCount) return undefined;
        const inserted = await client.query<{ id: number }>(
          `INSERT INTO blob_holds (blob_sha256, node_id, deleting, held_until)
           VALUES ($1, $2, 1, now() + make_interval(mins => ${DELETING_MINUTES})) RETURNING id`,
          [sha256, nodeId],
        );
        return inserted.rows[0]?.id;
      });
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
