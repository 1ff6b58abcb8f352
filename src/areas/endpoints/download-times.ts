import { changeWatchOf } from "../../storage/change-watch.js";
import type { Db } from "../../storage/database.js";

/**
 * When each asset file was last downloaded (migrations/0022), for retention's "not downloaded for
 * D days" (areas/retention/evaluate-assets.ts). Cheap on purpose, since a download must not pay
 * for a statistic: a file is stamped at most once a minute (a download within a minute of the
 * file's last stamp writes nothing), and the stamps due are written together, in one quiet
 * transaction, at most FLUSH_INTERVAL_MS after the first of them and whenever a reader asks
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
const FLUSH_INTERVAL_MS = 1_000;
/** Files whose last stamp is remembered; beyond it the memory starts over (at worst one more write each). */
const MAX_REMEMBERED = 50_000;

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
  at: string;
}

function createAssetDownloadTimes(db: Db): AssetDownloadTimes {
  const watch = changeWatchOf(db);
  // Only a file's own column: listings and their caches never read it, hence the quiet write.
  const stamp = db.prepare<[string, number, string]>(
    "UPDATE asset_items SET last_downloaded_at = ? WHERE feed_id = ? AND path_key = ? AND is_folder = 0",
  );
  const write = db.transaction((batch: readonly Due[]) => {
    for (const { feedId, key, at } of batch) stamp.run(at, feedId, key);
  });
  /** By `${feedId}/${key}`: the instant (ms) of the file's last stamp. */
  const stamped = new Map<string, number>();
  let due = new Map<string, Due>();
  let timer: NodeJS.Timeout | undefined;

  function flush(): void {
    if (timer !== undefined) {
      clearTimeout(timer);
      timer = undefined;
    }
    if (due.size === 0) return;
    const batch = due;
    due = new Map();
    try {
      watch.quietly(() => write.immediate([...batch.values()]));
    } catch (error) {
      // Kept for the next attempt, unless a newer stamp of the same file is due meanwhile.
      for (const [id, entry] of batch) if (!due.has(id)) due.set(id, entry);
      schedule();
      throw error;
    }
  }

  function schedule(): void {
    if (timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (!db.open) return void due.clear();
      try {
        flush();
      } catch {
        // rescheduled by flush; a timer has no caller to report to
      }
    }, FLUSH_INTERVAL_MS);
    timer.unref();
  }

  return {
    record(feedId, key, at) {
      const id = `${feedId}/${key}`;
      const ms = at.getTime();
      const last = stamped.get(id);
      if (last !== undefined && ms - last < STAMP_INTERVAL_MS && ms >= last) return;
      if (stamped.size >= MAX_REMEMBERED) stamped.clear();
      stamped.set(id, ms);
      due.set(id, { feedId, key, at: at.toISOString() });
      schedule();
    },
    flush,
  };
}
