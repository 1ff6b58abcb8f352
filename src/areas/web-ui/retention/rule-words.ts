import type { RetentionRule } from "../../management/index.js";

/**
 * A retention rule in words, for the feed's retention page: what it looks at, what it keeps, and
 * the protections it leaves on. Only the criteria the rule gives are named; the evaluator
 * (areas/retention/evaluate.ts, evaluate-assets.ts) is what decides, this only reads the same fields.
 */
export function ruleInWords(rule: RetentionRule, files: boolean): string[] {
  const days = (n: number) => (n === 1 ? "1 day" : `${n} days`);
  const list = (patterns: readonly string[]) => patterns.join(", ");
  const lines: string[] = [];
  const subject = files
    ? "Delete files"
    : `Delete ${rule.deleteCached ? "cached connector " : ""}${rule.deletePrereleaseVersions ? "prerelease " : ""}versions`;
  const only: string[] = [];
  if (rule.deletePackageIds.length > 0)
    only.push(`${files ? "paths" : "packages"} matching ${list(rule.deletePackageIds)}`);
  if (rule.deleteVersions.length > 0) only.push(`versions matching ${list(rule.deleteVersions)}`);
  lines.push(only.length === 0 ? `${subject}.` : `${subject}: only ${only.join(" and ")}.`);
  if (rule.keepPackageIds.length > 0)
    lines.push(`Never ${files ? "paths" : "packages"} matching ${list(rule.keepPackageIds)}.`);
  if (rule.keepVersions.length > 0) lines.push(`Never versions matching ${list(rule.keepVersions)}.`);
  if (rule.keepVersionsCount !== undefined) lines.push(`Keep the latest ${rule.keepVersionsCount} of each package.`);
  if (rule.keepUsedWithinDays !== undefined) {
    lines.push(
      `Keep what was downloaded (or ${files ? "written" : "published"}) in the last ${days(rule.keepUsedWithinDays)}.`,
    );
  }
  if (rule.deleteOlderThanDays !== undefined) {
    lines.push(
      `Only what was ${files ? "last written" : "published"} more than ${days(rule.deleteOlderThanDays)} ago.`,
    );
  }
  if (rule.triggerDownloadCount !== undefined) {
    lines.push(`Only what was downloaded fewer than ${rule.triggerDownloadCount} times.`);
  }
  if (rule.sizeTriggerKb !== undefined) {
    const size = `${rule.sizeTriggerKb.toLocaleString("en")} KB`;
    lines.push(
      rule.sizeExclusive
        ? `While the ${files ? "directory" : "feed"} is larger than ${size}: oldest first, until it fits.`
        : `Only while the ${files ? "directory" : "feed"} is larger than ${size}.`,
    );
  }
  if (!files) {
    const deployed = rule.keepDeployedWithinDays ?? 30;
    lines.push(
      deployed === 0 ? "Deployed versions are not protected." : `Versions deployed in the last ${days(deployed)} stay.`,
    );
    lines.push(rule.deleteLatestStable ? "The latest stable version may go too." : "The latest stable version stays.");
  }
  return lines;
}
