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
  return {
    async candidates(feedId) {
      flushAssetDownloadTimes(db);
      return files.all(feedId).map(toCandidate);
    },
  };
}

/** A file row as retention's rules read it (both databases). */
export function toCandidate([id, path, size, modifiedAt, lastDownloadedAt, sha256]: FileRow): AssetCandidate {
  return { id, path, bytes: size, modifiedAt, lastDownloadedAt: lastDownloadedAt ?? undefined, sha256 };
}
