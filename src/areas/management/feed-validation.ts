import { DomainError, invalid } from "../../domain/errors.js";
import { validateFeedName } from "../../domain/feeds.js";
import { settingNotImplemented } from "../../domain/not-implemented.js";
import { compilePatterns } from "../../domain/patterns.js";
import type { RetentionRule } from "./feed-settings.js";
import type { RetentionRuleInput } from "./schemas.js";

/** Rules for the parts of a Feed that are not scalars. Each throws invalid (400) naming the field. */

/** Trims, drops duplicates (case-insensitively, first spelling wins) and refuses empty entries. */
export function normalizeList(field: string, values: readonly string[]): string[] {
  const seen = new Set<string>();
  const result: string[] = [];
  for (const raw of values) {
    const value = raw.trim();
    if (value === "") throw invalid("INVALID_FEED", `${field} must not contain empty entries`);
    const key = value.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    result.push(value);
  }
  return result;
}

/** Alternate names follow the feed name rules; the primary name is dropped from them (it is no alternate). */
export function normalizeAlternateNames(values: readonly string[], primary: string): string[] {
  return normalizeList("alternateNames", values)
    .map((name) => {
      try {
        return validateFeedName(name);
      } catch (error) {
        throw withField("alternateNames", error);
      }
    })
    .filter((name) => name.toLowerCase() !== primary.toLowerCase());
}

/** A feed group name follows the feed name rules; empty means none. */
export function normalizeFeedGroup(value: string): string | undefined {
  if (value.trim() === "") return undefined;
  try {
    return validateFeedName(value.trim());
  } catch (error) {
    throw withField("feedGroup", error);
  }
}

// Names of filters, access rules and variables: a letter or digit first, then letters, digits,
// spaces, '-', '_' or '.'; this also keeps `__proto__` and friends out of stored objects.
const ENTRY_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}$/;

/**
 * Feed filters and access rules: name -> pattern list, e.g. `{"approved": "Microsoft.*, !Rubbish.*"}`
 * (docs/seed-api.md "Feed (area I)": `*` wildcard, `!` excludes). Patterns are separated by commas or
 * line breaks and stored normalised (`, `-joined). ProGet's persisted-XML filter components do not
 * exist in Wharf, so XML values are refused instead of being stored and silently ignored.
 */
export function normalizePatternMap(field: string, map: Record<string, string>): Record<string, string> {
  const entries: [string, string][] = [];
  for (const [name, value] of Object.entries(map)) {
    checkEntryName(field, name);
    if (value.trim().startsWith("<")) {
      throw invalid(
        "INVALID_FEED",
        `${field}['${name}']: persisted-XML filter components are not supported; give a pattern list such as "A.*, !C.*"`,
      );
    }
    const patterns = value.split(/[,\r\n]+/).filter((p) => p.trim() !== "");
    if (patterns.length === 0) throw invalid("INVALID_FEED", `${field}['${name}'] must contain at least one pattern`);
    try {
      entries.push([name, compilePatterns(patterns).patterns.join(", ")]);
    } catch (error) {
      throw withField(`${field}['${name}']`, error);
    }
  }
  return Object.fromEntries(entries);
}

/** Variables (old feed-management doc): names as checkEntryName, values any string. */
export function normalizeVariables(field: string, map: Record<string, string>): Record<string, string> {
  for (const name of Object.keys(map)) checkEntryName(field, name);
  return Object.fromEntries(Object.entries(map));
}

function checkEntryName(field: string, name: string): void {
  if (!ENTRY_NAME.test(name)) {
    throw invalid(
      "INVALID_FEED",
      `${field}: name '${name.slice(0, 100)}' must start with a letter or digit and contain at most 100 letters, digits, spaces, '.', '-' or '_'`,
    );
  }
}

/**
 * Retention rules are replaced wholesale; within a rule, omitted or null members take their
 * defaults (areas/retention/evaluate.ts says what each member does). The "delete" lists take `!`
 * exclusions (Wharf extension: the feed filters' pattern lists); the "keep" lists are plain.
 */
