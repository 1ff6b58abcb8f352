import { invalid } from "../../domain/errors.js";
import {
  canChangeFeedType,
  normalizeFeedType,
  normalizeServedFeedType,
  requireServedFeedType,
  validateFeedName,
} from "../../domain/feeds.js";
import {
  checkObjectStoreSupport,
  parsePackageStoreXml,
  type StorageConfig,
  validateStorageConfig,
} from "../../domain/package-store.js";
import { INHERIT, parseCacheHeader } from "../../domain/cache-header.js";
import { defaultSettings, FEED_FLAGS, type FeedDraft, type FeedSettings } from "./feed-settings.js";
import {
  normalizeAlternateNames,
  normalizeFeedGroup,
  normalizeList,
  normalizePatternMap,
  normalizeRetentionRule,
  normalizeVariables,
  withField,
} from "./feed-validation.js";
import { refuseUnimplementedSettings } from "./feed-unimplemented.js";
import { parseRetentionSchedule } from "../retention/schedule.js";
import type { FeedInput } from "./schemas.js";

/**
 * Applies a create (current undefined) or partial update (docs/compat.md 5.1): omitted or null scalars
 * keep their value, except the "supply null to remove" members description, dropPath,
 * packagesPath, packageStore (and allowUnknownLicenses, whose null means "inherit", and Wharf's
 * feedGroup); arrays and objects replace the current value wholesale; read-only members are
 * ignored. Pure and synchronous, so the repository can run it inside its transaction.
 */
export function mergeFeedInput(current: FeedDraft | undefined, input: FeedInput): FeedDraft {
  const name = input.name === null || input.name === undefined ? current?.name : input.name;
  const validName = validateFeedName(name);
  const feedType = mergeFeedType(current, input.feedType);

  const before = current?.settings ?? defaultSettings();
  const settings: FeedSettings = { ...before };
  for (const flag of FEED_FLAGS) settings[flag] = input[flag] ?? before[flag];

  setOptional(settings, "description", removable(input.description, before.description));
  setOptional(settings, "dropPath", unsupportedPath("dropPath", input.dropPath, before.dropPath, DROP_PATH_REASON));
  setOptional(
    settings,
    "packagesPath",
    unsupportedPath("packagesPath", input.packagesPath, before.packagesPath, DATA_DIR_REASON),
  );
  if (input.packageStore !== undefined) {
    const xml = input.packageStore?.trim() ? input.packageStore : undefined;
    setOptional(settings, "storage", xml === undefined ? undefined : storageFromXml(xml, before.storage));
  }
  if (input.cacheHeader !== undefined) {
    const setting = input.cacheHeader === null ? INHERIT : parseCacheHeader(input.cacheHeader);
    setOptional(settings, "cacheHeader", setting.type === "Inherit" ? undefined : setting);
  }
  if (input.allowUnknownLicenses !== undefined)
    setOptional(settings, "allowUnknownLicenses", input.allowUnknownLicenses ?? undefined);

  for (const field of ["allowedLicenses", "blockedLicenses", "connectors", "vulnerabilitySources"] as const) {
    const value = input[field];
    if (value !== null && value !== undefined) settings[field] = normalizeList(field, value);
  }
  if (input.packageFilters) settings.packageFilters = normalizePatternMap("packageFilters", input.packageFilters);
  if (input.packageAccessRules) {
    settings.packageAccessRules = normalizePatternMap("packageAccessRules", input.packageAccessRules);
  }
  settings.variables = mergeVariables(before.variables, input);
  if (input.retentionRules) settings.retentionRules = input.retentionRules.map(normalizeRetentionRule);
  if (input.retentionSchedule !== undefined) {
    const schedule = input.retentionSchedule?.trim() ? parseRetentionSchedule(input.retentionSchedule) : undefined;
    if (schedule === undefined) delete settings.retentionSchedule;
    else settings.retentionSchedule = schedule.expression;
  }

  const alternateNames = normalizeAlternateNames(input.alternateNames ?? current?.alternateNames ?? [], validName);
  const group =
    input.feedGroup === undefined
      ? current?.feedGroup
      : input.feedGroup === null
        ? undefined
        : normalizeFeedGroup(input.feedGroup);
  const draft = {
    name: validName,
    alternateNames,
    feedType,
    ...(group === undefined ? {} : { feedGroup: group }),
    settings,
  };
  refuseUnimplementedSettings(before, draft);
  return draft;
}

