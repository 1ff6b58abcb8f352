import type { FeedKeyPermission } from "./principal.js";

/**
 * Privilege attribute names (docs/compat.md section 9). ProGet's are used now; BuildMaster's and
 * Otter's are listed so that tasks can name them before their areas land.
 */
export const ATTRIBUTES = [
  // ProGet
  "Feeds_ViewFeed",
  "Feeds_DownloadPackage",
  "Feeds_AddPackage",
  "Feeds_PullPackage",
  "Feeds_OverwritePackage",
  "Feeds_DeletePackage",
  "Feeds_UnlistPackage",
  "Feeds_AcceptPackagePromotions",
  "Feeds_CreateFeed",
  "Feeds_Manage",
  "Admin_ManageFeed",
  "Admin_ManageConnectors",
  "Admin_ConfigureProGet",
  "Licenses_Manage",
  "Projects_View",
  "Projects_Manage",
  "Projects_UploadSbom",
  "Projects_ResolveIssue",
  // BuildMaster
  "Applications_View",
  "Applications_Manage",
  "Admin_ManageApplications",
  "Admin_ConfigureBuildMaster",
  "Releases_Manage",
  "ReleasePackages_Create",
  "ReleasePackages_Deploy",
  "ReleasePackages_Force",
  "ReleasePackages_Manage",
  "Environments_View",
  "Environments_Manage",
  "Pipelines_Manage",
  // Otter
  "Infrastructure_View",
  "Infrastructure_Manage",
] as const;
export type Attribute = (typeof ATTRIBUTES)[number];

/** Granted globally, this attribute implies every other one (the built-in Administer task). */
export const SUPER_ATTRIBUTE: Attribute = "Admin_ConfigureProGet";

/** Attributes that make sense per feed (or feed group); tasks made only of these may be feed-scoped. */
export const FEED_ATTRIBUTES: ReadonlySet<string> = new Set([
  ...ATTRIBUTES.filter((a) => a.startsWith("Feeds_")),
  "Admin_ManageFeed",
  "Admin_ManageConnectors",
]);

/** What each Feed API key permission allows. */
export const FEED_KEY_ATTRIBUTES: Record<FeedKeyPermission, readonly Attribute[]> = {
  view: ["Feeds_ViewFeed", "Feeds_DownloadPackage"],
  add: ["Feeds_AddPackage", "Feeds_PullPackage"],
  promote: ["Feeds_AcceptPackagePromotions"],
  delete: ["Feeds_OverwritePackage", "Feeds_DeletePackage", "Feeds_UnlistPackage"],
};

const byLowerName = new Map<string, Attribute>(ATTRIBUTES.map((a) => [a.toLowerCase(), a]));

/** The canonical spelling of a known attribute, compared case-insensitively; undefined if unknown. */
export function findAttribute(name: string): Attribute | undefined {
  return byLowerName.get(name.toLowerCase());
}
