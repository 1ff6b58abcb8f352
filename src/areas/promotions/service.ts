import type { Clock } from "../../domain/clock.js";
import { invalid } from "../../domain/errors.js";
import { type FeedAttribute, type FeedScope, needOnFeed } from "../../domain/principal.js";
import { canonicalVersion, formatVersion, parseVersion, versionProblem } from "../../domain/upack-version.js";
import { quote } from "../../domain/upack-manifest.js";
import { actorOf } from "../../lifecycle/events.js";
import type { ArchiveLimits } from "../../storage/archives.js";
import type { BlobStore } from "../../storage/blob-store.js";
import { openZipBlob } from "../../storage/zip.js";
import { WHARF_VERSION } from "../../version.js";
import { type Feed, type FeedService, scopeOf } from "../management/index.js";
import {
  assertFeedAcceptsPackages,
  type DownloadRow,
  MAX_MANIFEST_BYTES,
  type UpackServices,
  versionExists,
} from "../upack/index.js";
import { repackagedManifest, zipWithManifest } from "./repackage-archive.js";
import type { PromotionRepository, PromotionRow, RecordFilter, RepackagingRow } from "./repository.js";
import {
  type Caller,
  checkSameFeedType,
  denied,
  findSourceVersion,
  getFeedNamed,
  type PackageRequest,
  requireAccess,
} from "./source-version.js";

export type { Caller } from "./source-version.js";
export type { PromotionRow, RepackagingRow } from "./repository.js";

/**
 * Promotion and repackaging of universal packages (issue 17 section 2; docs/compat.md 5.4, 9).
 * Access is decided here, for the API and the web UI alike, by the needs of docs/compat.md 9: view
 * on the source feed; on the target, Feeds_AcceptPackagePromotions or add (promotion), add
 * (repackaging), and overwrite to replace a version it holds. Both save through the universal
 * feed's write service (its save session), which raises the event the provenance record is written
 * from (migrations/0019).
 */
export interface PromotionService {
  /**
   * Saves the source's version in the target as it is: the same file, so no byte is copied when
   * both feeds keep their files in one store (content addressing); otherwise the target's store
   * gets a copy, checked against the SHA-256. Answers the promotion record.
   */
  promote(request: PromoteRequest, caller: Caller): Promise<PromotionRow>;
  /**
   * Saves the version under `newVersion` (in `toFeed`, else its own feed): a new file whose
   * upack.json names the new version and records the original in `repackageHistory`, every other
   * entry unchanged. Answers the repackaging record.
   */
  repackage(request: RepackageRequest, caller: Caller): Promise<RepackagingRow>;
  /** Promotions the caller may see (view on either feed), newest first. */
  listPromotions(query: RecordQuery, caller: Caller): Promise<PromotionRow[]>;
  /** Repackagings the caller may see (view on either feed), newest first. */
  listRepackagings(query: RecordQuery, caller: Caller): Promise<RepackagingRow[]>;
}

export interface PromoteRequest extends PackageRequest {
  readonly fromFeed: string;
  readonly toFeed: string;
  readonly comments?: string | undefined;
}

export interface RepackageRequest extends PackageRequest {
  readonly feed: string;
  /** Absent: the same feed. */
  readonly toFeed?: string | undefined;
  readonly newVersion: string;
  readonly comments?: string | undefined;
}

/** Which records to list; feeds by name (`feed`: either side). */
export interface RecordQuery {
  readonly feed?: string | undefined;
  readonly fromFeed?: string | undefined;
  readonly toFeed?: string | undefined;
  readonly group?: string | undefined;
  readonly name?: string | undefined;
  readonly version?: string | undefined;
  readonly limit: number;
}

export interface PromotionServiceDeps {
  readonly feeds: FeedService;
  readonly upack: Pick<UpackServices, "write" | "queries">;
  readonly repository: PromotionRepository;
  /** Every package store as one (storage/blob-stores.ts reader): the original of a repackaging is read here. */
  readonly blobs: BlobStore;
  readonly clock: Clock;
  readonly limits?: ArchiveLimits;
}

