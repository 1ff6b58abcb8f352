import { z } from "zod";
import { forbidden, invalid, notFound } from "../../domain/errors.js";
import type { FeedAttribute, FeedScope } from "../../domain/principal.js";
import type { Feed } from "../management/index.js";
import { type UpackServices, versionKeyOf } from "../upack/index.js";
import {
  feedRow,
  feedRowSchema,
  isFeedTypeName,
  packageRow,
  packageRowSchema,
  versionRow,
  versionRowSchema,
} from "./proget-rows.js";
import { defineNativeMethod, type NativeContext, type NativeMethod } from "./registry.js";

/**
 * The ProGet methods of the native API (docs/compat.md 5.5; issue 14 sections 1 and 5): what the
 * Jenkins ProGet plugin's feed, package and version pickers and the bower resolver's short-name
 * install read, and what a script needs to find and delete a package version. Feeds are the
 * feed-management area's; packages are read from, and deleted through, the universal feed's own
 * services, so a delete here is the delete of `/upack/<feed>/delete/...`. A method shows only
 * the feeds the caller may view (Feeds_ViewFeed on that feed, as the feed's own API asks) and
 * deletes only with Feeds_DeletePackage on that feed. Reads of an unknown feed, package or
 * version give empty tables, as the stored procedures do.
 */

/** What the ProGet methods read and change: the universal feed services (app.ts passes the app's one set). */
export type NativeUpackServices = Pick<UpackServices, "queries" | "write">;

/** Feed types whose packages the universal feed stores (upack/feed-lookup.ts). */
const UNIVERSAL_TYPES: ReadonlySet<string> = new Set(["universal", "romp"]);

/** No page size in these stored procedures: a high bound keeps one call from reading without end. */
const MAX_ROWS = 100_000;

const feedId = { name: "Feed_Id", type: "integer", required: true, description: "Id of the feed" } as const;
const groupName = {
  name: "Group_Name",
  type: "string",
  required: false,
  description: "Group of the package; empty for the empty group (with a package name, absent means empty)",
} as const;
const packageName = {
  name: "Package_Name",
  type: "string",
  required: false,
  description: "Name of the package",
} as const;

const scopeOf = (feed: Feed): FeedScope => ({ id: feed.id, name: feed.name, group: feed.feedGroup });

async function mayOnFeed(context: NativeContext, attribute: FeedAttribute, feed: Feed): Promise<boolean> {
  return context.can({ api: "native", attribute, feed: scopeOf(feed) });
}

/** The feed with this id that the caller may view, or undefined (unknown and hidden alike). */
async function viewableFeed(context: NativeContext, id: number): Promise<Feed | undefined> {
  const feed = (await context.services.feeds.listFeeds()).find((f) => f.id === id);
  return feed && (await mayOnFeed(context, "Feeds_ViewFeed", feed)) ? feed : undefined;
}

/** A universal feed the caller may view; other feed types hold no ProGet packages (empty tables). */
async function viewableUniversalFeed(context: NativeContext, id: number): Promise<Feed | undefined> {
  const feed = await viewableFeed(context, id);
  return feed && UNIVERSAL_TYPES.has(feed.feedType) ? feed : undefined;
}

const getFeeds = defineNativeMethod({
  name: "Feeds_GetFeeds",
  summary: "Every feed the caller may view, by name (universal feeds have FeedType_Name ProGet).",
  parameters: [
    {
      name: "IncludeInactive_Indicator",
      type: "indicator",
      required: false,
      description: "N leaves out inactive feeds (default Y)",
    },
  ],
  attribute: "Feeds_ViewFeed",
  result: z.array(feedRowSchema),
  async run(args, context) {
    const feeds = await context.services.feeds.listFeeds();
    const rows = [];
    for (const feed of [...feeds].sort((a, b) => a.name.localeCompare(b.name))) {
      if (!feed.settings.active && args.IncludeInactive_Indicator === false) continue;
      if (await mayOnFeed(context, "Feeds_ViewFeed", feed)) rows.push(feedRow(feed));
    }
    return rows;
  },
});

const getFeed = defineNativeMethod({
  name: "Feeds_GetFeed",
  summary:
    "One feed by id or name (or alternate name, any letter case); an empty body when there is none, which the " +
    "Jenkins plugin and the bower resolver both read as 'not found'.",
  parameters: [
    { name: "Feed_Id", type: "integer", required: false, description: "Id of the feed (or give Feed_Name)" },
    { name: "Feed_Name", type: "string", required: false, description: "Name of the feed (or give Feed_Id)" },
    {
      name: "FeedType_Name",
      type: "string",
      required: false,
      description: "Only a feed of this type (ProGet's name, e.g. ProGet or NuGet, or Wharf's, e.g. universal)",
    },
  ],
  attribute: "Feeds_ViewFeed",
  result: feedRowSchema.optional().describe("The feed, or nothing (an empty 200) when there is none"),
  async run(args, context) {
    if (args.Feed_Id === undefined && args.Feed_Name === undefined) {
      throw invalid("MISSING_PARAMETER", "The parameter 'Feed_Id' or 'Feed_Name' is required.");
    }
    const { feeds } = context.services;
    const byName = args.Feed_Name === undefined ? undefined : await feeds.findFeed(args.Feed_Name);
    const feed = args.Feed_Id === undefined ? byName : (await feeds.listFeeds()).find((f) => f.id === args.Feed_Id);
    // Both given: they must name the same feed.
    if (!feed || (args.Feed_Name !== undefined && byName?.id !== feed.id)) return undefined;
    // ProGetAutomation's Test-ProGetFeed asks with the type: a feed of another type is not the one.
    if (args.FeedType_Name !== undefined && !isFeedTypeName(feed, args.FeedType_Name)) return undefined;
    return (await mayOnFeed(context, "Feeds_ViewFeed", feed)) ? feedRow(feed) : undefined;
  },
});

