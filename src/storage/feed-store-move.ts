import type { Clock } from "../domain/clock.js";
import { conflict, DomainError } from "../domain/errors.js";
import type { BlobStores, StoreEntry } from "./blob-stores.js";
import { byDatabase, type MetadataDb } from "./metadata-db.js";
import { defaultNodeId } from "./postgres/cluster-nodes.js";
import { createPostgresFeedStoreMoveRepository } from "./feed-store-move-repository-postgres.js";
import {
  createFeedStoreMoveRepository,
  type FeedBlob,
  type MovePhase,
  type MoveProgress,
  type MoveRow,
} from "./feed-store-move-repository.js";

export type { MoveRow, MoveState } from "./feed-store-move-repository.js";

/**
 * Moving a feed's blobs to the package store its storage setting now names (issue 15 section 4).
 *
 * The setting switches at once, so new uploads go to the new store while the feed keeps serving
 * (the reader finds a blob in whichever store holds it). A mover then walks the blobs the feed's
 * rows reference, in address order: `copying` puts each into the new store through its keeper,
 * which checks the SHA-256 of the bytes it copies; `deleting` makes sure each is still there (an
 * upload begun before the switch may have put it in the old store after `copying` passed it),
 * then drops the copies in every other store that no other feed's row names and no upload there
 * holds (dedupe across feeds: another feed may live on the old store). Copies are dropped from
 * every other store, not only the one the feed came from, so that a feed that earlier changed
 * stores with "new uploads only" ends up wholly in its store too.
 *
 * Every step is idempotent and the row records how far a phase got (its cursor, every few blobs),
 * so a move the process stopped in (crash, restart) resumes from its row at the next start (in a
 * cluster, on the leading node as soon as the node running it is gone: resumeOrphaned). A
 * failed step (a blob in no store, a store down) marks the move failed with the error; the feed
 * keeps serving, and a retry resumes where it stopped.
 */
export interface FeedStoreMoves {
  /** The feed's latest move; undefined when it never moved. */
  find(feedId: number): Promise<MoveRow | undefined>;
  /**
   * Applies `change` (the feed's new storage setting) and, when it changed the feed's store, the
   * feed has blobs and `move` is not false, moves them there in the background (false = new
   * uploads only). Refuses (409 MOVE_RUNNING) while a move
   * of the feed is under way: the operator waits for it, or for its failure, before changing again.
   */
  changeStore<T>(feedId: number, move: boolean | undefined, change: () => Promise<T>): Promise<ChangedStore<T>>;
  /**
   * Resumes the feed's failed move where it stopped; with no failed move, moves every blob of the
   * feed into its current store (e.g. after a "new uploads only" change). 409 MOVE_RUNNING while one runs.
   */
  retry(feedId: number): Promise<MoveRow>;
  /**
   * Resumes the moves (or the feed's move) this process left under way when it stopped: at start-up
   * on every node (in a cluster, those recorded as this node's).
   */
  resumeUnfinished(feedId?: number): Promise<void>;
  /**
   * The leading node's part: resumes, now and then every `everyMs` (0: only now), every move under
   * way that no running node runs (its node stopped or was killed), until the returned stop. On one
   * machine that is every move under way, as resumeUnfinished.
   */
  resumeOrphaned(everyMs: number): () => void;
  /** Lets running moves stop after their current blob (their rows keep them for the next start). */
  stop(): Promise<void>;
}

export interface ChangedStore<T> {
  readonly result: T;
  /** The move begun (or retried); undefined when nothing moves. */
  readonly move?: MoveRow;
}

/** Test seams: called after each blob a phase has finished (`done` counts the blobs of that phase). */
export interface FeedStoreMoveHooks {
  readonly afterBlob?: (feedId: number, phase: MovePhase, done: number) => Promise<void> | void;
}

export interface FeedStoreMovesDeps {
  readonly db: MetadataDb;
  readonly stores: BlobStores;
  readonly clock: Clock;
  /** In a cluster: this node's cluster_nodes node_id, recorded as the node running a move. */
  readonly nodeId?: string;
  readonly log?: { warn(fields: object, message: string): void };
  readonly hooks?: FeedStoreMoveHooks;
}

/** Progress is written after this many blobs, or this long, whichever comes first. */
const SAVE_EVERY_BLOBS = 5;
const SAVE_EVERY_MS = 500;

const moveRunning = () =>
  conflict("MOVE_RUNNING", "The feed's blobs are being moved to another store; wait until the move is done or failed.");

