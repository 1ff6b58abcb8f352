import type { PostgresDb } from "../../storage/postgres/database.js";
import { flushPostgresAssetDownloadTimes } from "../endpoints/download-times-postgres.js";
import { type AssetRetentionRows, type FileRow, toCandidate } from "./asset-candidates.js";

/** AssetRetentionRows on PostgreSQL (cluster mode): the same files, in the same order, as on SQLite. */
export function createPostgresAssetRetentionRows(db: PostgresDb): AssetRetentionRows {
  return {
    async candidates(feedId) {
      // This node's due stamps; another node's last second of stamps may still be in its memory,
      // far below the days retention counts in.
      await flushPostgresAssetDownloadTimes(db);
      const result = await db.pool.query<FileRow>({
        text: `SELECT id, path, size, modified_at, last_downloaded_at, blob_sha256 FROM asset_items
                WHERE feed_id = $1 AND is_folder = 0 ORDER BY path_key`,
        values: [feedId],
        rowMode: "array",
      });
      return result.rows.map(toCandidate);
    },
  };
}
