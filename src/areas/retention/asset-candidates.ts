import type { Db } from "../../storage/database.js";
import { flushAssetDownloadTimes } from "../endpoints/download-times.js";
import type { AssetCandidate } from "./evaluate-assets.js";

/**
 * The rows an asset directory's retention reads (migrations/0006 and 0022): its files, never its
 * folders. Deletions go through the asset directory's own delete (AssetService.delete), never
 * through here.
 */
export interface AssetRetentionRows {
  /** Every file of the directory, in path order, with what the rules look at (due download stamps written first). */
  candidates(feedId: number): Promise<AssetCandidate[]>;
  /**
   * A run's last check before a delete: calls `then` when the file's current blob is still
   * `sha256` (neither deleted nor overwritten), in the same tick as the check on SQLite, and answers
   * what it answers; undefined, without calling it, otherwise (RetentionKind.ifUnchanged).
   */
  ifCurrentBlob<T>(itemId: number, sha256: string, then: () => Promise<T>): Promise<T | undefined>;
}

export type FileRow = [
  id: number,
  path: string,
  size: number,
  modifiedAt: string,
  lastDownloadedAt: string | null,
  sha256: string,
];

export function createAssetRetentionRows(db: Db): AssetRetentionRows {
  // Raw rows: a directory of 100,000 files is read without building an object per column set twice.
  const files = db
    .prepare<[number], FileRow>(
      `SELECT id, path, size, modified_at, last_downloaded_at, blob_sha256 FROM asset_items
        WHERE feed_id = ? AND is_folder = 0 ORDER BY path_key`,
    )
    .raw(true);
  const blobOf = db
    .prepare<[number], string>("SELECT blob_sha256 FROM asset_items WHERE id = ? AND is_folder = 0")
    .pluck();
  return {
    async candidates(feedId) {
      flushAssetDownloadTimes(db);
      return files.all(feedId).map(toCandidate);
    },
    async ifCurrentBlob(itemId, sha256, then) {
      return blobOf.get(itemId) === sha256 ? then() : undefined;
    },
  };
}

/** A file row as retention's rules read it (both databases). */
export function toCandidate([id, path, size, modifiedAt, lastDownloadedAt, sha256]: FileRow): AssetCandidate {
  return { id, path, bytes: size, modifiedAt, lastDownloadedAt: lastDownloadedAt ?? undefined, sha256 };
}
