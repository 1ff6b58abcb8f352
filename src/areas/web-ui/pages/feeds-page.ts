import type { FastifyInstance } from "fastify";
import type { Db } from "../../../storage/database.js";
import { byDatabase, cacheVersionOf, type MetadataDb } from "../../../storage/metadata-db.js";
import { feedsVisibleTo } from "../../management/index.js";
import { browseUrl } from "../asset-dirs/paths.js";
import type { WebUiDeps } from "../index.js";
import { FEEDS } from "../templates/feeds.js";
import { defineView, sendPage } from "../views.js";
import { BROWSE_PAGE } from "./access.js";
import { createPostgresFeedTotals } from "./feeds-page-postgres.js";
import { feedPageUrl, formatBytes } from "./present.js";

const FEEDS_VIEW = defineView("feeds", FEEDS);

/** Feed types whose packages the feed page lists (the universal feed's stored packages). */
export const PACKAGE_FEED_TYPES: ReadonlySet<string> = new Set(["universal", "romp"]);

/** What a feed holds: packages (with a version) or files, and the bytes of its versions or files. */
export interface FeedTotals {
  readonly items: number;
  readonly bytes: number;
}

/** A row of the totals' read (both databases). */
export interface FeedTotalsRow {
  readonly feed_id: number;
  readonly items: number;
  readonly bytes: number;
}

/**
 * Every feed's totals in one grouped read: packages that have a version and the summed size of
 * their versions (universal and romp feeds), files and their summed size (asset directories). The
 * sizes are what the feed's versions or files weigh, not disk use (identical content is stored
 * once). Kept until the next write anywhere (ChangeWatch): the list is read far more often than
 * packages are published, and a first read costs one pass over the versions. On PostgreSQL
 * (cluster mode): feeds-page-postgres.ts, kept until the next write on any node.
 */
export function createFeedTotals(db: MetadataDb): () => Promise<ReadonlyMap<number, FeedTotals>> {
  return byDatabase(db, createSqliteFeedTotals, (postgres) =>
    createPostgresFeedTotals(postgres, cacheVersionOf(postgres)),
  );
}

function createSqliteFeedTotals(db: Db): () => Promise<ReadonlyMap<number, FeedTotals>> {
  const totals = db.prepare<[], FeedTotalsRow>(
    `SELECT p.feed_id, COUNT(DISTINCT CASE WHEN p.latest_version_id IS NOT NULL THEN p.id END) AS items,
       COALESCE(SUM(v.size), 0) AS bytes
     FROM upack_packages p JOIN upack_versions v ON v.package_id = p.id GROUP BY p.feed_id
     UNION ALL
     SELECT feed_id, COUNT(*), COALESCE(SUM(size), 0) FROM asset_items WHERE is_folder = 0 GROUP BY feed_id`,
  );
  const watch = cacheVersionOf(db);
  let kept: { version: string; byFeed: ReadonlyMap<number, FeedTotals> } | undefined;
  return async () => {
    const version = watch.version();
    if (kept?.version !== version) {
      const byFeed = new Map(totals.all().map((row) => [row.feed_id, { items: row.items, bytes: row.bytes }]));
      kept = { version, byFeed };
    }
    return kept.byFeed;
  };
}

/**
 * GET /feeds: the feeds the viewer may see, by the management API's own rule (feedsVisibleTo),
 * each with its type, how many packages (or files) it holds and their size. An asset directory
 * links to its file browser. An empty list is an answer for Anonymous too: the page invites to
 * sign in rather than redirecting.
 */
export function registerFeedsPage(app: FastifyInstance, { feeds, db }: WebUiDeps): void {
  const feedTotals = createFeedTotals(db);
  app.get("/feeds", BROWSE_PAGE, async (request, reply) => {
    const visible = await feedsVisibleTo(feeds, (need) => request.can(need));
    const totals = visible.length === 0 ? new Map<number, FeedTotals>() : await feedTotals();
    return sendPage(request, reply, FEEDS_VIEW, {
      title: "Feeds",
      feeds: visible.map((feed) => {
        const isAssets = feed.feedType === "asset";
        const counted = isAssets || PACKAGE_FEED_TYPES.has(feed.feedType);
        const total = totals.get(feed.id) ?? { items: 0, bytes: 0 };
        return {
          name: feed.name,
          href: isAssets ? browseUrl(feed.name, "", true) : feedPageUrl(feed.name),
          type: isAssets ? "asset directory" : feed.feedType,
          active: feed.settings.active,
          description: feed.settings.description ?? "",
          items: counted ? `${total.items} ${isAssets ? "file" : "package"}${total.items === 1 ? "" : "s"}` : "",
          size: counted ? formatBytes(total.bytes) : "",
        };
      }),
    });
  });
}