const getPackages = defineNativeMethod({
  name: "ProGetPackages_GetPackages",
  summary: "Packages of a universal feed, each with its latest version, by group then name.",
  parameters: [
    feedId,
    groupName,
    packageName,
    {
      name: "IncludeVersions_Indicator",
      type: "indicator",
      required: false,
      description: "Accepted for the Jenkins plugin (which sends Y); the rows are the same",
    },
  ],
  attribute: "Feeds_ViewFeed",
  result: z.array(packageRowSchema),
  async run(args, context) {
    const feed = await viewableUniversalFeed(context, args.Feed_Id);
    if (!feed) return [];
    const { queries } = context.services.upack;
    if (args.Package_Name !== undefined) {
      const group = (args.Group_Name ?? "").toLowerCase();
      const row = await queries.findPackage(feed.id, group, args.Package_Name.toLowerCase());
      return row ? [packageRow(feed.id, row)] : [];
    }
    const rows = await queries.listPackages(feed.id, args.Group_Name?.toLowerCase(), MAX_ROWS);
    return rows.map((row) => packageRow(feed.id, row));
  },
});

const getPackageVersions = defineNativeMethod({
  name: "ProGetPackages_GetPackageVersions",
  summary:
    "Versions of packages of a universal feed, newest first within each package (one package with Package_Name, " +
    "one version with Version_Text too).",
  parameters: [
    feedId,
    groupName,
    packageName,
    {
      name: "Version_Text",
      type: "string",
      required: false,
      description: "Only this version (needs Package_Name)",
    },
  ],
  attribute: "Feeds_ViewFeed",
  result: z.array(versionRowSchema),
  async run(args, context) {
    const feed = await viewableUniversalFeed(context, args.Feed_Id);
    if (!feed) return [];
    const { queries } = context.services.upack;
    if (args.Package_Name === undefined) {
      if (args.Version_Text !== undefined) return [];
      const filter = { groupKey: args.Group_Name?.toLowerCase() };
      return (await queries.listVersions(feed.id, filter, MAX_ROWS, false)).map((row) => versionRow(feed.id, row));
    }
    const groupKey = (args.Group_Name ?? "").toLowerCase();
    const nameKey = args.Package_Name.toLowerCase();
    if (args.Version_Text !== undefined) {
      const versionKey = versionKeyOf(args.Version_Text);
      const row = versionKey && (await queries.findVersion(feed.id, groupKey, nameKey, versionKey, false));
      return row ? [versionRow(feed.id, row)] : [];
    }
    const rows = await queries.listVersions(feed.id, { groupKey, nameKey }, MAX_ROWS, false);
    return rows.map((row) => versionRow(feed.id, row));
  },
});

const deletePackage = defineNativeMethod({
  name: "ProGetPackages_DeletePackage",
  summary:
    "Deletes one version of a package from a universal feed, as `/upack/<feed>/delete/...` does (the same service " +
    "and privilege: Feeds_DeletePackage on the feed); returns nothing, 404 when there is no such version.",
  parameters: [
    feedId,
    groupName,
    { ...packageName, required: true },
    { name: "Version_Text", type: "string", required: true, description: "The version to delete" },
  ],
  attribute: "Feeds_DeletePackage",
  result: undefined,
  async run(args, context) {
    const feed = (await context.services.feeds.listFeeds()).find((f) => f.id === args.Feed_Id);
    if (!feed || !UNIVERSAL_TYPES.has(feed.feedType)) throw notFound("FEED_NOT_FOUND", "feed not found");
    if (!(await mayOnFeed(context, "Feeds_DeletePackage", feed))) throw forbidden();
    const group = args.Group_Name ?? "";
    const tail = [...(group === "" ? [] : [group]), args.Package_Name, args.Version_Text].join("/");
    await context.services.upack.write.deleteVersion(feed.id, tail, { actor: context.actor });
  },
});

/** The ProGet methods, in reference-page order. */
export const PROGET_METHODS: readonly NativeMethod[] = [
  getFeeds,
  getFeed,
  getPackages,
  getPackageVersions,
  deletePackage,
];