export function createFeedStoreMoves(deps: FeedStoreMovesDeps): FeedStoreMoves {
  const { stores } = deps;
  const repo = byDatabase(deps.db, createFeedStoreMoveRepository, (postgres) =>
    createPostgresFeedStoreMoveRepository(postgres, deps.nodeId ?? defaultNodeId()),
  );
  const now = () => deps.clock.now().toISOString();
  const running = new Map<number, Promise<void>>();
  /** Feeds whose setting is being changed right now (one change at a time per feed). */
  const changing = new Set<number>();
  let stopping = false;

  const isUnderWay = async (feedId: number) => {
    const state = (await repo.find(feedId))?.state;
    return running.has(feedId) || state === "copying" || state === "deleting";
  };

  function launch(feedId: number): void {
    if (stopping || running.has(feedId)) return;
    const run = moveBlobs(feedId)
      // Only the database can fail here (the row could not be written): the row resumes at the next start.
      .catch((error: unknown) => deps.log?.warn({ feedId, err: error }, "a feed's move stopped"))
      .finally(() => running.delete(feedId));
    running.set(feedId, run);
  }

  // The row is read before the launch: the move writes it only after its first blob, so this is
  // the row as it was read right after the launch while the repository was synchronous.
  async function begin(feedId: number, from: string, to: string, totals?: { blobs: number; bytes: number }) {
    await repo.begin(feedId, from, to, totals ?? (await repo.totals(feedId)), now());
    const row = (await repo.find(feedId)) as MoveRow;
    launch(feedId);
    return row;
  }

  async function resumeFailed(feedId: number): Promise<MoveRow> {
    await repo.resume(feedId, now());
    const row = (await repo.find(feedId)) as MoveRow;
    launch(feedId);
    return row;
  }

  async function moveBlobs(feedId: number): Promise<void> {
    let row = await repo.find(feedId);
    if (row === undefined || (row.state !== "copying" && row.state !== "deleting")) return;
    let phase: MovePhase = row.state;
    try {
      // The store may be new to this node: another node was asked to move, then stopped.
      const target = (await stores.allRecorded()).find((entry) => entry.key === row?.toStore);
      if (target === undefined) {
        throw new DomainError("unavailable", "MOVE_STORE_UNKNOWN", `The store ${row.toStore} is not configured.`);
      }
      if (phase === "copying") {
        if (!(await walk(row, phase, (blob) => holdIn(target, feedId, blob.sha256).then((release) => release())))) {
          return;
        }
        if (!(await repo.startDeleting(feedId, now()))) return;
        phase = "deleting";
        row = (await repo.find(feedId)) as MoveRow;
      }
      if (!(await walk(row, phase, (blob) => dropOldCopies(target, feedId, blob.sha256)))) return;
      await repo.finish(feedId, now());
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      await repo.fail(feedId, phase, message, now());
      deps.log?.warn({ feedId, phase, error: message }, "moving a feed's blobs to its new store failed");
    }
  }

  /**
   * Runs `step` on each blob of the feed after the row's cursor and records the progress every few
   * blobs. False when the move stopped (the process is stopping, or the feed was deleted).
   */
  async function walk(row: MoveRow, phase: MovePhase, step: (blob: FeedBlob) => Promise<unknown>): Promise<boolean> {
    const { feedId } = row;
    let progress: MoveProgress = row;
    let unsaved = 0;
    let savedAt = Date.now();
    let done = 0;
    // The blobs as the phase (re)starts: one uploaded since goes to the new store anyway, and one
    // an upload begun before the switch left in the old store stays readable there.
    const blobs = await repo.blobsOf(feedId);
    for (let i = firstAfter(blobs, progress.cursor); i < blobs.length; i++) {
      const blob = blobs[i] as FeedBlob;
      if (stopping) return false;
      try {
        await step(blob);
      } catch (error) {
        // A failed move shows how far it got (and a retry resumes there).
        await repo.progress(feedId, progress, now());
        throw error;
      }
      progress = phase === "copying" ? counted(progress, blob) : { ...progress, cursor: blob.sha256 };
      await deps.hooks?.afterBlob?.(feedId, phase, ++done);
      if (++unsaved >= SAVE_EVERY_BLOBS || Date.now() - savedAt >= SAVE_EVERY_MS) {
        if (!(await repo.progress(feedId, progress, now()))) return false;
        unsaved = 0;
        savedAt = Date.now();
      }
    }
    return await repo.progress(feedId, progress, now());
  }

  /**
   * Holds the blob in the target store, copying it from whichever store has it when it is missing
   * (the keeper checks the copy's SHA-256). A blob the feed no longer references is passed over.
   */
  async function holdIn(target: StoreEntry, feedId: number, sha256: string): Promise<() => void> {
    try {
      return await target.keeper.hold(sha256);
    } catch (error) {
      if (!(error instanceof DomainError && error.code === "UPLOAD_RACED")) throw error;
      if (!(await repo.referencedBy(feedId, sha256))) return () => undefined;
      throw new DomainError(
        "unavailable",
        "MOVE_SOURCE_MISSING",
        `The blob ${sha256} that the feed references is in no package store.`,
      );
    }
  }

  /**
   * With the blob held in the target, drops the other stores' copies that no other feed needs. The
   * store the feed writes to now is left alone too: its setting may have changed meanwhile through
   * the feed's `packageStore` (which changes stores for new uploads only).
   */
  async function dropOldCopies(target: StoreEntry, feedId: number, sha256: string): Promise<void> {
    const release = await holdIn(target, feedId, sha256);
    try {
      const elsewhere = () => repo.referencedElsewhere(feedId, sha256);
      const kept = new Set([target.key, (await stores.forFeed(feedId)).key]);
      for (const entry of stores.all()) {
        if (!kept.has(entry.key)) await entry.keeper.discardIfUnused(sha256, elsewhere);
      }
    } finally {
      release();
    }
  }

  return {
    find: (feedId) => repo.find(feedId),

    async changeStore(feedId, move, change) {
      // Claimed before the row is read: a second change or retry of the feed meanwhile is refused,
      // as when the read took no turn of the event loop.
      if (changing.has(feedId)) throw moveRunning();
      changing.add(feedId);
      try {
        if (await isUnderWay(feedId)) throw moveRunning();
        const from = (await stores.forFeed(feedId)).key;
        const result = await change();
        const to = (await stores.forFeed(feedId)).key;
        if (move === false) return { result };
        const previous = await repo.find(feedId);
        if (to === from) {
          // Posting the setting of a failed move again retries it.
          const retried = previous?.state === "failed" && previous.toStore === to;
          return retried ? { result, move: await resumeFailed(feedId) } : { result };
        }
        const totals = await repo.totals(feedId);
        if (totals.blobs === 0) return { result };
        return { result, move: await begin(feedId, from, to, totals) };
      } finally {
        changing.delete(feedId);
      }
    },

    async retry(feedId) {
      // Claimed as in changeStore, until the move is launched (then `running` refuses a second one).
      if (changing.has(feedId)) throw moveRunning();
      changing.add(feedId);
      try {
        if (await isUnderWay(feedId)) throw moveRunning();
        const previous = await repo.find(feedId);
        const current = (await stores.forFeed(feedId)).key;
        if (previous?.state === "failed" && previous.toStore === current) return await resumeFailed(feedId);
        return await begin(feedId, previous?.toStore ?? current, current);
      } finally {
        changing.delete(feedId);
      }
    },

    async resumeUnfinished(only) {
      if (stopping) return;
      for (const feedId of await repo.claimUnfinished(false)) if (only === undefined || only === feedId) launch(feedId);
    },

    resumeOrphaned(everyMs) {
      let timer: NodeJS.Timeout | undefined;
      let stopped = false;
      const round = async () => {
        if (stopping || stopped) return;
        for (const feedId of await repo.claimUnfinished(true)) launch(feedId);
      };
      // One round at a time: the next is scheduled when the last one ended.
      const next = () => {
        round()
          // A database failing meanwhile (a node taking the lead as PostgreSQL restarts): the next round tries again.
          .catch((error: unknown) => deps.log?.warn({ err: error }, "resuming feed store moves failed"))
          .finally(() => {
            if (everyMs > 0 && !stopped && !stopping) timer = setTimeout(next, everyMs).unref();
          });
      };
      next();
      return () => {
        stopped = true;
        clearTimeout(timer);
      };
    },

    async stop() {
      stopping = true;
      await Promise.all(running.values());
    },
  };
}

/** The index of the first blob whose address sorts after `cursor` (blobs in address order). */
function firstAfter(blobs: readonly FeedBlob[], cursor: string): number {
  let low = 0;
  let high = blobs.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((blobs[middle] as FeedBlob).sha256 <= cursor) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The copying phase's progress after one more blob (totals grow with blobs uploaded meanwhile). */
function counted(progress: MoveProgress, blob: FeedBlob): MoveProgress {
  const blobsDone = progress.blobsDone + 1;
  const bytesDone = progress.bytesDone + blob.size;
  return {
    cursor: blob.sha256,
    blobsDone,
    bytesDone,
    blobsTotal: Math.max(progress.blobsTotal, blobsDone),
    bytesTotal: Math.max(progress.bytesTotal, bytesDone),
  };
}
