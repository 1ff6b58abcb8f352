import type { DomainError } from "../../../domain/errors.js";
import { parsePackagePath, type PackagePath } from "../../../domain/upack-manifest.js";
import { compareVersions, formatVersion, parseVersion } from "../../../domain/upack-version.js";
import type { Connector, ConnectorUpstreams } from "../../connectors/index.js";
import type { Feed, FeedService } from "../../management/index.js";
import type { DownloadTarget, UpackDownloadService } from "../download/service.js";
import { getUniversalFeed } from "../feed-lookup.js";
import { versionNotFound } from "../errors.js";
import { packageKey, type RemoteVersion, remoteVersionsOf } from "./entries.js";
import { firstListing, gather, isLocalMiss, type Listed } from "./listings.js";
import { withFailures } from "./failures.js";
import { connectorsForPackage, type OwnsPackage } from "./shadow.js";

/**
 * Which version a download URL names on a feed with connectors (docs/compat.md 2.4, 2.12, 5.3): the
 * feed's own when it stores it, else the first connector's (in the feed's order, through its
 * filters) that lists it; with `latest`, the highest version of the feed and its connectors (the
 * feed's own on a tie). A package the feed publishes itself is served only from the feed, and
 * from connectors that merge with local packages (remote/shadow.ts).
 */

export type Located =
  | { readonly feed: Feed; readonly target: DownloadTarget; readonly remote?: undefined }
  | { readonly feed: Feed; readonly remote: RemoteTarget; readonly target?: undefined };

/** A version one connector's upstream serves. */
export interface RemoteTarget {
  readonly feed: Feed;
  readonly connector: Connector;
  readonly group: string;
  readonly name: string;
  /** Canonical text. */
  readonly version: string;
  /** What the file must hash to; undefined: it cannot be verified, and is never kept. */
  readonly sha1: string | undefined;
  /** As the upstream lists it (HEAD answers with it; a GET sends the upstream's own Content-Length). */
  readonly size: number | undefined;
  readonly published: Date | undefined;
}

export interface RemoteLookupDeps {
  readonly downloads: Pick<UpackDownloadService, "resolve">;
  readonly feeds: FeedService;
  readonly upstreams: ConnectorUpstreams;
  /** Whether the feed publishes a package itself (remote/shadow.ts). */
  readonly owns: OwnsPackage;
}

/**
 * The local lookup first (`downloads.resolve`, cached: feeds without connectors pay nothing
 * more); connectors only on a miss or for `latest`. 404 when nobody has the version; 502/504
 * (naming the connector) when an upstream that might have had it failed, and nobody else has it.
 */
export type LocateVersion = (feedName: string, tail: string, latest: boolean) => Promise<Located>;

export function createRemoteLookup(deps: RemoteLookupDeps): LocateVersion {
  const { upstreams } = deps;

  return async (feedName, tail, latest) => {
    let local: { feed: Feed; target: DownloadTarget } | undefined;
    let miss: DomainError | undefined;
    try {
      local = await deps.downloads.resolve(feedName, tail, latest);
    } catch (error) {
      if (!isLocalMiss(error)) throw error;
      miss = error;
    }
    const feed = local?.feed ?? (await getUniversalFeed(deps.feeds, feedName));
    // The feed's own exact version needs no upstream; nor does anything on a feed without connectors.
    if (local !== undefined && (!latest || feed.settings.connectors.length === 0)) return local;
    const all = feed.settings.connectors.length === 0 ? [] : await upstreams.connectorsOf(feed.settings.connectors);
    if (all.length === 0) return orMiss(local, miss);
    const path = parsePackagePath(tail.split("/"), { versionExpected: !latest });
    const connectors = await connectorsForPackage(deps.owns, feed, all, path.group, path.name);
    if (connectors.length === 0) return orMiss(local, miss);
    const found = latest ? await highest(connectors, path) : await exact(connectors, path);
    const localVersion = local === undefined ? undefined : parseVersion(local.target.version);
    // Which version is the highest is a listing's answer: without a connector, it may be another.
    const failed = latest ? found.failed : [];
    if (
      found.version !== undefined &&
      (localVersion === undefined || compareVersions(found.version.version, localVersion) > 0)
    ) {
      return withFailures({ feed, remote: targetOf(feed, found.connector, found.version) }, failed);
    }
    if (local !== undefined) return withFailures({ ...local }, failed);
    throw found.failures[0] ?? miss ?? versionNotFound(path.group, path.name, "latest");
  };

  /** The first connector, in the feed's order, that lists exactly this version. */
  async function exact(connectors: readonly Connector[], path: PackagePath): Promise<Listed> {
    if (path.version === undefined) return { failures: [], failed: [] };
    const id = { group: path.group, name: path.name, version: formatVersion(path.version) };
    return firstListing(upstreams, connectors, id, false);
  }

  /** The highest version any connector lists; on a tie, the earlier connector's. */
  async function highest(connectors: readonly Connector[], path: PackagePath): Promise<Listed> {
    const request = { endpoint: "versions", query: { group: path.group, name: path.name } } as const;
    const { sources, failures, failed } = await gather(upstreams, connectors, request, (body, visible) =>
      remoteVersionsOf(body, visible, false),
    );
    let best: Listed = { failures, failed };
    for (const { connector, entries } of sources) {
      for (const version of entries) {
        if (version.key !== packageKey(path.group, path.name)) continue;
        if (best.version === undefined || compareVersions(version.version, best.version.version) > 0) {
          best = { connector, version, failures, failed };
        }
      }
    }
    return best;
  }
}

function orMiss<T>(local: T | undefined, miss: DomainError | undefined): T {
  if (local !== undefined) return local;
  throw miss ?? new Error("a download lookup neither found nor missed");
}

function targetOf(feed: Feed, connector: Connector, version: RemoteVersion): RemoteTarget {
  // A virtual version's listed sha1 is its manifest's: what the upstream serves is assembled.
  const verifiable = version.json.isVirtual !== true;
  return {
    feed,
    connector,
    group: version.group,
    name: version.name,
    version: version.versionText,
    sha1: verifiable ? version.sha1 : undefined,
    size: version.size,
    published: version.published,
  };
}
