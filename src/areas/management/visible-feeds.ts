import { type AccessNeed, type FeedScope, needOnFeed } from "../../domain/principal.js";
import type { Feed } from "./feed-settings.js";
import type { FeedService } from "./service.js";

/** A feed already read needs no second lookup to be checked against. */
export const scopeOf = (feed: Feed): FeedScope => ({ id: feed.id, name: feed.name, group: feed.feedGroup });

/**
 * The feeds a caller may see: those it holds Feeds_ViewFeed on. The one rule behind the feed list
 * of the management API and of the web UI, so that both always show a caller the same feeds.
 */
export async function feedsVisibleTo(feeds: FeedService, can: (need: AccessNeed) => Promise<boolean>): Promise<Feed[]> {
  const visible: Feed[] = [];
  for (const feed of await feeds.listFeeds()) {
    if (await can(needOnFeed("Feeds_ViewFeed", scopeOf(feed)))) visible.push(feed);
  }
  return visible;
}
