import { z } from "zod";
import { errorText } from "../../http/errors.js";
import { isoMillis } from "../upack/index.js";
import type { PromotionRow, RepackagingRow } from "./repository.js";

/**
 * Request and response shapes of `/api/promotions` and `/api/repackaging` (docs/compat.md 5.4).
 * Bodies are read field by field, names in any case (http/params.ts), because two clients send two
 * shapes of the promote body (docs/compat.md 11: accept both); the body schemas only document them.
 * Responses name group and package both ways (`group`/`groupName`, `name`/`packageName`), as the
 * two shapes do.
 */

export { errorText };

export const promoteBodyDoc = z
  .unknown()
  .describe(
    "JSON (or a form): pgutil's {fromFeed, group, name, version, toFeed, comments} or InedoCore's " +
      "{packageName, groupName, version, fromFeed, toFeed, comments}; names in any case. `version` may be " +
      "`latest` (highest, prereleases included) or `latest-stable`. Fields may also come in the query string.",
  );

export const repackageBodyDoc = z
  .unknown()
  .describe(
    "JSON (or a form): {feed, group, name, version, newVersion, comments, toFeed} (groupName and packageName " +
      "also accepted); `toFeed` absent: the same feed. `version` may be `latest` or `latest-stable`.",
  );

export const listQueryDoc = z
  .object({
    feed: z.string().optional().describe("Records into or out of this feed"),
    fromFeed: z.string().optional(),
    toFeed: z.string().optional(),
    group: z.string().optional().describe("Also groupName"),
    name: z.string().optional().describe("Also packageName"),
    version: z.string().optional(),
    count: z.string().optional().describe("At most this many records (default and maximum 1000)"),
  })
  .loose();

export const MAX_LIST_COUNT = 1000;

export const promotionSchema = z.object({
  id: z.number().int(),
  fromFeed: z.string().describe("The source feed's name at the time"),
  toFeed: z.string(),
  group: z.string(),
  groupName: z.string(),
  name: z.string(),
  packageName: z.string(),
  version: z.string(),
  promotedBy: z.string(),
  date: z.string().describe("When (ISO 8601, UTC)"),
  comments: z.string().optional(),
  sha1: z.string().optional().describe("Of the promoted file (the same bytes in both feeds)"),
  sha256: z.string().optional(),
});
export type PromotionJson = z.infer<typeof promotionSchema>;

export const repackagingSchema = z.object({
  id: z.number().int(),
  feed: z.string().describe("Where the new version was saved (its name at the time)"),
  fromFeed: z.string(),
  group: z.string(),
  groupName: z.string(),
  name: z.string(),
  packageName: z.string(),
  version: z.string().describe("The new version"),
  newVersion: z.string(),
  fromVersion: z.string().describe("The original version"),
  fromSha1: z.string().optional(),
  fromSha256: z.string().optional(),
  repackagedBy: z.string(),
  date: z.string(),
  comments: z.string().optional(),
});
export type RepackagingJson = z.infer<typeof repackagingSchema>;

const optional = <K extends string>(key: K, value: string | null) =>
  (value === null ? {} : { [key]: value }) as Partial<Record<K, string>>;

export function promotionJson(row: PromotionRow): PromotionJson {
  return {
    id: row.id,
    fromFeed: row.from_feed_name,
    toFeed: row.to_feed_name,
    group: row.package_group,
    groupName: row.package_group,
    name: row.package_name,
    packageName: row.package_name,
    version: row.version,
    promotedBy: row.promoted_by,
    date: isoMillis(row.promoted_at),
    ...optional("comments", row.comments),
    ...optional("sha1", row.sha1),
    ...optional("sha256", row.sha256),
  };
}

export function repackagingJson(row: RepackagingRow): RepackagingJson {
  return {
    id: row.id,
    feed: row.feed_name,
    fromFeed: row.from_feed_name,
    group: row.package_group,
    groupName: row.package_group,
    name: row.package_name,
    packageName: row.package_name,
    version: row.new_version,
    newVersion: row.new_version,
    fromVersion: row.from_version,
    ...optional("fromSha1", row.from_sha1),
    ...optional("fromSha256", row.from_sha256),
    repackagedBy: row.repackaged_by,
    date: isoMillis(row.repackaged_at),
    ...optional("comments", row.comments),
  };
}
