import type { FastifyInstance, FastifyRequest } from "fastify";
import { needOnFeed } from "../../../domain/principal.js";
import { CONNECTOR_HEALTH_NEED } from "../../connectors/health-routes.js";
import type { Feed } from "../../management/index.js";
import { publicBaseUrl } from "../../../http/base-url.js";
import { endpointUrl } from "../../management/index.js";
import type { PackageOrder } from "../../upack/read/browse-queries.js";
import type { WebUiDeps } from "../index.js";
import { FEED } from "../templates/feed.js";
import { defineView, sendPage } from "../views.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "./access.js";
import { PACKAGE_FEED_TYPES } from "./feeds-page.js";
import {
  feedPageUrl,
  formatDate,
  fullName,
  manifestView,
  PAGE_SIZE,
  packagePageUrl,
  pageNumber,
  queryText,
} from "./present.js";
import { uiUploadUrl } from "./publish.js";
import { universalFeedSnippets } from "./snippets.js";

const FEED_VIEW = defineView("feed", FEED);

const SORTS: ReadonlyArray<{ value: PackageOrder; label: string }> = [
  { value: "relevance", label: "Best match" },
  { value: "name", label: "Name" },
  { value: "updated", label: "Last updated" },
];

/** `?sort=`: name, updated or relevance; by default the best match for a search, the name otherwise. */
function orderOf(raw: string | undefined, searching: boolean): PackageOrder {
  const known = SORTS.find((sort) => sort.value === raw)?.value;
  if (known === "relevance" && !searching) return "name";
  return known ?? (searching ? "relevance" : "name");
}

/**
 * GET /feeds/:feed?q=<term>&sort=name|updated|relevance&page=<n>: a page of 50 packages read in
 * SQL (upack.browse.packagesPage), searched as the API's `search` ranks, and how to use the feed.
 * Access is the API's: Feeds_ViewFeed on the feed, decided before the feed is looked up.
 */
/**
 * The feed's connectors and their health, for those the connector health API would answer
 * (its need, CONNECTOR_HEALTH_NEED); undefined for others (the section is left out).
 */
async function connectorsOf(
  request: FastifyRequest,
  feed: Feed,
  connectors: WebUiDeps["connectors"],
): Promise<Array<Record<string, string>> | undefined> {
  if (!(await request.can(CONNECTOR_HEALTH_NEED))) return undefined;
  const found = await Promise.all(feed.settings.connectors.map((name) => connectors.findConnector(name)));
  return found
    .filter((connector) => connector !== undefined)
    .map((connector) => {
      const health = connectors.presentHealth(connector);
      return {
        name: health.name,
        url: health.url,
        state: health.state,
        error: health.errorMessage ?? "",
        lastChecked: health.lastChecked === null ? "never" : formatDate(health.lastChecked),
      };
    });
}

export function registerFeedPage(app: FastifyInstance, { feeds, upack, connectors, config }: WebUiDeps): void {
  app.get("/feeds/:feed", BROWSE_PAGE, async (request, reply) => {
    const name = (request.params as { feed: string }).feed;
    if (!(await requireView(request, reply, needOnFeed("Feeds_ViewFeed", name)))) return reply;
    const feed = await feeds.findFeed(name);
    if (!feed) return sendNotFound(request, reply, "There is no such feed.");
    // An asset directory's files have their own browser (asset-dirs/).
    if (feed.feedType === "asset") return reply.redirect(`/assets/${encodeURIComponent(feed.name)}/`, 303);

    const base = publicBaseUrl(config.baseUrl, request, config.port);
    const feedUrl = endpointUrl(feed, base);
    const listed = PACKAGE_FEED_TYPES.has(feed.feedType);
    const q = (queryText(request.query, "q") ?? "").trim().slice(0, 200);
    const order = orderOf(queryText(request.query, "sort"), q !== "");
    const page = pageNumber(queryText(request.query, "page"));
    const { rows, more } = listed
      ? await upack.browse.packagesPage(feed.id, {
          termKey: q.toLowerCase(),
          order,
          offset: (page - 1) * PAGE_SIZE,
          limit: PAGE_SIZE,
        })
      : { rows: [], more: false };

    const pageHref = (to: number) => {
      const query = new URLSearchParams();
      if (q !== "") query.set("q", q);
      if (queryText(request.query, "sort") !== undefined) query.set("sort", order);
      if (to > 1) query.set("page", String(to));
      const search = query.toString();
      return `${feedPageUrl(feed.name)}${search === "" ? "" : `?${search}`}`;
    };
    return sendPage(request, reply, FEED_VIEW, {
      title: feed.name,
      feed: {
        name: feed.name,
        href: feedPageUrl(feed.name),
        type: feed.feedType,
        active: feed.settings.active,
        description: feed.settings.description ?? "",
      },
      listed,
      q,
      page,
      sorts: SORTS.map((sort) => ({ ...sort, selected: sort.value === order })),
      packages: rows.map((row) => ({
        fullName: fullName(row.group_name, row.name),
        href: packagePageUrl(feed.name, row.group_name, row.name),
        title: manifestView(row.manifest).title,
        latest: row.latest_version,
        updated: formatDate(row.published_at),
        downloads: row.downloads,
      })),
      previous: page > 1 ? pageHref(page - 1) : undefined,
      next: more ? pageHref(page + 1) : undefined,
      feedUrl,
      uploadAction:
        listed && (await request.can(needOnFeed("Feeds_AddPackage", feed.name))) ? uiUploadUrl(feed.name) : undefined,
      connectors: await connectorsOf(request, feed, connectors),
      snippets: listed ? universalFeedSnippets(base, feedUrl, feed.name) : [],
    });
  });
}
