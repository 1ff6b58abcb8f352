import { forbidden, invalid, notFound, unauthenticated } from "../../domain/errors.js";
import type { AccessNeed, Principal } from "../../domain/principal.js";
import { quote } from "../../domain/upack-manifest.js";
import { canonicalVersion, isPrerelease, parseVersion } from "../../domain/upack-version.js";
import type { Feed, FeedService } from "../management/index.js";
import type { DownloadRow, UpackServices } from "../upack/index.js";

/**
 * What promotion and repackaging share: who asks (checked by the same needs as every API), the
 * feeds they name, and the stored version a request means (docs/compat.md 5.4: `version` may be
 * `latest` or `latest-stable`, as InedoCore reads them, 2.13).
 */

/** Who asks: the principal, and request.can (the UI and the API pass the same). */
export interface Caller {
  readonly principal: Principal;
  can(need: AccessNeed): Promise<boolean>;
}

/** 401 for Anonymous, 403 for anyone else, unless the caller meets the need (as request.authorize). */
export async function requireAccess(caller: Caller, need: AccessNeed): Promise<void> {
  if (!(await caller.can(need))) throw denied(caller);
}

/** The refusal of a need the caller does not meet: 401 asks Anonymous to sign in, 403 anyone else. */
export function denied(caller: Caller): Error {
  return caller.principal.type === "anonymous" ? unauthenticated() : forbidden();
}

/** Feed types whose packages can move between feeds: universal packages (romp is the same format). */
const PACKAGE_FEED_TYPES: ReadonlySet<string> = new Set(["universal", "romp"]);

/** The feed by name or alternate name; 404 FEED_NOT_FOUND naming it. */
export async function getFeedNamed(feeds: FeedService, name: string): Promise<Feed> {
  const feed = await feeds.findFeed(name);
  if (feed === undefined) throw notFound("FEED_NOT_FOUND", `The feed ${quote(name)} was not found.`);
  return feed;
}

/**
 * A version moves only between feeds of one type, and only universal feeds hold versions Wharf can
 * move (asset directories hold files, not versions).
 */
export function checkSameFeedType(source: Feed, target: Feed): void {
  for (const feed of [source, target]) {
    if (!PACKAGE_FEED_TYPES.has(feed.feedType.toLowerCase())) {
      throw invalid(
        "FEED_TYPE_NOT_SUPPORTED",
        `The feed ${quote(feed.name)} is a ${feed.feedType} feed: only universal package feeds hold versions to promote or repackage.`,
      );
    }
  }
  if (source.feedType.toLowerCase() !== target.feedType.toLowerCase()) {
    throw invalid(
      "FEED_TYPE_MISMATCH",
      `The feeds ${quote(source.name)} (${source.feedType}) and ${quote(target.name)} (${target.feedType}) are of different types; a package moves only between feeds of the same type.`,
    );
  }
}

/** Group, name and version as a request names them; version may be `latest` or `latest-stable`. */
export interface PackageRequest {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

/** `group/name version`, for messages. */
export function displayId(group: string, name: string, version?: string): string {
  const id = group === "" ? name : `${group}/${name}`;
  return version === undefined ? id : `${id} ${version}`;
}

/** The version the feed stores for the request; 400 for a version that is none, 404 when absent. */
export async function findSourceVersion(
  queries: UpackServices["queries"],
  feed: Feed,
  wanted: PackageRequest,
): Promise<DownloadRow> {
  const groupKey = wanted.group.toLowerCase();
  const nameKey = wanted.name.toLowerCase();
  const asked = wanted.version.trim();
  let versionKey: string | undefined;
  if (asked.toLowerCase() === "latest-stable") {
    // Newest first; the first without a prerelease part.
    const versions = await queries.listVersions(feed.id, { groupKey, nameKey }, Number.MAX_SAFE_INTEGER, false);
    const stable = versions.find((row) => {
      const version = parseVersion(row.version);
      return version !== undefined && !isPrerelease(version);
    });
    if (stable === undefined) throw missing(feed, wanted, "has no stable version");
    versionKey = stable.version.toLowerCase();
  } else if (asked.toLowerCase() !== "latest") {
    const canonical = canonicalVersion(asked);
    if (canonical === undefined) {
      throw invalid(
        "INVALID_VERSION",
        `${quote(asked)} is not a version (major.minor.patch[-prerelease][+build]), 'latest' or 'latest-stable'.`,
      );
    }
    versionKey = canonical.toLowerCase();
  }
  const row = await queries.findDownload(feed.id, groupKey, nameKey, versionKey);
  if (row === undefined) throw missing(feed, wanted, "was not found");
  return row;
}

function missing(feed: Feed, wanted: PackageRequest, what: string): Error {
  return notFound(
    "PACKAGE_NOT_FOUND",
    `The package ${quote(displayId(wanted.group, wanted.name, wanted.version))} ${what} in the feed ${quote(feed.name)}.`,
  );
}
