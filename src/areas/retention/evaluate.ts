import type { PatternList } from "../../domain/patterns.js";
import type { RetentionRule } from "../management/feed-settings.js";
import { applySizeTrigger, type Chosen, listOrNone, sizeTriggered } from "./size-cap.js";

/**
 * Which versions a feed's retention rules delete, and why (issue 17 section 1). Pure: the caller
 * reads the rows (repository.ts) and acts on the answer, so that a preview and a run are the same
 * computation over the same rows and the rules can be tested as a table (test/unit/retention*).
 *
 * Rules apply in order, each to the versions the earlier ones left: "the latest N" and "the latest
 * stable version" are counted among what is still there, and a size cap measures the feed as the
 * earlier rules left it. Within a rule every criterion given must hold (they narrow, never widen):
 * - scope: `deleteCached` rules see only versions cached from a connector, the others only local
 *   ones; `deletePrereleaseVersions` rules see only prereleases;
 * - packages: `deletePackageIds` (only these; `!` excludes) and `keepPackageIds` (never these),
 *   matched against `group/name` (or `name` without a group) and against the name alone;
 * - versions: `deleteVersions` (only these; `!` excludes) and `keepVersions` (never these);
 * - `keepVersionsCount`: the latest N of each package, among the versions in the rule's scope, stay;
 * - `keepUsedWithinDays`: versions downloaded (or published, if never downloaded) within D days stay;
 * - `deleteOlderThanDays` (Wharf): only versions published more than D days ago;
 * - `triggerDownloadCount`: only versions downloaded fewer than N times;
 * - protections (Wharf), unless the rule turns them off: a version deployed within
 *   `keepDeployedWithinDays` (default 30; 0 turns it off), the latest stable version of each
 *   package (`deleteLatestStable`);
 * - `sizeTriggerKb`: the rule acts only while the feed is larger than this; with `sizeExclusive`
 *   it deletes its candidates oldest first only until the feed fits (a cap on the feed's size).
 */

export interface RetentionCandidate {
  readonly id: number;
  readonly packageId: number;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  /** Orders versions of one package: higher is newer (upack_versions.sort_key). */
  readonly sortKey: string;
  readonly prerelease: boolean;
  readonly bytes: number;
  /** ISO-8601 UTC. */
  readonly publishedAt: string;
  readonly lastDownloadedAt: string | undefined;
  readonly downloads: number;
  readonly cached: boolean;
  /** The latest deployment record of the version, ISO-8601 UTC. */
  readonly lastDeployedAt: string | undefined;
  readonly sha256: string;
}

export interface RetentionDecision {
  readonly candidate: RetentionCandidate;
  /** Index of the rule in the feed's list (0-based). */
  readonly rule: number;
  /** Why, in words: every criterion of the rule that selected it. */
  readonly reason: string;
  /** Whole days since it was published. */
  readonly ageDays: number;
}

/** What the feed's rules say at `now`: deletions in rule order, each package's versions newest first. */
export function evaluateRetention(
  candidates: readonly RetentionCandidate[],
  rules: readonly RetentionRule[],
  now: Date,
): RetentionDecision[] {
  const nowMs = now.getTime();
  const feed = prepare(candidates);
  let feedBytes = candidates.reduce((sum, c) => sum + c.bytes, 0);
  const decisions: RetentionDecision[] = [];
  rules.forEach((rule, index) => {
    for (const { at, reason } of selectForRule(feed, rule, nowMs, feedBytes)) {
      const candidate = feed.ordered[at] as RetentionCandidate;
      feed.removed[at] = 1;
      feedBytes -= candidate.bytes;
      const ageDays = Math.max(0, Math.floor((nowMs - (feed.publishedMs[at] ?? nowMs)) / DAY_MS));
      decisions.push({ candidate, rule: index, reason, ageDays });
    }
  });
  return decisions;
}

