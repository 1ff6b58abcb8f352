import type { CacheHeader } from "../../domain/cache-header.js";
import type { FeedType } from "../../domain/feeds.js";
import type { StorageConfig } from "../../domain/package-store.js";

/**
 * The Feed as Wharf keeps it (docs/compat.md 5.2). Everything except the names, type, group and
 * connectors lives in the `feeds.settings` JSON column as a FeedSettings object, so that adding a
 * setting needs no migration: decodeSettings fills what an older row lacks with the defaults
 * below. Connectors are bound to connector ids in their own table (feed-connectors.ts).
 */

/** Retention rule (docs/compat.md 5.2, pgutil RetentionRule.cs); absent numbers mean "no limit". */
export interface RetentionRule {
  deletePrereleaseVersions: boolean;
  keepVersionsCount?: number;
  keepUsedWithinDays?: number;
  /** Wildcard lists, no negations; an empty list puts no constraint. */
  deletePackageIds: string[];
  keepPackageIds: string[];
  keepVersions: string[];
  deleteVersions: string[];
  deleteCached: boolean;
  sizeTriggerKb?: number;
  sizeExclusive: boolean;
  triggerDownloadCount?: number;
  keepConsumedWithinDays?: number;
  keepIfActivelyConsumed: boolean;
  keepPackageUsageRemovedDays?: number;
  /** Wharf extension: only versions published more than this many days ago. */
  deleteOlderThanDays?: number;
  /** Wharf extension: versions deployed within this many days stay (default 30; 0: no protection). */
  keepDeployedWithinDays?: number;
  /** Wharf extension: the latest stable version of a package may go too (default: it stays). */
  deleteLatestStable: boolean;
}

export const FEED_FLAGS = [
  "active",
  "cacheConnectors",
  "symbolServerEnabled",
  "stripSymbols",
  "stripSource",
  "stripSignature",
  "useApiV3",
  "packageStatisticsEnabled",
  "restrictPackageStatistics",
  "deploymentRecordsEnabled",
  "usageRecordsEnabled",
  "vulnerabilitiesEnabled",
  "licensesEnabled",
  "useWithProjects",
  "retentionRulesEnabled",
  /** Wharf extension, asset directories: HTML and SVG are served without the sandbox CSP. */
  "staticSite",
] as const;
export type FeedFlag = (typeof FEED_FLAGS)[number];

export const FEED_LISTS = ["allowedLicenses", "blockedLicenses", "connectors", "vulnerabilitySources"] as const;
export type FeedList = (typeof FEED_LISTS)[number];

export const FEED_MAPS = ["packageFilters", "packageAccessRules", "variables"] as const;
export type FeedMap = (typeof FEED_MAPS)[number];

export type FeedSettings = Record<FeedFlag, boolean> &
  Record<FeedList, string[]> &
  Record<FeedMap, Record<string, string>> & {
    description?: string;
    /** Always absent today: Wharf refuses drop paths (see feed-merge.ts). */
    dropPath?: string;
    /** Always absent today: content lives in the content-addressed blob store. */
    packagesPath?: string;
    /** The one source of truth for `packageStore` and `/api/storage`; absent = default disk storage. */
    storage?: StorageConfig;
    /** Absent inherits the server default (docs/compat.md 5.2). */
    allowUnknownLicenses?: boolean;
    retentionRules: RetentionRule[];
    /** Wharf extension: cron expression of scheduled retention runs (areas/retention); absent: none. */
    retentionSchedule?: string;
    /** Wharf extension, asset directories: the cache setting items inherit at the root; absent = Inherit. */
    cacheHeader?: CacheHeader;
  };

/** The editable part of a feed: what create and update produce. */
export interface FeedDraft {
  name: string;
  /** Extra URL names (after a rename, for instance); never contains `name`. */
  alternateNames: string[];
  feedType: FeedType;
  /** Wharf extension: feed keys and permissions may be scoped to a group of feeds. */
  feedGroup?: string;
  settings: FeedSettings;
}

/** A stored feed. `id` and `storageKey` are internal and never exposed (docs/compat.md 5.1). */
export interface Feed extends FeedDraft {
  readonly id: number;
  /** Random, assigned at creation: a deleted and recreated feed gets a new one (docs/seed-api.md area I). */
  readonly storageKey: string;
  readonly createdAt: string;
  readonly modifiedAt: string;
}

// Defaults follow the example feed of the current docs (Content/proget/api/feeds/#.md), except that
// the features Wharf does not have are off (feed-unimplemented.ts): a new feed says what it does.
const DEFAULT_FLAGS: Record<FeedFlag, boolean> = {
  active: true,
  cacheConnectors: true,
  symbolServerEnabled: false,
  stripSymbols: false,
  stripSource: false,
  stripSignature: false,
  useApiV3: false,
  packageStatisticsEnabled: false,
  restrictPackageStatistics: false,
  deploymentRecordsEnabled: true,
  usageRecordsEnabled: false,
  vulnerabilitiesEnabled: false,
  licensesEnabled: false,
  useWithProjects: false,
  retentionRulesEnabled: false,
  staticSite: false,
};

export function defaultSettings(): FeedSettings {
  return {
    ...DEFAULT_FLAGS,
    allowedLicenses: [],
    blockedLicenses: [],
    connectors: [],
    vulnerabilitySources: [],
    packageFilters: {},
    packageAccessRules: {},
    variables: {},
    retentionRules: [],
  };
}

/** Reads the settings column; members an older Wharf did not write take their defaults. */
export function decodeSettings(json: string): FeedSettings {
  const stored = JSON.parse(json) as Partial<FeedSettings>;
  const settings = defaultSettings();
  for (const flag of FEED_FLAGS) {
    if (typeof stored[flag] === "boolean") settings[flag] = stored[flag];
  }
  for (const list of FEED_LISTS) {
    if (Array.isArray(stored[list])) settings[list] = stored[list];
  }
  for (const map of FEED_MAPS) {
    const value = stored[map];
    if (value && typeof value === "object") settings[map] = Object.fromEntries(Object.entries(value));
  }
  if (Array.isArray(stored.retentionRules)) {
    settings.retentionRules = stored.retentionRules.map((rule) => ({
      ...rule,
      deleteLatestStable: !!rule.deleteLatestStable,
    }));
  }
  if (typeof stored.description === "string") settings.description = stored.description;
  if (typeof stored.dropPath === "string") settings.dropPath = stored.dropPath;
  if (typeof stored.packagesPath === "string") settings.packagesPath = stored.packagesPath;
  if (stored.storage) settings.storage = stored.storage;
  if (typeof stored.allowUnknownLicenses === "boolean") settings.allowUnknownLicenses = stored.allowUnknownLicenses;
  if (stored.cacheHeader) settings.cacheHeader = stored.cacheHeader;
  if (typeof stored.retentionSchedule === "string") settings.retentionSchedule = stored.retentionSchedule;
  return settings;
}

/** Connectors are not part of the JSON: they are rows bound to connector ids (feed-connectors.ts). */
export function encodeSettings(settings: FeedSettings): string {
  const { connectors: _connectors, ...stored } = settings;
  return JSON.stringify(stored);
}