export function normalizeRetentionRule(input: RetentionRuleInput, index: number): RetentionRule {
  const wildcards = (
    name: keyof RetentionRuleInput & string,
    values: string[] | null | undefined,
    allowNegation = false,
  ): string[] => {
    const field = `retentionRules[${index}].${name}`;
    const list = normalizeList(field, values ?? []);
    try {
      return [...compilePatterns(list, { allowNegation }).patterns];
    } catch (error) {
      throw withField(field, error);
    }
  };
  refuseUsageCriteria(input, index);
  const rule: RetentionRule = {
    deletePrereleaseVersions: input.deletePrereleaseVersions ?? false,
    deletePackageIds: wildcards("deletePackageIds", input.deletePackageIds, true),
    keepPackageIds: wildcards("keepPackageIds", input.keepPackageIds),
    keepVersions: wildcards("keepVersions", input.keepVersions),
    deleteVersions: wildcards("deleteVersions", input.deleteVersions, true),
    deleteCached: input.deleteCached ?? false,
    sizeExclusive: input.sizeExclusive ?? false,
    keepIfActivelyConsumed: false,
    deleteLatestStable: input.deleteLatestStable ?? false,
  };
  const numbers = [
    "keepVersionsCount",
    "keepUsedWithinDays",
    "sizeTriggerKb",
    "triggerDownloadCount",
    "deleteOlderThanDays",
    "keepDeployedWithinDays",
  ] as const;
  for (const name of numbers) {
    const value = input[name];
    if (value !== null && value !== undefined) rule[name] = value;
  }
  if (rule.sizeExclusive && rule.sizeTriggerKb === undefined) {
    throw invalid(
      "INVALID_FEED",
      `retentionRules[${index}].sizeExclusive needs sizeTriggerKb (the size to stay under)`,
    );
  }
  const narrowing = [
    rule.keepVersionsCount,
    rule.keepUsedWithinDays,
    rule.sizeTriggerKb,
    rule.triggerDownloadCount,
    rule.deleteOlderThanDays,
  ].some((value) => value !== undefined);
  if (!narrowing && rule.deletePackageIds.length === 0 && rule.deleteVersions.length === 0) {
    throw invalid(
      "INVALID_FEED",
      `retentionRules[${index}] would delete every version of the feed: give at least one of keepVersionsCount, ` +
        "keepUsedWithinDays, deleteOlderThanDays, triggerDownloadCount, sizeTriggerKb, deletePackageIds or deleteVersions",
    );
  }
  return rule;
}

/**
 * The members of a retention rule that mean nothing for the files of an asset directory, and why
 * (areas/retention/evaluate-assets.ts says what the others do there). Wharf records when a file
 * was last downloaded, not how often, so triggerDownloadCount is among them.
 */
const NOT_FOR_FILES: readonly (readonly [keyof RetentionRule, (rule: RetentionRule) => boolean, string])[] = [
  ["keepVersionsCount", (rule) => rule.keepVersionsCount !== undefined, "files have no versions to count"],
  ["deletePrereleaseVersions", (rule) => rule.deletePrereleaseVersions, "files have no prerelease versions"],
  ["keepVersions", (rule) => rule.keepVersions.length > 0, "files have no versions"],
  ["deleteVersions", (rule) => rule.deleteVersions.length > 0, "files have no versions"],
  ["deleteCached", (rule) => rule.deleteCached, "asset directories cache nothing from connectors"],
  ["deleteLatestStable", (rule) => rule.deleteLatestStable, "files have no versions"],
  ["keepDeployedWithinDays", (rule) => rule.keepDeployedWithinDays !== undefined, "files have no deployment records"],
  [
    "triggerDownloadCount",
    (rule) => rule.triggerDownloadCount !== undefined,
    "Wharf records when a file was last downloaded, not how often (use keepUsedWithinDays)",
  ],
];

/** The refusal (400 naming the member) of the first rule member that does not apply to files, if any. */
export function retentionRuleNotForFiles(rules: readonly RetentionRule[]): DomainError | undefined {
  for (const [index, rule] of rules.entries()) {
    const found = NOT_FOR_FILES.find(([, given]) => given(rule));
    if (found === undefined) continue;
    const [field, , why] = found;
    return invalid(
      "SETTING_NOT_APPLICABLE",
      `retentionRules[${index}].${field}: does not apply to an asset directory (${why}); its rules take ` +
        "deletePackageIds and keepPackageIds (path patterns), keepUsedWithinDays, deleteOlderThanDays, " +
        "sizeTriggerKb and sizeExclusive",
    );
  }
  return undefined;
}

/** Package usage (ProGet's projects) does not exist in Wharf: its criteria are refused, not ignored. */
function refuseUsageCriteria(input: RetentionRuleInput, index: number): void {
  const given = (["keepConsumedWithinDays", "keepPackageUsageRemovedDays"] as const).find(
    (name) => input[name] !== null && input[name] !== undefined,
  );
  if (given !== undefined || input.keepIfActivelyConsumed === true) {
    throw settingNotImplemented(
      `retentionRules[${index}].${given ?? "keepIfActivelyConsumed"}`,
      "package usage records (projects)",
      given === undefined ? "false" : "null",
    );
  }
}

/** Prefixes a domain error's message with the field it is about; other errors pass unchanged. */
export function withField(field: string, error: unknown): unknown {
  if (error instanceof DomainError) {
    return new DomainError(error.kind, error.code, `${field}: ${error.message}`, { cause: error });
  }
  return error;
}
