import type { ChangeWatch } from "../../../storage/change-watch.js";
import { type PostgresDb, readRows } from "../../../storage/postgres/database.js";
import type { FeedTotals, FeedTotalsRow } from "./feeds-page.js";

/** SUM of bigint is numeric on PostgreSQL (a string in pg): cast back to bigint, read as a number. */
const TOTALS = `
  SELECT p.feed_id, COUNT(DISTINCT CASE WHEN p.latest_version_id IS NOT NULL THEN p.id END) AS items,
    COALESCE(SUM(v.size), 0)::bigint AS bytes
  FROM upack_packages p JOIN upack_versions v ON v.package_id = p.id GROUP BY p.feed_id
  UNION ALL
  SELECT feed_id, COUNT(*), COALESCE(SUM(size), 0)::bigint FROM asset_items WHERE is_folder = 0 GROUP BY feed_id`;

/**
 * createFeedTotals on PostgreSQL (cluster mode): the same totals, kept until the next write anywhere
 * in the cluster. `watch` is the node's change watch (storage/postgres/change-feed.ts); its version
 * is taken before the read, so that a write made during the read is not kept past it.
 */
export function createPostgresFeedTotals(
  db: PostgresDb,
  watch: Pick<ChangeWatch, "version">,
): () => Promise<ReadonlyMap<number, FeedTotals>> {
  let kept: { version: string; byFeed: ReadonlyMap<number, FeedTotals> } | undefined;
  return async () => {
    const version = watch.version();
    if (kept?.version === version) return kept.byFeed;
    const rows = await readRows<FeedTotalsRow>(db, TOTALS);
    const byFeed = new Map(rows.map((row) => [row.feed_id, { items: row.items, bytes: row.bytes }]));
    kept = { version, byFeed };
    return byFeed;
  };
}
