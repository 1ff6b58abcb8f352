import { describe, expect, it } from "vitest";
import type { RetentionRule } from "../../src/areas/management/index.js";
import { evaluateRetention, type RetentionCandidate } from "../../src/areas/retention/evaluate.js";
import { parseVersion } from "../../src/domain/upack-version.js";
import { versionSortKey } from "../../src/domain/upack-version-sort.js";

/**
 * Every retention rule and their combinations, as a table: a feed, rules, what goes (in order).
 * Now is 2030-06-01; versions are published `age` days before unless said otherwise.
 */

const NOW = new Date("2030-06-01T00:00:00.000Z");
const daysAgo = (days: number) => new Date(NOW.getTime() - days * 86_400_000).toISOString();

interface V {
  /** `[group/]name@version` */
  id: string;
  age?: number;
  bytes?: number;
  downloadedDaysAgo?: number;
  deployedDaysAgo?: number;
  downloads?: number;
  cached?: boolean;
}

let nextId = 1;
function feed(...versions: V[]): RetentionCandidate[] {
  const packages = new Map<string, number>();
  return versions.map((v) => {
    const [path = "", version = ""] = v.id.split("@");
    const slash = path.lastIndexOf("/");
    const group = slash < 0 ? "" : path.slice(0, slash);
    const name = path.slice(slash + 1);
    if (!packages.has(path)) packages.set(path, packages.size + 1);
    const parsed = parseVersion(version);
    if (!parsed) throw new Error(`bad version ${version}`);
    return {
      id: nextId++,
      packageId: packages.get(path) ?? 0,
      group,
      name,
      version,
      sortKey: versionSortKey(parsed),
      prerelease: parsed.prerelease !== undefined,
      bytes: v.bytes ?? 1024,
      publishedAt: daysAgo(v.age ?? 100),
      lastDownloadedAt: v.downloadedDaysAgo === undefined ? undefined : daysAgo(v.downloadedDaysAgo),
      downloads: v.downloads ?? 0,
      cached: v.cached ?? false,
      lastDeployedAt: v.deployedDaysAgo === undefined ? undefined : daysAgo(v.deployedDaysAgo),
      sha256: "0".repeat(64),
    };
  });
}

function rule(partial: Partial<RetentionRule>): RetentionRule {
  return {
    deletePrereleaseVersions: false,
    deletePackageIds: [],
    keepPackageIds: [],
    keepVersions: [],
    deleteVersions: [],
    deleteCached: false,
    sizeExclusive: false,
    keepIfActivelyConsumed: false,
    deleteLatestStable: false,
    ...partial,
  };
}

const label = (c: RetentionCandidate) => `${c.group ? `${c.group}/` : ""}${c.name}@${c.version}`;

interface Case {
  name: string;
  versions: V[];
  rules: Partial<RetentionRule>[];
  /** What goes, as `id#rule` (rule from 1), in the order decided. */
  deleted: string[];
}

const A3 = [{ id: "a@1.0.0" }, { id: "a@2.0.0" }, { id: "a@3.0.0" }];

