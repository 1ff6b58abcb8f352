import type { FastifyInstance } from "fastify";
import { needOnFeed } from "../../../domain/principal.js";
import { publicBaseUrl } from "../../../http/base-url.js";
import { endpointUrl } from "../../management/index.js";
import { versionKeyOf } from "../../upack/index.js";
import { packageIdKey } from "../../upack/read/browse-queries.js";
import type { WebUiDeps } from "../index.js";
import { PACKAGE, UPLOAD_ZONE } from "../templates/package.js";
import { defineView, sendPage } from "../views.js";
import { BROWSE_PAGE, requireView, sendNotFound } from "./access.js";
import { PACKAGE_FEED_TYPES } from "./feeds-page.js";
import {
  downloadUrls,
  feedPageUrl,
  fileDownloadUrl,
  formatBytes,
  formatDate,
  fullName,
  manifestView,
  PAGE_SIZE,
  packagePageUrl,
  pageNumber,
  queryText,
} from "./present.js";
import { provenanceOf } from "./promotions.js";
import { uiDeleteUrl, uiUploadUrl } from "./publish.js";
import { universalFeedSnippets } from "./snippets.js";

const PACKAGE_VIEW = defineView("package", PACKAGE);
defineView("packages-upload", UPLOAD_ZONE);

/** Files listed on the page; a package may hold far more (all stay downloadable through the API). */
const MAX_FILES = 1000;
/** Dependencies looked up to link them (one indexed read each). */
const MAX_LINKED_DEPENDENCIES = 100;
/** Deployment records listed for the shown version, newest first. */
const MAX_DEPLOYMENTS = 50;