const DAY_MS = 86_400_000;
/** A rule that says nothing about deployments protects what was deployed within this many days. */
export const DEFAULT_KEEP_DEPLOYED_DAYS = 30;

/**
 * The versions ordered by package, newest first, with their instants parsed once: rules are then
 * plain passes over arrays (100,000 versions and several rules in well under a second).
 */
interface PreparedFeed {
  readonly ordered: readonly RetentionCandidate[];
  readonly publishedMs: Float64Array;
  /** Last download, or publication for a version never downloaded. */
  readonly lastUseMs: Float64Array;
  /** NaN: never deployed. */
  readonly deployedMs: Float64Array;
  /** 1 once an earlier rule deleted it. */
  readonly removed: Uint8Array;
}

function prepare(candidates: readonly RetentionCandidate[]): PreparedFeed {
  const ordered = [...candidates].sort(
    (a, b) => a.packageId - b.packageId || (a.sortKey < b.sortKey ? 1 : a.sortKey > b.sortKey ? -1 : 0),
  );
  const n = ordered.length;
  const publishedMs = new Float64Array(n);
  const lastUseMs = new Float64Array(n);
  const deployedMs = new Float64Array(n);
  ordered.forEach((c, i) => {
    publishedMs[i] = Date.parse(c.publishedAt);
    lastUseMs[i] = c.lastDownloadedAt === undefined ? (publishedMs[i] as number) : Date.parse(c.lastDownloadedAt);
    deployedMs[i] = c.lastDeployedAt === undefined ? Number.NaN : Date.parse(c.lastDeployedAt);
  });
  return { ordered, publishedMs, lastUseMs, deployedMs, removed: new Uint8Array(n) };
}

function selectForRule(feed: PreparedFeed, rule: RetentionRule, nowMs: number, feedBytes: number): Chosen[] {
  if (!sizeTriggered(rule, feedBytes)) return [];
  const context: RuleContext = { rule, match: matchersOf(rule), nowMs, feed, reasons: new Map() };
  const latestStable = latestStableOf(feed);
  const chosen: Chosen[] = [];
  let packageId = Number.NaN;
  let position = 0;
  feed.ordered.forEach((c, at) => {
    if (feed.removed[at] === 1) return;
    if (c.cached !== rule.deleteCached || (rule.deletePrereleaseVersions && !c.prerelease)) return;
    if (c.packageId !== packageId) {
      packageId = c.packageId;
      position = 0;
    }
    const reason = reasonToDelete(context, at, position++, latestStable.get(c.packageId) === at);
    if (reason !== undefined) chosen.push({ at, reason });
  });
  // Oldest by publication.
  return applySizeTrigger(chosen, rule, feedBytes, {
    whole: "feed",
    ageMs: (at) => feed.publishedMs[at] as number,
    bytes: (at) => (feed.ordered[at] as RetentionCandidate).bytes,
  });
}

/** By package id: the index of its highest stable version still there. */
function latestStableOf(feed: PreparedFeed): Map<number, number> {
  const latest = new Map<number, number>();
  feed.ordered.forEach((c, at) => {
    if (feed.removed[at] === 1 || c.prerelease || latest.has(c.packageId)) return;
    latest.set(c.packageId, at);
  });
  return latest;
}

interface Matchers {
  readonly deletePackages: PatternList | undefined;
  readonly keepPackages: PatternList | undefined;
  readonly deleteVersions: PatternList | undefined;
  readonly keepVersions: PatternList | undefined;
}

function matchersOf(rule: RetentionRule): Matchers {
  return {
    deletePackages: listOrNone(rule.deletePackageIds),
    keepPackages: listOrNone(rule.keepPackageIds),
    deleteVersions: listOrNone(rule.deleteVersions),
    keepVersions: listOrNone(rule.keepVersions),
  };
}

/** `group/name` and `name`: a pattern written either way matches. */
function packageMatches(list: PatternList, c: RetentionCandidate): boolean {
  return list.matches(packageIdOf(c)) || (c.group !== "" && list.matches(c.name));
}

