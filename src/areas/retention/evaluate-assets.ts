import type { PatternList } from "../../domain/patterns.js";
import type { RetentionRule } from "../management/feed-settings.js";
import { applySizeTrigger, type Chosen, listOrNone, sizeTriggered } from "./size-cap.js";

/**
 * Which files of an asset directory its retention rules delete, and why (issue 17 section 1 "and
 * per asset directory where they make sense"; ProGet's asset rules are "delete unused files" and
 * "delete/keep by file name", with the feeds' quotas). Pure, like evaluate.ts: a preview and a run
 * are the same computation over the same rows.
 *
 * Rules apply in order, each to the files the earlier ones left, and a size cap measures the
 * directory as the earlier rules left it. Within a rule every criterion given must hold:
 * - paths: `deletePackageIds` (only these; `!` excludes) and `keepPackageIds` (never these), each
 *   pattern matched against the file's whole path (`builds/*.zip`) and against its name alone
 *   (`*.tmp`, `setup.exe`), ignoring case, `*` matching any run of characters `/` included;
 * - `keepUsedWithinDays`: files downloaded, or written (uploaded, replaced, their metadata
 *   changed), within D days stay;
 * - `deleteOlderThanDays`: only files last written more than D days ago;
 * - `sizeTriggerKb`: the rule acts only while the directory's files take more than this; with
 *   `sizeExclusive` it deletes its candidates oldest (least recently written) first, only until
 *   the directory fits.
 * The members about versions, deployments, connector caches and download counts do not apply to
 * files: feed management refuses them for an asset directory (feed-validation.ts).
 */

export interface AssetCandidate {
  /** asset_items.id */
  readonly id: number;
  readonly path: string;
  readonly bytes: number;
  /** When the file was last written, ISO-8601 UTC (asset_items.modified_at). */
  readonly modifiedAt: string;
  readonly lastDownloadedAt: string | undefined;
  readonly sha256: string;
}

export interface AssetDecision {
  readonly candidate: AssetCandidate;
  /** Index of the rule in the directory's list (0-based). */
  readonly rule: number;
  readonly reason: string;
  /** Whole days since the file was last written. */
  readonly ageDays: number;
}

const DAY_MS = 86_400_000;

/** What the directory's rules say at `now`: deletions in rule order, each rule's in the candidates' order. */
export function evaluateAssetRetention(
  candidates: readonly AssetCandidate[],
  rules: readonly RetentionRule[],
  now: Date,
): AssetDecision[] {
  const nowMs = now.getTime();
  const files = candidates.map((candidate) => prepare(candidate));
  const removed = new Uint8Array(files.length);
  let directoryBytes = candidates.reduce((sum, c) => sum + c.bytes, 0);
  const decisions: AssetDecision[] = [];
  rules.forEach((rule, index) => {
    for (const { at, reason } of selectForRule(files, removed, rule, nowMs, directoryBytes)) {
      const file = files[at] as PreparedFile;
      removed[at] = 1;
      directoryBytes -= file.candidate.bytes;
      const ageDays = Math.max(0, Math.floor((nowMs - file.modifiedMs) / DAY_MS));
      decisions.push({ candidate: file.candidate, rule: index, reason, ageDays });
    }
  });
  return decisions;
}

interface PreparedFile {
  readonly candidate: AssetCandidate;
  readonly name: string;
  readonly modifiedMs: number;
  /** The later of the last download and the last write. */
  readonly lastUseMs: number;
}

function prepare(candidate: AssetCandidate): PreparedFile {
  const modifiedMs = Date.parse(candidate.modifiedAt);
  const downloadedMs = candidate.lastDownloadedAt === undefined ? Number.NaN : Date.parse(candidate.lastDownloadedAt);
  return {
    candidate,
    name: candidate.path.slice(candidate.path.lastIndexOf("/") + 1),
    modifiedMs,
    lastUseMs: Number.isNaN(downloadedMs) ? modifiedMs : Math.max(modifiedMs, downloadedMs),
  };
}

const pathMatches = (list: PatternList, file: PreparedFile) =>
  list.matches(file.candidate.path) || list.matches(file.name);

function selectForRule(
  files: readonly PreparedFile[],
  removed: Uint8Array,
  rule: RetentionRule,
  nowMs: number,
  directoryBytes: number,
): Chosen[] {
  if (!sizeTriggered(rule, directoryBytes)) return [];
  const deletePaths = listOrNone(rule.deletePackageIds);
  const keepPaths = listOrNone(rule.keepPackageIds);
  const days = (ms: number) => (nowMs - ms) / DAY_MS;
  // Two wordings (never downloaded or not), made once per rule rather than once per file.
  const reasons = [describe(rule, false), describe(rule, true)];
  const chosen: Chosen[] = [];
  files.forEach((file, at) => {
    if (removed[at] === 1) return;
    if (keepPaths && pathMatches(keepPaths, file)) return;
    if (deletePaths && !pathMatches(deletePaths, file)) return;
    if (rule.keepUsedWithinDays !== undefined && days(file.lastUseMs) < rule.keepUsedWithinDays) return;
    if (rule.deleteOlderThanDays !== undefined && days(file.modifiedMs) < rule.deleteOlderThanDays) return;
    chosen.push({ at, reason: reasons[file.candidate.lastDownloadedAt === undefined ? 1 : 0] as string });
  });
  // Oldest: least recently written.
  return applySizeTrigger(chosen, rule, directoryBytes, {
    whole: "directory",
    ageMs: (at) => (files[at] as PreparedFile).modifiedMs,
    bytes: (at) => (files[at] as PreparedFile).candidate.bytes,
  });
}

/** The criteria of the rule that selected a file, in words. */
function describe(rule: RetentionRule, neverDownloaded: boolean): string {
  const reasons: string[] = [];
  if (rule.deletePackageIds.length > 0) reasons.push(`path matches ${rule.deletePackageIds.join(", ")}`);
  if (rule.keepUsedWithinDays !== undefined) {
    reasons.push(
      neverDownloaded
        ? `never downloaded, written over ${rule.keepUsedWithinDays} days ago`
        : `not downloaded or written for ${rule.keepUsedWithinDays} days`,
    );
  }
  if (rule.deleteOlderThanDays !== undefined) reasons.push(`written over ${rule.deleteOlderThanDays} days ago`);
  return reasons.join("; ");
}
