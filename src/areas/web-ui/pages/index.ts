import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerUiDownloads } from "./downloads.js";
import { registerFeedPage } from "./feed-page.js";
import { registerFeedsPage } from "./feeds-page.js";
import { registerPackagePage } from "./package-page.js";
import { registerPromotionRoutes } from "./promotions.js";
import { registerPublishRoutes } from "./publish.js";

/**
 * Read-only browsing (issue 16 section 1, Feeds and A package page): /feeds, /feeds/:feed and
 * /feeds/:feed/packages/:name?group=. They read through the services the APIs use (feedsVisibleTo,
 * upack.browse) and decide access with request.can as the APIs do; their download links are the
 * upack download routes mounted for browsers (downloads.ts).
 */
export async function registerBrowsePages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  registerFeedsPage(app, deps);
  registerFeedPage(app, deps);
  registerPackagePage(app, deps);
  await registerUiDownloads(app, deps);
  await registerPublishRoutes(app, deps);
  registerPromotionRoutes(app, deps);
}