/** A record's URL is the recorder's text: linked only when it is a web address (never `javascript:`). */
function webAddress(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

interface FileEntry {
  readonly name: string;
  readonly size: number;
  readonly date: string;
}

/**
 * GET /feeds/:feed/packages/:name?group=<group>&version=<version>&page=<n>. The group is a query
 * parameter because it may hold '/' (absent or empty: the empty group), so the URL names one package
 * without ambiguity. Access is the API's `versions` listing's: Feeds_ViewFeed on the feed.
 */
export function registerPackagePage(
  app: FastifyInstance,
  { feeds, upack, deployments, config, promotions }: WebUiDeps,
): void {
  app.get("/feeds/:feed/packages/:name", BROWSE_PAGE, async (request, reply) => {
    const params = request.params as { feed: string; name: string };
    if (!(await requireView(request, reply, needOnFeed("Feeds_ViewFeed", params.feed)))) return reply;
    const feed = await feeds.findFeed(params.feed);
    if (!feed || !PACKAGE_FEED_TYPES.has(feed.feedType)) return sendNotFound(request, reply, "There is no such feed.");

    const group = queryText(request.query, "group") ?? "";
    const groupKey = group.toLowerCase();
    const nameKey = params.name.toLowerCase();
    // A '+' of build metadata arrives as a space (form decoding); no version holds a space.
    const asked = queryText(request.query, "version")?.replaceAll(" ", "+");
    const askedKey = asked === undefined ? undefined : versionKeyOf(asked);
    const page = pageNumber(queryText(request.query, "page"));
    // The three reads are asked for at once: on SQLite they then run in one tick, with no write
    // between them, as when they were synchronous calls.
    const [pkg, shown, versions] = await Promise.all([
      upack.browse.findPackage(feed.id, groupKey, nameKey),
      asked === undefined
        ? upack.browse.findVersion(feed.id, groupKey, nameKey)
        : askedKey === undefined
          ? undefined
          : upack.browse.findVersion(feed.id, groupKey, nameKey, askedKey),
      upack.browse.versionsPage(feed.id, groupKey, nameKey, (page - 1) * PAGE_SIZE, PAGE_SIZE),
    ]);
    if (!pkg) return sendNotFound(request, reply, "This feed has no such package.");
    if (!shown) return sendNotFound(request, reply, "This package has no such version.");
    const isLatest = shown.version === pkg.latest_version;

    const pageHref = (to: number) =>
      packagePageUrl(feed.name, pkg.group_name, pkg.name, {
        version: isLatest ? undefined : shown.version,
        page: to > 1 ? to : undefined,
      });

    const manifest = manifestView(shown.manifest);
    const parsed = manifest.dependencies.filter(
      (dependency): dependency is { text: string; group: string; name: string } =>
        dependency.name !== undefined && dependency.group !== undefined,
    );
    const inFeed = await upack.browse.existing(
      feed.id,
      parsed.slice(0, MAX_LINKED_DEPENDENCIES).map((dependency) => ({
        groupKey: dependency.group.toLowerCase(),
        nameKey: dependency.name.toLowerCase(),
      })),
    );
    const dependencies = manifest.dependencies.map((dependency) =>
      dependency.name !== undefined &&
      dependency.group !== undefined &&
      inFeed.has(packageIdKey(dependency.group.toLowerCase(), dependency.name.toLowerCase()))
        ? { text: dependency.text, href: packagePageUrl(feed.name, dependency.group, dependency.name) }
        : { text: dependency.text },
    );

    const fileList = await upack.browse.fileListOf(feed.id, groupKey, nameKey, shown.version.toLowerCase());
    const entries = (fileList === undefined ? [] : (JSON.parse(fileList) as FileEntry[])).filter(
      (entry) => !entry.name.endsWith("/"),
    );
    const files = entries.slice(0, MAX_FILES).map((entry) => ({
      name: entry.name,
      size: formatBytes(entry.size),
      date: formatDate(entry.date),
      href: fileDownloadUrl(feed.name, pkg.group_name, pkg.name, shown.version, entry.name),
    }));

    // Records are read with the page's own need (the deployment API's read: Feeds_ViewFeed).
    const records = await deployments.list({
      feedName: feed.name,
      groupName: pkg.group_name,
      packageName: pkg.name,
      version: shown.version,
      limit: MAX_DEPLOYMENTS + 1,
    });
    // Actions are offered only to those the API would let do them (the same needs).
    const mayUpload = await request.can(needOnFeed("Feeds_AddPackage", feed.name));
    const mayDelete = await request.can(needOnFeed("Feeds_DeletePackage", feed.name));

    const base = publicBaseUrl(config.baseUrl, request, config.port);
    return sendPage(request, reply, PACKAGE_VIEW, {
      title: `${fullName(pkg.group_name, pkg.name)} ${shown.version}`,
      feedName: feed.name,
      feedHref: feedPageUrl(feed.name),
      fullName: fullName(pkg.group_name, pkg.name),
      group: pkg.group_name,
      uploadAction: mayUpload ? uiUploadUrl(feed.name) : undefined,
      deleteAction: mayDelete ? uiDeleteUrl(feed.name, pkg.name) : undefined,
      deployments: records.slice(0, MAX_DEPLOYMENTS).map((record) => ({
        date: formatDate(record.date),
        application: record.application,
        href: webAddress(record.url),
        target: record.target,
        userName: record.userName ?? "",
        description: record.description,
      })),
      deploymentsCut: records.length > MAX_DEPLOYMENTS,
      latest: pkg.latest_version,
      latestHref: packagePageUrl(feed.name, pkg.group_name, pkg.name),
      totalDownloads: pkg.downloads,
      shown: {
        version: shown.version,
        isLatest,
        title: manifest.title,
        description: manifest.description,
        icon:
          manifest.icon === undefined
            ? undefined
            : fileDownloadUrl(feed.name, pkg.group_name, pkg.name, shown.version, `package/${manifest.icon}`),
        tags: manifest.tags,
        dependencies,
        published: formatDate(shown.published_at),
        publisher: shown.published_by ?? undefined,
        size: `${formatBytes(shown.size)} (${shown.size} bytes)`,
        downloads: shown.downloads,
        sha1: shown.sha1.toLowerCase(),
        sha256: shown.sha256.toLowerCase(),
        origin: shown.is_cached ? "Cached from a connector" : shown.is_virtual ? "Virtual package" : undefined,
      },
      provenance: await provenanceOf({ feeds, promotions }, request, feed, pkg, shown),
      download: downloadUrls(feed.name, pkg.group_name, pkg.name, shown.version),
      versionCount: pkg.version_count,
      versions: versions.map((version) => ({
        version: version.version,
        current: version.version === shown.version,
        href: packagePageUrl(feed.name, pkg.group_name, pkg.name, {
          version: version.version === pkg.latest_version ? undefined : version.version,
          page: page > 1 ? page : undefined,
        }),
        published: formatDate(version.published_at),
        size: formatBytes(version.size),
        downloads: version.downloads,
      })),
      page,
      previous: page > 1 ? pageHref(page - 1) : undefined,
      next: page * PAGE_SIZE < pkg.version_count ? pageHref(page + 1) : undefined,
      files,
      fileCount: entries.length,
      filesCut: entries.length > files.length,
      snippets: universalFeedSnippets(base, endpointUrl(feed, base), feed.name, {
        group: pkg.group_name,
        name: pkg.name,
        version: pkg.latest_version,
      }),
    });
  });
}
