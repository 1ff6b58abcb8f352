import { describe, expect, it } from "vitest";
import { mergeFeedInput } from "../../src/areas/management/feed-merge.js";
import { defaultSettings, type FeedDraft } from "../../src/areas/management/feed-settings.js";
import { normalizePatternMap, normalizeRetentionRule } from "../../src/areas/management/feed-validation.js";
import { DomainError } from "../../src/domain/errors.js";

function caught(action: () => unknown): DomainError {
  try {
    action();
  } catch (error) {
    if (error instanceof DomainError) return error;
    throw error;
  }
  throw new Error("expected a DomainError");
}

/** A nuget feed as an older Wharf stored it, with settings Wharf never acted on (kept when sent back). */
const current: FeedDraft = {
  name: "Main",
  alternateNames: ["old"],
  feedType: "nuget",
  feedGroup: "team",
  settings: {
    ...defaultSettings(),
    description: "keep me",
    active: false,
    allowUnknownLicenses: true,
    connectors: [],
    allowedLicenses: ["MIT"],
    packageFilters: { a: "A.*" },
    variables: { x: "1" },
    retentionRules: [
      {
        deletePrereleaseVersions: true,
        deletePackageIds: [],
        keepPackageIds: [],
        keepVersions: [],
        deleteVersions: [],
        deleteCached: false,
        sizeExclusive: false,
        keepIfActivelyConsumed: false,
        deleteLatestStable: false,
        keepVersionsCount: 3,
      },
    ],
  },
};

describe("mergeFeedInput: partial update rules (docs/compat.md 5.1)", () => {
  it("an empty update changes nothing and does not mutate the current feed", () => {
    const snapshot = structuredClone(current);
    expect(mergeFeedInput(current, {})).toEqual(current);
    expect(current).toEqual(snapshot);
  });

  it("null scalars keep their values; null lists and maps keep theirs too", () => {
    const merged = mergeFeedInput(current, {
      name: null,
      feedType: null,
      active: null,
      allowedLicenses: null,
      packageFilters: null,
      variables: null,
      retentionRules: null,
    });
    expect(merged).toEqual(current);
  });

  it("null removes description, allowUnknownLicenses (inherit) and feedGroup; blank description removes too", () => {
    const merged = mergeFeedInput(current, { description: null, allowUnknownLicenses: null, feedGroup: null });
    expect(merged.settings).not.toHaveProperty("description");
    expect(merged.settings).not.toHaveProperty("allowUnknownLicenses");
    expect(merged).not.toHaveProperty("feedGroup");
    expect(mergeFeedInput(current, { description: "  " }).settings).not.toHaveProperty("description");
  });

  it("lists and maps are replaced wholesale, never appended", () => {
    const merged = mergeFeedInput(current, {
      alternateNames: ["newer"],
      allowedLicenses: [],
      packageFilters: {},
      variables: { y: "2" },
    });
    expect(merged.alternateNames).toEqual(["newer"]);
    expect(merged.settings.allowedLicenses).toEqual([]);
    expect(merged.settings.packageFilters).toEqual({});
    expect(merged.settings.variables).toEqual({ y: "2" });
  });

  it("lists are trimmed and de-duplicated case-insensitively (first spelling wins)", () => {
    expect(mergeFeedInput(current, { alternateNames: [" next ", "NEXT", "other"] }).alternateNames).toEqual([
      "next",
      "other",
    ]);
  });

  it("a retention rule's omitted members take defaults; its booleans are always set", () => {
    const rule = normalizeRetentionRule({ keepUsedWithinDays: 30, keepVersions: null }, 0);
    expect(rule).toEqual({
      deletePrereleaseVersions: false,
      keepUsedWithinDays: 30,
      deletePackageIds: [],
      keepPackageIds: [],
      keepVersions: [],
      deleteVersions: [],
      deleteCached: false,
      sizeExclusive: false,
      keepIfActivelyConsumed: false,
      deleteLatestStable: false,
    });
  });

  it("renaming keeps alternates but drops the new primary name from them", () => {
    const renamed = mergeFeedInput(current, { name: "OLD" });
    expect(renamed.name).toBe("OLD");
    expect(renamed.alternateNames).toEqual([]);
    expect(mergeFeedInput(current, { name: "New" }).alternateNames).toEqual(["old"]);
  });

  it("variables vs variableDictionary: the edited one wins; both edited differently is refused", () => {
    expect(
      mergeFeedInput(current, { variables: { x: "1" }, variableDictionary: { x: "2" } }).settings.variables,
    ).toEqual({
      x: "2",
    });
    expect(
      mergeFeedInput(current, { variables: { z: "9" }, variableDictionary: { x: "1" } }).settings.variables,
    ).toEqual({
      z: "9",
    });
    expect(
      mergeFeedInput(current, { variables: { z: "9" }, variableDictionary: { z: "9" } }).settings.variables,
    ).toEqual({
      z: "9",
    });
    expect(caught(() => mergeFeedInput(current, { variables: { a: "1" }, variableDictionary: { b: "1" } })).kind).toBe(
      "invalid",
    );
  });

  it("feed type changes stay inside their family, and only to a type Wharf serves", () => {
    const universal = mergeFeedInput(undefined, { name: "u", feedType: "universal" });
    expect(mergeFeedInput(universal, { feedType: "ROMP" }).feedType).toBe("romp");
    expect(caught(() => mergeFeedInput(universal, { feedType: "asset" })).code).toBe("FEED_TYPE_CHANGE");
    expect(caught(() => mergeFeedInput(current, { feedType: "Chocolatey" })).code).toBe("FEED_TYPE_NOT_SERVED");
    expect(caught(() => mergeFeedInput(current, { feedType: "universal" })).code).toBe("FEED_TYPE_CHANGE");
    // Sending back the type an older Wharf stored is no change.
    expect(mergeFeedInput(current, { feedType: "NuGet" })).toEqual(current);
  });

  it("on create, name and type are required and defaults fill the rest", () => {
    expect(caught(() => mergeFeedInput(undefined, { feedType: "universal" })).message).toBe("feed name is required");
    expect(caught(() => mergeFeedInput(undefined, { name: "x" })).message).toBe("a valid feed type is required");
    const created = mergeFeedInput(undefined, { name: "x", feedType: "ProGet" });
    expect(created).toEqual({ name: "x", alternateNames: [], feedType: "universal", settings: defaultSettings() });
  });

  it("path settings Wharf cannot honour are refused unless null, blank or omitted", () => {
    expect(caught(() => mergeFeedInput(current, { packagesPath: "/srv" })).code).toBe("UNSUPPORTED_SETTING");
    expect(caught(() => mergeFeedInput(current, { dropPath: "C:\\drop" })).code).toBe("UNSUPPORTED_SETTING");
    expect(mergeFeedInput(current, { packagesPath: null, dropPath: "", packageStore: "" })).toEqual(current);
  });

  it("pattern maps are normalised and validated", () => {
    // Filters are refused until Wharf acts on them, but checked first so that the refusal is the last word.
    expect(normalizePatternMap("packageFilters", { approved: "A.*,\n B.* ,!C.*" })).toEqual({
      approved: "A.*, B.*, !C.*",
    });
    expect(caught(() => mergeFeedInput(current, { packageFilters: { f: " , " } })).message).toContain(
      "at least one pattern",
    );
    expect(caught(() => mergeFeedInput(current, { packageAccessRules: { r: "!" } })).message).toContain(
      "packageAccessRules['r']",
    );
  });
});