const cases: Case[] = [
  {
    name: "keep the latest 2: the oldest goes",
    versions: A3,
    rules: [{ keepVersionsCount: 2 }],
    deleted: ["a@1.0.0#1"],
  },
  { name: "keep the latest 3 of 3: nothing", versions: A3, rules: [{ keepVersionsCount: 3 }], deleted: [] },
  {
    name: "keep the latest 0: all but the latest stable",
    versions: A3,
    rules: [{ keepVersionsCount: 0 }],
    deleted: ["a@2.0.0#1", "a@1.0.0#1"],
  },
  {
    name: "keep the latest 0 with deleteLatestStable: all",
    versions: A3,
    rules: [{ keepVersionsCount: 0, deleteLatestStable: true }],
    deleted: ["a@3.0.0#1", "a@2.0.0#1", "a@1.0.0#1"],
  },
  {
    name: "keep latest N counts each package on its own",
    versions: [...A3, { id: "b@1.0.0" }, { id: "b@1.1.0" }],
    rules: [{ keepVersionsCount: 1 }],
    deleted: ["a@2.0.0#1", "a@1.0.0#1", "b@1.0.0#1"],
  },
  {
    name: "prereleases only: keep the latest prerelease, stables untouched",
    versions: [{ id: "a@1.0.0" }, { id: "a@2.0.0-rc.1" }, { id: "a@2.0.0-rc.2" }, { id: "a@0.9.0" }],
    rules: [{ deletePrereleaseVersions: true, keepVersionsCount: 1 }],
    deleted: ["a@2.0.0-rc.1#1"],
  },
  {
    name: "all versions count prereleases: the newest prerelease is among the latest",
    versions: [{ id: "a@1.0.0" }, { id: "a@1.1.0" }, { id: "a@2.0.0-rc.1" }],
    rules: [{ keepVersionsCount: 1 }],
    // 1.1.0 stays as the latest stable version
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "not downloaded for 30 days; never downloaded counts from publication",
    versions: [
      { id: "a@1.0.0", downloadedDaysAgo: 45 },
      { id: "a@2.0.0", downloadedDaysAgo: 5 },
      { id: "a@3.0.0-b", age: 10 },
      { id: "a@2.5.0", age: 40 },
      { id: "a@4.0.0" },
    ],
    rules: [{ keepUsedWithinDays: 30 }],
    deleted: ["a@2.5.0#1", "a@1.0.0#1"],
  },
  {
    name: "older than 50 days",
    versions: [
      { id: "a@1.0.0", age: 60 },
      { id: "a@2.0.0", age: 40 },
      { id: "a@3.0.0", age: 70 },
      { id: "a@4.0.0", age: 1 },
    ],
    rules: [{ deleteOlderThanDays: 50 }],
    deleted: ["a@3.0.0#1", "a@1.0.0#1"],
  },
  {
    name: "older than D days spares the latest stable even when it is old",
    versions: [
      { id: "a@1.0.0", age: 60 },
      { id: "a@2.0.0", age: 60 },
    ],
    rules: [{ deleteOlderThanDays: 50 }],
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "only packages matching deletePackageIds (group/name or name)",
    versions: [
      { id: "temp/a@1.0.0" },
      { id: "temp/a@2.0.0" },
      { id: "b@1.0.0" },
      { id: "b@2.0.0" },
      { id: "c@1.0.0" },
      { id: "c@2.0.0" },
    ],
    rules: [{ keepVersionsCount: 1, deletePackageIds: ["temp/*", "c"] }],
    deleted: ["temp/a@1.0.0#1", "c@1.0.0#1"],
  },
  {
    name: "include and exclude: `*` with `!b*`",
    versions: [{ id: "a@1.0.0" }, { id: "a@2.0.0" }, { id: "bee@1.0.0" }, { id: "bee@2.0.0" }],
    rules: [{ keepVersionsCount: 1, deletePackageIds: ["*", "!b*"] }],
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "keepPackageIds never go",
    versions: [{ id: "a@1.0.0" }, { id: "a@2.0.0" }, { id: "keep.me@1.0.0" }, { id: "keep.me@2.0.0" }],
    rules: [{ keepVersionsCount: 1, keepPackageIds: ["KEEP.*"] }],
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "version patterns: deleteVersions and keepVersions",
    versions: [{ id: "a@1.0.0" }, { id: "a@1.1.0" }, { id: "a@1.2.0" }, { id: "a@2.0.0" }],
    rules: [{ deleteVersions: ["1.*"], keepVersions: ["1.1.*"] }],
    deleted: ["a@1.2.0#1", "a@1.0.0#1"],
  },
  {
    name: "a version deployed within 30 days (the default) stays; older deployments do not protect",
    versions: [
      { id: "a@1.0.0", deployedDaysAgo: 3 },
      { id: "a@2.0.0", deployedDaysAgo: 45 },
      { id: "a@3.0.0" },
      { id: "a@4.0.0" },
    ],
    rules: [{ keepVersionsCount: 1 }],
    deleted: ["a@3.0.0#1", "a@2.0.0#1"],
  },
  {
    name: "keepDeployedWithinDays: 0 lets deployed versions go",
    versions: [{ id: "a@1.0.0", deployedDaysAgo: 1 }, { id: "a@2.0.0" }],
    rules: [{ keepVersionsCount: 1, keepDeployedWithinDays: 0 }],
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "keepDeployedWithinDays: 90 protects a deployment of 45 days ago",
    versions: [{ id: "a@1.0.0", deployedDaysAgo: 45 }, { id: "a@2.0.0" }],
    rules: [{ keepVersionsCount: 1, keepDeployedWithinDays: 90 }],
    deleted: [],
  },
  {
    name: "cached connector packages only by a deleteCached rule",
    versions: [
      { id: "a@1.0.0", cached: true },
      { id: "a@2.0.0", cached: true },
      { id: "a@3.0.0", cached: true },
      { id: "b@1.0.0" },
      { id: "b@2.0.0" },
    ],
    rules: [{ deleteCached: true, keepVersionsCount: 1 }],
    deleted: ["a@2.0.0#1", "a@1.0.0#1"],
  },
  {
    name: "a rule without deleteCached leaves cached versions alone",
    versions: [
      { id: "a@1.0.0", cached: true },
      { id: "a@2.0.0", cached: true },
      { id: "a@3.0.0", cached: true },
    ],
    rules: [{ deleteOlderThanDays: 1 }],
    deleted: [],
  },
  {
    name: "downloaded fewer than N times",
    versions: [
      { id: "a@1.0.0", downloads: 2 },
      { id: "a@2.0.0", downloads: 10 },
      { id: "a@3.0.0", downloads: 0 },
    ],
    rules: [{ triggerDownloadCount: 5 }],
    deleted: ["a@1.0.0#1"],
  },
  {
    name: "size trigger below the feed's size: the rule does nothing",
    versions: A3.map((v) => ({ ...v, bytes: 1024 })),
    rules: [{ keepVersionsCount: 0, sizeTriggerKb: 3 }],
    deleted: [],
  },
  {
    name: "size trigger exceeded, not exclusive: every candidate goes",
    versions: [...A3, { id: "a@0.1.0" }].map((v) => ({ ...v, bytes: 1024 })),
    rules: [{ keepVersionsCount: 0, sizeTriggerKb: 3 }],
    deleted: ["a@2.0.0#1", "a@1.0.0#1", "a@0.1.0#1"],
  },
  {
    name: "size cap (exclusive): oldest first until the feed fits",
    versions: [
      { id: "a@1.0.0", age: 30, bytes: 2048 },
      { id: "a@2.0.0", age: 50, bytes: 2048 },
      { id: "b@1.0.0", age: 40, bytes: 2048 },
      { id: "b@2.0.0", age: 10, bytes: 2048 },
      { id: "c@1.0.0", age: 5, bytes: 2048 },
    ],
    rules: [{ keepVersionsCount: 0, sizeTriggerKb: 6, sizeExclusive: true, deleteLatestStable: true }],
    // 10 KB: a@2.0.0 (oldest, 50 days) and b@1.0.0 (40) go, then 6 KB fits
    deleted: ["a@2.0.0#1", "b@1.0.0#1"],
  },
  {
    name: "rules in order: a later rule counts what the earlier left",
    versions: [{ id: "a@1.0.0-rc" }, { id: "a@1.0.0" }, { id: "a@1.1.0-rc" }, { id: "a@1.1.0" }, { id: "a@1.2.0" }],
    rules: [{ deletePrereleaseVersions: true, keepVersionsCount: 0 }, { keepVersionsCount: 2 }],
    deleted: ["a@1.1.0-rc#1", "a@1.0.0-rc#1", "a@1.0.0#2"],
  },
  {
    name: "combination: package pattern, age and not downloaded, protections",
    versions: [
      { id: "ci/app@1.0.0", age: 200, downloadedDaysAgo: 100 },
      { id: "ci/app@1.1.0", age: 150, downloadedDaysAgo: 2 },
      { id: "ci/app@1.2.0", age: 120, deployedDaysAgo: 1 },
      { id: "ci/app@1.3.0", age: 90 },
      { id: "ci/app@1.4.0", age: 10 },
      { id: "lib@1.0.0", age: 300 },
      { id: "lib@2.0.0", age: 300 },
    ],
    rules: [{ deletePackageIds: ["ci/*"], deleteOlderThanDays: 60, keepUsedWithinDays: 30 }],
    deleted: ["ci/app@1.3.0#1", "ci/app@1.0.0#1"],
  },
];