export function createPromotionService(deps: PromotionServiceDeps): PromotionService {
  const { feeds, upack, repository } = deps;

  /** The source feed and version, the target feed, and the caller's right to replace what it holds. */
  async function prepareMove(
    caller: Caller,
    sourceName: string,
    targetName: string,
    wanted: PackageRequest,
    targetNeeds: readonly FeedAttribute[],
  ) {
    await requireAccess(caller, needOnFeed("Feeds_ViewFeed", sourceName));
    if (!(await anyOf(caller, targetNeeds, targetName))) throw denied(caller);
    const source = await getFeedNamed(feeds, sourceName);
    const target = await getFeedNamed(feeds, targetName);
    checkSameFeedType(source, target);
    assertFeedAcceptsPackages(target);
    const row = await findSourceVersion(upack.queries, source, wanted);
    const canOverwrite = () => caller.can(needOnFeed("Feeds_OverwritePackage", scopeOf(target)));
    return { source, target, row, canOverwrite };
  }

  /** 409 before any byte moves when the target holds the version and the caller may not replace it. */
  async function refuseExisting(target: Feed, row: DownloadRow, version: string, canOverwrite: () => Promise<boolean>) {
    const existing = await upack.queries.findDownload(
      target.id,
      row.group_name.toLowerCase(),
      row.name.toLowerCase(),
      version.toLowerCase(),
    );
    if (existing !== undefined && !(await canOverwrite())) {
      throw versionExists({ group: row.group_name, name: row.name, version: existing.version });
    }
  }

  /** Filters records to those whose source or target feed the caller may view (one feed list per call). */
  async function visibleTo<T>(caller: Caller, rows: readonly T[], sides: (row: T) => [FeedSide, FeedSide]) {
    const byId = new Map((await feeds.listFeeds()).map((feed) => [feed.id, scopeOf(feed)]));
    const scope = (side: FeedSide): FeedScope =>
      (side.id === null ? undefined : byId.get(side.id)) ?? { id: undefined, name: side.name, group: undefined };
    const visible: T[] = [];
    for (const row of rows) {
      const [from, to] = sides(row);
      if (
        (await caller.can(needOnFeed("Feeds_ViewFeed", scope(to)))) ||
        (await caller.can(needOnFeed("Feeds_ViewFeed", scope(from))))
      ) {
        visible.push(row);
      }
    }
    return visible;
  }

  /**
   * The newest `query.limit` records the caller may see: pages of that many are read until enough
   * are visible or none are left, so records of feeds hidden from the caller never shorten the list.
   */
  async function listVisible<T extends { id: number }>(
    caller: Caller,
    query: RecordQuery,
    list: (filter: RecordFilter, limit: number) => Promise<T[]>,
    sides: (row: T) => [FeedSide, FeedSide],
  ): Promise<T[]> {
    const filter = await filterOf(query, caller);
    const shown: T[] = [];
    for (let beforeId: number | undefined; ;) {
      const rows = await list({ ...filter, ...(beforeId === undefined ? {} : { beforeId }) }, query.limit);
      shown.push(...(await visibleTo(caller, rows, sides)));
      const last = rows.at(-1);
      if (shown.length >= query.limit || rows.length < query.limit || last === undefined) {
        return shown.slice(0, query.limit);
      }
      beforeId = last.id;
    }
  }

  /** The query as the repository filters, each named feed viewable by the caller (403/401) and known (404). */
  async function filterOf(query: RecordQuery, caller: Caller): Promise<RecordFilter> {
    const idOf = async (name: string | undefined) => {
      if (name === undefined) return undefined;
      await requireAccess(caller, needOnFeed("Feeds_ViewFeed", name));
      return (await getFeedNamed(feeds, name)).id;
    };
    const [feedId, fromFeedId, toFeedId] = [
      await idOf(query.feed),
      await idOf(query.fromFeed),
      await idOf(query.toFeed),
    ];
    const version = query.version?.trim();
    return {
      ...(feedId === undefined ? {} : { feedId }),
      ...(fromFeedId === undefined ? {} : { fromFeedId }),
      ...(toFeedId === undefined ? {} : { toFeedId }),
      ...(query.group === undefined ? {} : { groupKey: query.group.toLowerCase() }),
      ...(query.name === undefined ? {} : { nameKey: query.name.toLowerCase() }),
      ...(version === undefined || version === ""
        ? {}
        : { versionKey: (canonicalVersion(version) ?? version).toLowerCase() }),
    };
  }

  return {
    async promote(request, caller) {
      const { source, target, row, canOverwrite } = await prepareMove(
        caller,
        request.fromFeed,
        request.toFeed,
        request,
        ["Feeds_AcceptPackagePromotions", "Feeds_AddPackage"],
      );
      if (source.id === target.id) {
        throw invalid("SAME_FEED", `The package is already in ${quote(target.name)}: promote it to another feed.`);
      }
      await refuseExisting(target, row, row.version, canOverwrite);
      const comments = nonEmpty(request.comments);
      await upack.write.importPackage({
        feedId: target.id,
        principal: caller.principal,
        canOverwrite,
        cause: {
          actor: actorOf(caller.principal),
          as: "package.promoted",
          data: {
            fromFeed: source.name,
            fromFeedId: source.id,
            fromVersionId: row.version_id,
            sha1: row.sha1,
            sha256: row.blob_sha256,
            ...(comments === undefined ? {} : { comments }),
          },
        },
        // The stored file as it is: the target's keeper holds it (copying it into the target's
        // store, checked by its SHA-256, only when the feeds' stores differ).
        source: { blob: { sha256: row.blob_sha256, sha1: row.sha1, size: row.size } },
      });
      return latest(
        await repository.listPromotions(
          {
            toFeedId: target.id,
            groupKey: row.group_name.toLowerCase(),
            nameKey: row.name.toLowerCase(),
            versionKey: row.version.toLowerCase(),
          },
          1,
        ),
      );
    },

    async repackage(request, caller) {
      const newVersion = parseVersion(request.newVersion.trim());
      if (newVersion === undefined) {
        throw invalid(
          "INVALID_VERSION",
          `newVersion ${quote(request.newVersion)} ${versionProblem(request.newVersion.trim())}`,
        );
      }
      const newText = formatVersion(newVersion);
      const targetName = request.toFeed ?? request.feed;
      const { source, target, row, canOverwrite } = await prepareMove(caller, request.feed, targetName, request, [
        "Feeds_AddPackage",
      ]);
      if (source.id === target.id && row.version.toLowerCase() === newText.toLowerCase()) {
        throw invalid("SAME_VERSION", `newVersion must differ from the version repackaged (${row.version}).`);
      }
      await refuseExisting(target, row, newText, canOverwrite);
      const comments = nonEmpty(request.comments);
      const actor = actorOf(caller.principal);
      const original = {
        feed: source.name,
        group: row.group_name,
        name: row.name,
        version: row.version,
        sha1: row.sha1,
        sha256: row.blob_sha256,
      };
      const now = deps.clock.now();
      const reader = await openZipBlob(deps.blobs, row.blob_sha256, deps.limits);
      try {
        const manifest = repackagedManifest(await reader.readText("upack.json", MAX_MANIFEST_BYTES), newVersion, {
          original,
          date: now,
          by: actor,
          using: `Wharf/${WHARF_VERSION}`,
          reason: comments,
        });
        await upack.write.importPackage({
          feedId: target.id,
          principal: caller.principal,
          canOverwrite,
          cause: {
            actor,
            data: { repackagedFrom: { ...original, feedId: source.id }, ...(comments ? { comments } : {}) },
          },
          source: { open: () => zipWithManifest(reader, manifest, now) },
        });
      } finally {
        await reader.close();
      }
      return latest(
        await repository.listRepackagings(
          {
            feedId: target.id,
            groupKey: row.group_name.toLowerCase(),
            nameKey: row.name.toLowerCase(),
            versionKey: newText.toLowerCase(),
          },
          1,
        ),
      );
    },

    async listPromotions(query, caller) {
      return listVisible(caller, query, repository.listPromotions, (row) => [
        { id: row.from_feed_id, name: row.from_feed_name },
        { id: row.to_feed_id, name: row.to_feed_name },
      ]);
    },

    async listRepackagings(query, caller) {
      return listVisible(caller, query, repository.listRepackagings, (row) => [
        { id: row.from_feed_id, name: row.from_feed_name },
        { id: row.feed_id, name: row.feed_name },
      ]);
    },
  };
}

/** One side of a record: the feed's id (null when unknown) and its name at the time. */
interface FeedSide {
  readonly id: number | null;
  readonly name: string;
}

async function anyOf(caller: Caller, attributes: readonly FeedAttribute[], feed: string): Promise<boolean> {
  for (const attribute of attributes) if (await caller.can(needOnFeed(attribute, feed))) return true;
  return false;
}

function nonEmpty(text: string | undefined): string | undefined {
  const trimmed = text?.trim();
  return trimmed === undefined || trimmed === "" ? undefined : trimmed;
}

/** The record the save just wrote (the migration's trigger): the newest of its version. */
function latest<T>(rows: readonly T[]): T {
  const [row] = rows;
  if (row === undefined) throw new Error("the save wrote no record: is migrations/0019 applied?");
  return row;
}
