import { z } from "zod";
import type { FeedType } from "../../domain/feeds.js";
import type { Feed } from "../management/index.js";
import type { PackageRow, VersionRow } from "../upack/index.js";
import { isoMillis } from "../upack/index.js";

/**
 * Result shapes of the ProGet native methods and the rows they are built from (docs/compat.md 5.5;
 * the Jenkins ProGet plugin's mock data, copied from a real ProGet: indicators are JSON booleans,
 * hashes and metadata base64, dates ISO 8601 with milliseconds).
 */

const id = z.number().int();
const text = z.string();

export const feedRowSchema = z
  .object({
    Feed_Id: id,
    Feed_Name: text,
    Feed_Description: text.optional(),
    FeedType_Name: text.describe("ProGet's type name: ProGet (universal), Asset, NuGet, Npm, ..."),
    Active_Indicator: z.boolean(),
    Cache_Connectors_Indicator: z.boolean(),
    AllowUnknownLicenses_Indicator: z.boolean().optional(),
    FeedGroup_Name: text.optional().describe("Wharf's feed group label, when the feed has one"),
  })
  .describe("Feeds row");

export const packageRowSchema = z
  .object({
    ProGetPackage_Id: id,
    Feed_Id: id,
    Group_Name: text.describe("Empty for the empty group"),
    Package_Name: text,
    Title_Text: text.optional(),
    Description_Text: text.optional(),
    IconUrl_Text: text.optional(),
    LatestVersion_Text: text,
    Download_Count: z.number().int(),
  })
  .describe("ProGetPackages row");

export const versionRowSchema = z
  .object({
    ProGetPackage_Id: id,
    Feed_Id: id,
    Group_Name: text,
    Package_Name: text,
    Version_Text: text,
    PackageHash_Bytes: text.describe("Base64 of the SHA-1 of the package file (20 bytes)"),
    PackageMetadata_Bytes: text.describe("Base64 of the version's upack.json as stored"),
    Published_Date: text.describe("ISO 8601, UTC, with milliseconds"),
    Package_Size: z.number().int(),
    Download_Count: z.number().int(),
    Cached_Indicator: z.boolean(),
    Virtual_Indicator: z.boolean(),
  })
  .describe("ProGetPackageVersions row");

export type FeedRow = z.input<typeof feedRowSchema>;
export type ProGetPackageRow = z.input<typeof packageRowSchema>;
export type ProGetVersionRow = z.input<typeof versionRowSchema>;

/**
 * ProGet's own spelling of feed types in its tables: universal feeds are "ProGet" feeds (as in the
 * Jenkins plugin's mock data); the rest are the product names.
 */
const FEED_TYPE_NAMES: Record<FeedType, string> = {
  universal: "ProGet",
  romp: "Romp",
  nuget: "NuGet",
  chocolatey: "Chocolatey",
  powershell: "PowerShell",
  npm: "Npm",
  bower: "Bower",
  maven: "Maven",
  docker: "Docker",
  rubygems: "RubyGems",
  vsix: "Vsix",
  asset: "Asset",
  debian: "Debian",
  pypi: "PyPI",
  helm: "Helm",
  rpm: "Rpm",
  conda: "Conda",
  cran: "Cran",
  apk: "Apk",
  cargo: "Cargo",
  pub: "Pub",
  terraform: "Terraform",
  composer: "Composer",
  conan: "Conan",
};

/** Whether `name` names the feed's type: ProGet's spelling or Wharf's (`universal`), any letter case. */
export function isFeedTypeName(feed: Feed, name: string): boolean {
  const wanted = name.toLowerCase();
  return wanted === feed.feedType || wanted === FEED_TYPE_NAMES[feed.feedType].toLowerCase();
}

export function feedRow(feed: Feed): FeedRow {
  return {
    Feed_Id: feed.id,
    Feed_Name: feed.name,
    ...(feed.settings.description !== undefined && { Feed_Description: feed.settings.description }),
    FeedType_Name: FEED_TYPE_NAMES[feed.feedType],
    Active_Indicator: feed.settings.active,
    Cache_Connectors_Indicator: feed.settings.cacheConnectors,
    ...(feed.settings.allowUnknownLicenses !== undefined && {
      AllowUnknownLicenses_Indicator: feed.settings.allowUnknownLicenses,
    }),
    ...(feed.feedGroup !== undefined && { FeedGroup_Name: feed.feedGroup }),
  };
}

/** A manifest property as text, when it is one (manifests are validated at upload, but stay defensive). */
function manifestText(manifest: Record<string, unknown>, key: string): string | undefined {
  const value = manifest[key];
  return typeof value === "string" ? value : undefined;
}

export function packageRow(feedId: number, row: PackageRow): ProGetPackageRow {
  const manifest = JSON.parse(row.manifest) as Record<string, unknown>;
  const title = manifestText(manifest, "title");
  const description = manifestText(manifest, "description") ?? manifestText(manifest, "shortDescription");
  const icon = manifestText(manifest, "icon");
  return {
    ProGetPackage_Id: row.package_id,
    Feed_Id: feedId,
    Group_Name: row.group_name,
    Package_Name: row.name,
    ...(title !== undefined && { Title_Text: title }),
    ...(description !== undefined && { Description_Text: description }),
    ...(icon !== undefined && { IconUrl_Text: icon }),
    LatestVersion_Text: row.latest_version,
    Download_Count: row.downloads,
  };
}

export function versionRow(feedId: number, row: VersionRow): ProGetVersionRow {
  return {
    ProGetPackage_Id: row.package_id,
    Feed_Id: feedId,
    Group_Name: row.group_name,
    Package_Name: row.name,
    Version_Text: row.version,
    PackageHash_Bytes: Buffer.from(row.sha1, "hex").toString("base64"),
    PackageMetadata_Bytes: Buffer.from(row.manifest, "utf8").toString("base64"),
    Published_Date: isoMillis(row.published_at),
    Package_Size: row.size,
    Download_Count: row.downloads,
    Cached_Indicator: row.is_cached === 1,
    Virtual_Indicator: row.is_virtual === 1,
  };
}