describe("evaluateRetention", () => {
  it.each(cases)("$name", ({ versions, rules, deleted }) => {
    const decisions = evaluateRetention(feed(...versions), rules.map(rule), NOW);
    expect(decisions.map((d) => `${label(d.candidate)}#${d.rule + 1}`)).toEqual(deleted);
  });

  it("says why, with the age in days", () => {
    const [decision] = evaluateRetention(
      feed({ id: "a@1.0.0", age: 45, downloadedDaysAgo: 40 }, { id: "a@2.0.0" }),
      [rule({ keepUsedWithinDays: 30, deleteOlderThanDays: 40 })],
      NOW,
    );
    expect(decision).toMatchObject({ rule: 0, ageDays: 45 });
    expect(decision?.reason).toBe("not downloaded for 30 days; published over 40 days ago");
  });

  it("no rules, nothing deleted", () => {
    expect(evaluateRetention(feed(...A3), [], NOW)).toEqual([]);
  });

  it("is fast enough for 100,000 versions", () => {
    const many: V[] = [];
    for (let p = 0; p < 1000; p++) for (let v = 0; v < 100; v++) many.push({ id: `p${p}@1.0.${v}`, age: v });
    const rows = feed(...many);
    const started = performance.now();
    const decisions = evaluateRetention(rows, [rule({ keepVersionsCount: 10 }), rule({ deleteOlderThanDays: 5 })], NOW);
    expect(decisions).toHaveLength(99_000);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
