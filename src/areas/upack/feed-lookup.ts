import { invalid, notFound } from "../../domain/errors.js";
import type { Feed, FeedService } from "../management/index.js";

/** Feed types served under `/upack/<feed>` (docs/compat.md 5.2 endpointUrl). */
const UPACK_FEED_TYPES: ReadonlySet<string> = new Set(["universal", "romp"]);

/**
 * The universal (or romp) feed named in a `/upack/:feed` URL, by name or alternate name,
 * case-insensitively. An unknown feed and a feed of another type both answer 404 "feed not found":
 * to a universal client a NuGet feed at that URL does not exist, and a 400 would disclose that a
 * feed by that name exists to callers who may not even view it.
 */
export async function getUniversalFeed(feeds: FeedService, name: string): Promise<Feed> {
  const feed = await feeds.findFeed(name);
  if (!feed || !UPACK_FEED_TYPES.has(feed.feedType)) throw notFound("FEED_NOT_FOUND", "feed not found");
  return feed;
}

/** Uploads and imports add packages only to an active feed (400 FEED_INACTIVE otherwise). */
export function assertFeedAcceptsPackages(feed: Feed): void {
  if (!feed.settings.active) throw invalid("FEED_INACTIVE", "The feed is not active; packages cannot be added to it.");
}
