import { isDeepStrictEqual } from "node:util";
import type { DomainError } from "../../domain/errors.js";
import type { FeedType } from "../../domain/feeds.js";
import { settingNotApplicable, settingNotImplemented } from "../../domain/not-implemented.js";
import type { FeedDraft, FeedSettings, RetentionRule } from "./feed-settings.js";
import { retentionRuleNotForFiles } from "./feed-validation.js";

/**
 * Feed settings of docs/compat.md 5.2 that nothing in Wharf acts on (checked by grepping each
 * stored member's readers), and settings that only mean something for another feed type. Each is
 * stored as before (feed-settings.ts), but only the value that describes what Wharf does is
 * accepted, or the value already stored (a feed an older Wharf stored, sent back whole by pgutil);
 * anything else is refused with a 400 naming the member (domain/not-implemented.ts). Implementing a
 * setting (retention is issue 17) means deleting its line here.
 */

interface SettingRule {
  readonly field: keyof FeedSettings;
  /** The feed types whose feeds the rule checks; absent: every type. */
  readonly checks?: (type: FeedType) => boolean;
  /** Whether the value describes what Wharf does. */
  accepts(value: unknown): boolean;
  readonly refusal: (value: unknown) => DomainError;
}

const isFalse = (value: unknown) => value === false;
const isEmptyList = (value: unknown) => Array.isArray(value) && value.length === 0;
const isEmptyMap = (value: unknown) => typeof value === "object" && value !== null && Object.keys(value).length === 0;
const isAsset = (type: FeedType) => type === "asset";

/** A flag whose `true` would turn on a feature Wharf does not have. */
function offFlag(field: keyof FeedSettings, feature: string): SettingRule {
  return { field, accepts: isFalse, refusal: () => settingNotImplemented(field, feature, "false") };
}

function notImplemented(
  field: keyof FeedSettings,
  feature: string,
  accepted: string,
  accepts: (value: unknown) => boolean,
  checks?: (type: FeedType) => boolean,
): SettingRule {
  return { field, accepts, refusal: () => settingNotImplemented(field, feature, accepted), ...(checks && { checks }) };
}

/** A setting that means something for some feed types only: the others are checked. */
function onlyFor(
  field: keyof FeedSettings,
  appliesTo: (type: FeedType) => boolean,
  where: string,
  accepted: string,
  accepts: (value: unknown) => boolean,
): SettingRule {
  return {
    field,
    checks: (type) => !appliesTo(type),
    accepts,
    refusal: () => settingNotApplicable(field, where, accepted),
  };
}

const RULES: readonly SettingRule[] = [
  offFlag("symbolServerEnabled", "a symbol server"),
  offFlag("stripSymbols", "stripping symbols from packages"),
  offFlag("stripSource", "stripping source files from packages"),
  offFlag("stripSignature", "stripping package signatures"),
  offFlag("useApiV3", "the NuGet v3 API (Wharf serves no NuGet feed)"),
  offFlag("packageStatisticsEnabled", "package statistics"),
  offFlag("restrictPackageStatistics", "package statistics"),
  offFlag("usageRecordsEnabled", "recording package usage"),
  offFlag("vulnerabilitiesEnabled", "vulnerability scanning"),
  offFlag("licensesEnabled", "license checks"),
  offFlag("useWithProjects", "projects (software composition analysis)"),
  // Asset directories take the rule members that make sense for files (areas/retention/evaluate-assets.ts).
  {
    field: "retentionRules",
    checks: isAsset,
    accepts: (value) => retentionRuleNotForFiles(value as RetentionRule[]) === undefined,
    // Asked only after `accepts` said no, so there is a refusal.
    refusal: (value) => retentionRuleNotForFiles(value as RetentionRule[]) as DomainError,
  },
  // Wharf keeps every deployment record it is sent (README "Connector health and deployment records").
  notImplemented("deploymentRecordsEnabled", "turning deployment records off", "true", (value) => value === true),
  notImplemented("allowedLicenses", "license filtering", "[]", isEmptyList),
  notImplemented("blockedLicenses", "license filtering", "[]", isEmptyList),
  // Wharf serves every package whatever its license: that is "allow", or inherit (absent).
  notImplemented(
    "allowUnknownLicenses",
    "blocking packages of unknown license",
    "true or null",
    (value) => value === undefined || value === true,
  ),
  notImplemented("packageFilters", "package filters", "{}", isEmptyMap),
  notImplemented("packageAccessRules", "package access rules", "{}", isEmptyMap),
  // Only the upack routes refuse uploads to an inactive feed; asset directories take them regardless.
  notImplemented("active", "deactivating an asset directory", "true", (value) => value === true, isAsset),
  onlyFor("staticSite", isAsset, "asset directories", "false", isFalse),
  onlyFor("cacheHeader", isAsset, "asset directories", "null", (value) => value === undefined),
  onlyFor("connectors", (type) => !isAsset(type), "universal feeds", "[]", isEmptyList),
];

/**
 * Throws invalid (SETTING_NOT_IMPLEMENTED or SETTING_NOT_APPLICABLE) for the first setting of the
 * draft that Wharf would not act on and that differs from `before` (the stored settings, or the
 * defaults on create).
 */
export function refuseUnimplementedSettings(before: FeedSettings, draft: FeedDraft): void {
  for (const rule of RULES) {
    if (rule.checks && !rule.checks(draft.feedType)) continue;
    const value = draft.settings[rule.field];
    if (rule.accepts(value) || isDeepStrictEqual(value, before[rule.field])) continue;
    throw rule.refusal(value);
  }
}
