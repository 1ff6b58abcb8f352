import { compilePatterns, type PatternList } from "../../domain/patterns.js";
import type { RetentionRule } from "../management/feed-settings.js";

/** A pattern list, or none when the rule gives no pattern (no constraint). */
export const listOrNone = (patterns: readonly string[]): PatternList | undefined =>
  patterns.length === 0 ? undefined : compilePatterns(patterns);

/** A candidate a rule selected: its index in the evaluator's list, and why. */
export interface Chosen {
  readonly at: number;
  readonly reason: string;
}

/** Whether a rule with `sizeTriggerKb` acts at all: only while the whole is larger than the trigger. */
export function sizeTriggered(rule: RetentionRule, totalBytes: number): boolean {
  return rule.sizeTriggerKb === undefined || totalBytes > rule.sizeTriggerKb * 1024;
}

/**
 * A rule's size trigger applied to what its other criteria chose (evaluate.ts, evaluate-assets.ts):
 * without `sizeExclusive` every candidate goes, saying the whole is too large; with it, a cap: the
 * oldest go first, and only until the whole (the feed, the directory) fits.
 */
export function applySizeTrigger(
  chosen: readonly Chosen[],
  rule: RetentionRule,
  totalBytes: number,
  of: { readonly whole: string; ageMs(at: number): number; bytes(at: number): number },
): Chosen[] {
  if (rule.sizeTriggerKb === undefined) return [...chosen];
  const triggerBytes = rule.sizeTriggerKb * 1024;
  if (!rule.sizeExclusive) {
    const sizeReason = `the ${of.whole} is larger than ${rule.sizeTriggerKb} KB`;
    return chosen.map((c) => ({ ...c, reason: joined(c.reason, sizeReason) }));
  }
  const oldestFirst = [...chosen].sort((a, b) => of.ageMs(a.at) - of.ageMs(b.at) || a.at - b.at);
  const capped = new Set<Chosen>();
  let bytes = totalBytes;
  for (const entry of oldestFirst) {
    if (bytes <= triggerBytes) break;
    capped.add(entry);
    bytes -= of.bytes(entry.at);
  }
  const capReason = `oldest first until the ${of.whole} is at most ${rule.sizeTriggerKb} KB`;
  return chosen.filter((c) => capped.has(c)).map((c) => ({ ...c, reason: joined(c.reason, capReason) }));
}

/** Reasons joined with "; ", empty ones left out. */
const joined = (...parts: string[]): string => parts.filter((part) => part !== "").join("; ");
