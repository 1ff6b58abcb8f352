import { z } from "zod";
import type { Feed } from "../../management/index.js";
import { isoMillis } from "../present.js";
import { UPACK_PURL_TYPE, formatPurl } from "./purl.js";
import type { VersionInfoRow } from "./repository.js";

/**
 * BasicFeedInfo and PackageVersionInfo as pgutil reads them (docs/compat.md 3; pgutil BasicFeedInfo.cs,
 * PackageVersionInfo.cs): camelCase names matched case-sensitively, every `required` member
 * present, and no `null` anywhere, since a null non-nullable member (`published`, `listed`, the
 * counts) throws in System.Text.Json. Optional members are left out rather than sent as null.
 */

export const basicFeedInfoSchema = z
  .object({
    name: z.string(),
    feedType: z.string().describe("As the feed management API spells it, e.g. `universal`"),
    packageType: z.literal(UPACK_PURL_TYPE).describe("What pgutil checks: `upack` for universal packages"),
  })
  .describe("BasicFeedInfo. The internal feed id is never exposed, so `id` is left out (pgutil reads 0)");
export type BasicFeedInfo = z.infer<typeof basicFeedInfoSchema>;

export const packageVersionInfoSchema = z
  .object({
    purl: z.string().describe("`pkg:upack/<group>/<name>@<version>`, each segment percent-encoded"),
    group: z.string().optional().describe("Omitted for the empty group"),
    name: z.string(),
    version: z.string(),
    totalDownloads: z.number().int().describe("Downloads of every version of the package"),
    downloads: z.number().int().describe("Downloads of this version"),
    published: z.string().describe("yyyy-MM-ddTHH:mm:ss.fffZ"),
    publishedBy: z.string().optional().describe("The user or API key name; omitted when unknown"),
    size: z.number().int().describe("Bytes of the package file"),
    listed: z.boolean(),
    md5: z.string().optional().describe("Only when it was computed at upload"),
    sha1: z.string(),
    sha256: z.string(),
    sha512: z.string().optional().describe("Only when it was computed at upload"),
    allowDownload: z.boolean(),
    deprecated: z.boolean(),
  })
  .describe("PackageVersionInfo: one package version");
export type PackageVersionInfo = z.infer<typeof packageVersionInfoSchema>;

export function basicFeedInfo(feed: Feed): BasicFeedInfo {
  return { name: feed.name, feedType: feed.feedType, packageType: UPACK_PURL_TYPE };
}

/** Members in the order of pgutil's class, hashes lowercase hex as pgutil documents them. */
export function packageVersionInfo(row: VersionInfoRow): PackageVersionInfo {
  return {
    purl: formatPurl(row.group_name, row.name, row.version),
    ...(row.group_name === "" ? {} : { group: row.group_name }),
    name: row.name,
    version: row.version,
    totalDownloads: row.total_downloads,
    downloads: row.downloads,
    published: isoMillis(row.published_at),
    ...(row.published_by === null || row.published_by === "" ? {} : { publishedBy: row.published_by }),
    size: row.size,
    // Wharf has no unlisting, download blocking or deprecation (yet): every version is all three.
    listed: true,
    ...(row.md5 === null ? {} : { md5: row.md5.toLowerCase() }),
    sha1: row.sha1.toLowerCase(),
    sha256: row.blob_sha256.toLowerCase(),
    ...(row.sha512 === null ? {} : { sha512: row.sha512.toLowerCase() }),
    allowDownload: true,
    deprecated: false,
  };
}

/**
 * A top-level JSON array (pgutil reads lists with DeserializeAsyncEnumerable), built directly:
 * a whole-feed `versions` can hold 100,000 rows, and validating each through the response schema
 * would cost more than building it. The schema documents the items; the tests check answers with it.
 */
export function arrayJson(rows: readonly VersionInfoRow[]): Buffer {
  return Buffer.from(`[${rows.map((row) => JSON.stringify(packageVersionInfo(row))).join(",")}]`);
}