function mergeFeedType(current: FeedDraft | undefined, input: string | null | undefined) {
  if (current === undefined) return normalizeServedFeedType(input);
  if (input === null || input === undefined) return current.feedType;
  const next = normalizeFeedType(input);
  // A feed an older Wharf created with a type it does not serve keeps it when a client sends it back.
  if (next === current.feedType) return next;
  requireServedFeedType(next);
  if (!canChangeFeedType(current.feedType, next)) {
    throw invalid(
      "FEED_TYPE_CHANGE",
      `the feed type cannot be changed from ${current.feedType} to ${next}; ` +
        "a type can only change within universal/romp or nuget/chocolatey/powershell",
    );
  }
  return next;
}

/** undefined keeps, null or blank removes, anything else replaces. */
function removable(input: string | null | undefined, current: string | undefined): string | undefined {
  if (input === undefined) return current;
  return input === null || input.trim() === "" ? undefined : input;
}

function setOptional<
  K extends "description" | "dropPath" | "packagesPath" | "storage" | "allowUnknownLicenses" | "cacheHeader",
>(settings: FeedSettings, key: K, value: FeedSettings[K] | undefined): void {
  if (value === undefined) delete settings[key];
  else settings[key] = value;
}

const DATA_DIR_REASON =
  "Wharf stores package content as content-addressed blobs under its data directory (WHARF_DATA_DIR), " +
  "so a per-feed disk path would have no effect; omit it or send null";
const DROP_PATH_REASON =
  "Wharf does not import packages from server directories; upload them over HTTP instead; omit it or send null";

/** A path setting Wharf cannot honour: refused rather than stored and silently ignored. */
function unsupportedPath(field: string, input: string | null | undefined, current: string | undefined, reason: string) {
  const value = removable(input, current);
  if (value !== undefined && value !== current) {
    throw invalid("UNSUPPORTED_SETTING", `${field} is not supported: ${reason}`);
  }
  return value;
}

function storageFromXml(xml: string, current: StorageConfig | undefined): StorageConfig | undefined {
  try {
    return supportedStorage(parsePackageStoreXml(xml), current);
  } catch (error) {
    throw withField("packageStore", error);
  }
}

/**
 * The storage rule shared by `packageStore` and `POST /api/storage`. Returns undefined for the
 * default (the server's default store), so that "default" has one representation. Secrets come
 * back as given (HIDDEN_SECRET included): the feed service seals them (storage-secrets.ts).
 */
export function supportedStorage(config: StorageConfig, current: StorageConfig | undefined): StorageConfig | undefined {
  const { properties } = config;
  if (config.id === "disk") {
    const path = properties.StoragePath ?? null;
    if (path !== null && path !== (current?.properties.StoragePath ?? null)) {
      throw invalid("UNSUPPORTED_SETTING", `StoragePath is not supported: ${DATA_DIR_REASON}`);
    }
    return path === null ? undefined : config;
  }
  checkObjectStoreSupport(config);
  return config;
}

/** Validates a FeedStorageConfiguration body (the shape, then what Wharf supports). */
export function storageFromInput(input: unknown, current: StorageConfig | undefined): StorageConfig | undefined {
  return supportedStorage(validateStorageConfig(input), current);
}

/**
 * `variables` (docs) and `variableDictionary` (pgutil) are one setting (docs/compat.md 11). A client
 * that read a feed and posts it back sends both, with only the one it knows about edited: so the
 * one that differs from the current value wins; two different edits are refused.
 */
function mergeVariables(current: Record<string, string>, input: FeedInput): Record<string, string> {
  const given = [
    input.variables ? normalizeVariables("variables", input.variables) : undefined,
    input.variableDictionary ? normalizeVariables("variableDictionary", input.variableDictionary) : undefined,
  ].filter((v): v is Record<string, string> => v !== undefined);
  const changed = given.filter((v) => !sameMap(v, current));
  const [first, second] = changed;
  if (first === undefined) return current;
  if (second !== undefined && !sameMap(first, second)) {
    throw invalid(
      "INVALID_FEED",
      "variables and variableDictionary are the same setting but were given different values",
    );
  }
  return first;
}

function sameMap(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}
