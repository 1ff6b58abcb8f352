import type { Db } from "../../storage/database.js";
import { createQuietBatches } from "../../storage/quiet-batches.js";

/**
 * When each asset file was last downloaded (migrations/0022), for retention's "not downloaded for
 * D days" (areas/retention/evaluate-assets.ts). Cheap on purpose, since a download must not pay
 * for a statistic: a file is stamped at most once a minute (a download within a minute of the
 * file's last stamp writes nothing), and the stamps due are written together (storage/quiet-batches.ts)
 * at most FLUSH_INTERVAL_MS after the first of them and whenever a reader asks
 * (`flushAssetDownloadTimes`: before a retention preview; on shutdown). So a stamp may be up to a
 * minute early, and a crash loses at most the last second's stamps: both far below the days that
 * retention counts in.
 */
export interface AssetDownloadTimes {
  /** Notes a download of the file at `key` (a path_key) of the asset directory, made at `at`. */
  record(feedId: number, key: string, at: Date): void;
  /** Writes the stamps due now; throws when the database refuses (they then stay due). */
  flush(): void;
}

/** A file downloaded again within this long of its last stamp is not stamped again. */
export const STAMP_INTERVAL_MS = 60_000;
export const FLUSH_INTERVAL_MS = 1_000;
/** Files whose last stamp is remembered; beyond it the memory starts over (at worst one more write each). */
export const MAX_REMEMBERED = 50_000;

const recorders = new WeakMap<Db, AssetDownloadTimes>();

/** One recorder per connection, so that every reader of the connection can flush what it holds. */
export function assetDownloadTimesOf(db: Db): AssetDownloadTimes {
  let recorder = recorders.get(db);
  if (recorder === undefined) {
    recorder = createAssetDownloadTimes(db);
    recorders.set(db, recorder);
  }
  return recorder;
}

/** Writes the connection's due stamps, if any; a failure leaves them due for the timer (a read must not fail for them). */
export function flushAssetDownloadTimes(db: Db): void {
  try {
    recorders.get(db)?.flush();
  } catch {
    // still due, see above
  }
}

interface Due {
  readonly feedId: number;
  readonly key: string;
  readonly at: string;
}

function createAssetDownloadTimes(db: Db): AssetDownloadTimes {
  // Only a file's own column: listings and their caches never read it, hence the quiet write.
  const stamp = db.prepare<[string, number, string]>(
    "UPDATE asset_items SET last_downloaded_at = ? WHERE feed_id = ? AND path_key = ? AND is_folder = 0",
  );
  // By `${feedId}/${key}`.
  const batches = createQuietBatches<string, Due>(db, {
    intervalMs: FLUSH_INTERVAL_MS,
    write(batch) {
      for (const { feedId, key, at } of batch.values()) stamp.run(at, feedId, key);
    },
    merge: (pending, next) => (next.at > pending.at ? next : pending),
  });
  const due = stampsDue();

  return {
    record(feedId, key, at) {
      const id = due(feedId, key, at);
      if (id !== undefined) batches.add(id, { feedId, key, at: at.toISOString() });
    },
    flush: batches.flush,
  };
}

/**
 * Which downloads are stamped (both databases): `due` answers the file's `${feedId}/${key}` when
 * the download is to be stamped, undefined when the file was stamped less than a minute before.
 */
export function stampsDue(): (feedId: number, key: string, at: Date) => string | undefined {
  /** By `${feedId}/${key}`: the instant (ms) of the file's last stamp. */
  const stamped = new Map<string, number>();
  return (feedId, key, at) => {
    const id = `${feedId}/${key}`;
    const ms = at.getTime();
    const last = stamped.get(id);
    if (last !== undefined && ms - last < STAMP_INTERVAL_MS && ms >= last) return undefined;
    if (stamped.size >= MAX_REMEMBERED) stamped.clear();
    stamped.set(id, ms);
    return id;
  };
}
