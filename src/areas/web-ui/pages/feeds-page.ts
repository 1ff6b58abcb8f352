import type { FastifyInstance } from "fastify";
import { feedsVisibleTo } from "../../management/index.js";
import type { WebUiDeps } from "../index.js";
import { FEEDS } from "../templates/feeds.js";
import { defineView, sendPage } from "../views.js";
import { BROWSE_PAGE } from "./access.js";
import { feedPageUrl } from "./present.js";

const FEEDS_VIEW = defineView("feeds", FEEDS);

/** Feed types whose packages the feed page lists (the universal feed's stored packages). */
export const PACKAGE_FEED_TYPES: ReadonlySet<string> = new Set(["universal", "romp"]);

/**
 * GET /feeds: the feeds the viewer may see, by the management API's own rule (feedsVisibleTo),
 * with their package counts from one grouped read (no query per feed). An empty list is an answer
 * for Anonymous too: the page invites to sign in rather than redirecting.
 */
export function registerFeedsPage(app: FastifyInstance, { feeds, upack }: WebUiDeps): void {
  app.get("/feeds", BROWSE_PAGE, async (request, reply) => {
    const visible = await feedsVisibleTo(feeds, (need) => request.can(need));
    const counts = visible.length === 0 ? new Map<number, number>() : upack.browse.packageCounts();
    return sendPage(request, reply, FEEDS_VIEW, {
      title: "Feeds",
      feeds: visible.map((feed) => ({
        name: feed.name,
        href: feedPageUrl(feed.name),
        type: feed.feedType,
        active: feed.settings.active,
        description: feed.settings.description ?? "",
        packages: PACKAGE_FEED_TYPES.has(feed.feedType) ? (counts.get(feed.id) ?? 0) : undefined,
      })),
    });
  });
}
