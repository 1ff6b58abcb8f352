import { parseAssetPath } from "../../domain/asset-path.js";
import type { AssetService } from "../endpoints/index.js";
import type { Feed } from "../management/index.js";
import type { UpackWriteService } from "../upack/write/upload-service.js";
import type { AssetRetentionRows } from "./asset-candidates.js";
import { evaluateRetention, type RetentionDecision } from "./evaluate.js";
import { type AssetDecision, evaluateAssetRetention } from "./evaluate-assets.js";
import type { PlannedDeletion, RetentionRepository, RetentionRun } from "./repository.js";

/**
 * What differs between the two kinds of feed retention acts on: a universal feed's package
 * versions (evaluate.ts) and an asset directory's files (evaluate-assets.ts). The service and the
 * run's job are the same for both: preview, plan, replay, skip, rest, summary.
 */
export interface RetentionKind {
  /** What one item is called in logs: "version" or "file". */
  readonly noun: string;
  /** The deletions the feed's rules select at `now`, and how many items were looked at. */
  evaluate(feed: Feed, now: Date): Promise<{ items: PlannedDeletion[]; examined: number }>;
  /**
   * Deletes the item through the feed's own delete, which checks in its transaction that the item
   * still has the blob evaluated (`item.sha256`): its blob goes back to GC and the feed's usual
   * bookkeeping runs. False, deleting nothing, when the item is gone or was overwritten.
   */
  remove(feed: Feed, item: PlannedDeletion, run: RetentionRun): Promise<boolean>;
  /** The item in words, for the run's log. */
  label(item: PlannedDeletion): string;
}

export interface RetentionKindsDeps {
  readonly repository: RetentionRepository;
  readonly write: UpackWriteService;
  readonly assets: AssetService;
  readonly assetRows: AssetRetentionRows;
}

export const isRetainedFeedType = (type: string) => type === "universal" || type === "romp" || type === "asset";

export function retentionKindOf(feed: Feed, deps: RetentionKindsDeps): RetentionKind {
  return feed.feedType === "asset" ? assetKind(deps) : universalKind(deps);
}

function universalKind({ repository, write }: RetentionKindsDeps): RetentionKind {
  return {
    noun: "version",
    async evaluate(feed, now) {
      const candidates = await repository.candidates(feed.id);
      const items = evaluateRetention(candidates, feed.settings.retentionRules, now).map(toPlannedVersion);
      return { items, examined: candidates.length };
    },
    async remove(feed, item, run) {
      const cause = {
        actor: "retention",
        as: "package.purged" as const,
        data: { rule: item.rule, reason: item.reason, runId: run.id, requestedBy: run.requestedBy },
      };
      return write.deleteVersion(feed.id, tailOf(item), cause, { expectedBlob: item.sha256 });
    },
    label: (item) => `${item.group === "" ? "" : `${item.group}/`}${item.name} ${item.version}`,
  };
}

function assetKind({ assets, assetRows }: RetentionKindsDeps): RetentionKind {
  return {
    noun: "file",
    async evaluate(feed, now) {
      const candidates = await assetRows.candidates(feed.id);
      const items = evaluateAssetRetention(candidates, feed.settings.retentionRules, now).map(toPlannedFile);
      return { items, examined: candidates.length };
    },
    async remove(feed, item) {
      // The file alone: its folders stay, as after a DELETE of the file (docs/compat.md 4.2).
      const path = parseAssetPath(item.path ?? item.name);
      return assets.delete(feed, path, { recursive: false, filesOnly: true, expectedBlob: item.sha256 });
    },
    label: (item) => item.path ?? item.name,
  };
}

function toPlannedVersion(decision: RetentionDecision): PlannedDeletion {
  const c = decision.candidate;
  return {
    id: c.id,
    group: c.group,
    name: c.name,
    version: c.version,
    sha256: c.sha256,
    rule: decision.rule + 1,
    reason: decision.reason,
    bytes: c.bytes,
    ageDays: decision.ageDays,
    publishedAt: c.publishedAt,
    lastDownloadedAt: c.lastDownloadedAt,
  };
}

/** A file as a planned deletion: its path in `path`, and in `name` for readers that show only that. */
function toPlannedFile(decision: AssetDecision): PlannedDeletion {
  const c = decision.candidate;
  return {
    id: c.id,
    group: "",
    name: c.path,
    version: "",
    path: c.path,
    sha256: c.sha256,
    rule: decision.rule + 1,
    reason: decision.reason,
    bytes: c.bytes,
    ageDays: decision.ageDays,
    publishedAt: c.modifiedAt,
    lastDownloadedAt: c.lastDownloadedAt,
  };
}

/** The delete route's tail (docs/compat.md 2.12): `<group...>/<name>/<version>`. */
function tailOf(item: PlannedDeletion): string {
  return `${item.group === "" ? "" : `${item.group}/`}${item.name}/${item.version}`;
}