export function packageIdOf(c: { readonly group: string; readonly name: string }): string {
  return c.group === "" ? c.name : `${c.group}/${c.name}`;
}

interface RuleContext {
  readonly rule: RetentionRule;
  readonly match: Matchers;
  readonly nowMs: number;
  readonly feed: PreparedFeed;
  /** By variant (see reasonToDelete): the words, made once per rule rather than once per version. */
  readonly reasons: Map<number, string>;
}

const NEVER_DOWNLOADED = 1;
const LATEST_STABLE = 2;

/** Every criterion of the rule that holds, in words; undefined when one does not (the version stays). */
function reasonToDelete(
  context: RuleContext,
  at: number,
  position: number,
  isLatestStable: boolean,
): string | undefined {
  const { rule, match, nowMs, feed } = context;
  const c = feed.ordered[at] as RetentionCandidate;
  if (match.keepPackages && packageMatches(match.keepPackages, c)) return undefined;
  if (match.deletePackages && !packageMatches(match.deletePackages, c)) return undefined;
  if (match.keepVersions?.matches(c.version)) return undefined;
  if (match.deleteVersions && !match.deleteVersions.matches(c.version)) return undefined;
  if (rule.keepVersionsCount !== undefined && position < rule.keepVersionsCount) return undefined;
  const days = (ms: number | undefined) => (nowMs - (ms as number)) / DAY_MS;
  if (rule.keepUsedWithinDays !== undefined && days(feed.lastUseMs[at]) < rule.keepUsedWithinDays) return undefined;
  if (rule.deleteOlderThanDays !== undefined && days(feed.publishedMs[at]) < rule.deleteOlderThanDays) return undefined;
  if (rule.triggerDownloadCount !== undefined && c.downloads >= rule.triggerDownloadCount) return undefined;
  // NaN (never deployed) compares false: no protection.
  if (days(feed.deployedMs[at]) < (rule.keepDeployedWithinDays ?? DEFAULT_KEEP_DEPLOYED_DAYS)) return undefined;
  if (isLatestStable && !rule.deleteLatestStable) return undefined;
  const variant = (c.lastDownloadedAt === undefined ? NEVER_DOWNLOADED : 0) | (isLatestStable ? LATEST_STABLE : 0);
  let reason = context.reasons.get(variant);
  if (reason === undefined) context.reasons.set(variant, (reason = describe(rule, variant)));
  return reason;
}

/** The criteria of the rule that selected a version, in words. */
function describe(rule: RetentionRule, variant: number): string {
  const reasons: string[] = [];
  if (rule.deleteCached) reasons.push("cached from a connector");
  if (rule.deletePrereleaseVersions) reasons.push("prerelease");
  if (rule.deletePackageIds.length > 0) reasons.push(`package matches ${rule.deletePackageIds.join(", ")}`);
  if (rule.deleteVersions.length > 0) reasons.push(`version matches ${rule.deleteVersions.join(", ")}`);
  if (rule.keepVersionsCount !== undefined) {
    reasons.push(
      `not among the latest ${rule.keepVersionsCount}${rule.deletePrereleaseVersions ? " prereleases" : ""}`,
    );
  }
  if (rule.keepUsedWithinDays !== undefined) {
    reasons.push(
      variant & NEVER_DOWNLOADED
        ? `never downloaded, published over ${rule.keepUsedWithinDays} days ago`
        : `not downloaded for ${rule.keepUsedWithinDays} days`,
    );
  }
  if (rule.deleteOlderThanDays !== undefined) reasons.push(`published over ${rule.deleteOlderThanDays} days ago`);
  if (rule.triggerDownloadCount !== undefined) reasons.push(`downloaded fewer than ${rule.triggerDownloadCount} times`);
  if (variant & LATEST_STABLE) reasons.push("the latest stable version");
  return reasons.join("; ");
}
