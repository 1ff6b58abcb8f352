import { invalid } from "../../../domain/errors.js";
import { canonicalVersion } from "../../../domain/upack-version.js";
import type { Feed, FeedService } from "../../management/index.js";
import { deploymentCountKey } from "../../package-deployment/index.js";
import { packageNotFound, versionNotFound } from "../errors.js";
import { getUniversalFeed } from "../feed-lookup.js";
import { arrayJson, type FeedMetadata, type FeedServiceName, packageJson, versionJson } from "../present.js";
import type { UpackQueryRepository, VersionRow } from "./query-repository.js";
import { ResponseCache } from "./response-cache.js";

/**
 * Listing use cases of the universal feed (docs/seed-api.md area A: list packages, list versions,
 * search, feed metadata; docs/compat.md 2.2, 2.3, 2.10, 2.11). Answers are JSON bytes, shaped by
 * present.ts, so that the routes only send them. Large answers are kept until the database
 * changes (see ResponseCache): a CI farm polling `versions?name=` of a package with 10,000
 * versions would otherwise rebuild megabytes of identical JSON on every request.
 */

/** `group` absent = any group (or the empty group where a name is given); "" = the empty group. */
export interface PackagesQuery {
  readonly group?: string;
  readonly name?: string;
  readonly count: number;
}

export interface VersionsQuery extends PackagesQuery {
  readonly version?: string;
  readonly includeFileList: boolean;
}

export interface UpackQueryService {
  /** JSON array, or one object when `name` is given (404 when there is no such package). */
  listPackages(feedName: string, query: PackagesQuery): Promise<Buffer>;
  /** JSON array, or one object when `version` is given (404 when there is no such version). */
  listVersions(feedName: string, query: VersionsQuery): Promise<Buffer>;
  /** JSON array of packages, best match first; an empty term lists like `packages`. */
  search(feedName: string, term: string, count: number): Promise<Buffer>;
  meta(feedName: string): Promise<FeedMetadata>;
}

export interface UpackQueryServiceDeps {
  readonly repository: UpackQueryRepository;
  readonly feeds: FeedService;
  /** Whether virtual packages can be downloaded (an assembler is plugged in): decides `VirtualPackages`. */
  readonly virtualPackages: boolean;
  /** Bytes of JSON answers kept for reuse; 0 turns the cache off. Default 64 MiB. */
  readonly cacheBytes?: number;
  /**
   * Deployment records per version (the package-deployment area), keyed by deploymentCountKey;
   * absent: versions carry no `deploymentCount`.
   */
  readonly deploymentCounts?: (
    feedId: number,
    only?: { groupKey: string; nameKey: string },
  ) => Promise<ReadonlyMap<string, number>>;
}

/** Default and maximum length of a list (docs/seed-api.md "Limits"). */
export const MAX_LIST_COUNT = 1000;

/**
 * Highest universal feed API level whose features Wharf serves (docs/compat.md 2.10 history): 1.3.0
 * brought meta and download-vpack, 1.4.0 shortDescription, 1.5.0 ranges in dependencies.
 */
export const UNIVERSAL_FEED_API_VERSION = "1.5.0";

/** Lowercased canonical text: what `version_key` holds (leading zeros and case do not matter). */
export function versionKeyOf(text: string): string | undefined {
  return canonicalVersion(text)?.toLowerCase();
}

// Inedo.UPack treats group "*" as "any group" (docs/compat.md 13, inferred); no real group contains '*'.
const anyGroup = (group: string | undefined) => (group === "*" ? undefined : group);

export function createUpackQueryService(deps: UpackQueryServiceDeps): UpackQueryService {
  const { repository, feeds } = deps;
  const cache = new ResponseCache(deps.cacheBytes ?? 64 * 1024 * 1024);

  const feedId = async (feedName: string) => (await getUniversalFeed(feeds, feedName)).id;
  const deploymentCountsOf = async (id: number, only?: { groupKey: string; nameKey: string }) =>
    deps.deploymentCounts === undefined ? undefined : deps.deploymentCounts(id, only);
  const countOf = (counts: ReadonlyMap<string, number> | undefined, row: VersionRow) =>
    counts === undefined
      ? undefined
      : (counts.get(
          deploymentCountKey(row.group_name.toLowerCase(), row.name.toLowerCase(), row.version.toLowerCase()),
        ) ?? 0);

  /** `build` must read the database before its first await, in the tick the generation is taken. */
  async function cached(id: number, key: string, build: () => Promise<string>): Promise<Buffer> {
    const generation = repository.generation(id);
    const hit = cache.get(id, key, generation);
    if (hit) return hit;
    const body = Buffer.from(await build());
    cache.set(id, key, generation, body);
    return body;
  }

  return {
    async listPackages(feedName, query) {
      const id = await feedId(feedName);
      if (query.name !== undefined) {
        const group = query.group ?? "";
        const row = await repository.findPackage(id, group.toLowerCase(), query.name.toLowerCase());
        if (!row) throw packageNotFound(group, query.name);
        return Buffer.from(packageJson(row));
      }
      const groupKey = anyGroup(query.group)?.toLowerCase();
      return cached(id, `packages\0${id}\0${groupKey ?? "*"}\0${query.count}`, async () =>
        arrayJson(await repository.listPackages(id, groupKey, query.count), packageJson),
      );
    },

    async listVersions(feedName, query) {
      const id = await feedId(feedName);
      if (query.version !== undefined) {
        if (query.name === undefined) throw invalid("NAME_REQUIRED", "A version can only be looked up with a name.");
        const group = query.group ?? "";
        const key = versionKeyOf(query.version);
        const row =
          key === undefined
            ? undefined
            : await repository.findVersion(
                id,
                group.toLowerCase(),
                query.name.toLowerCase(),
                key,
                query.includeFileList,
              );
        if (!row) throw versionNotFound(group, query.name, query.version);
        const counts = await deploymentCountsOf(id, {
          groupKey: group.toLowerCase(),
          nameKey: query.name.toLowerCase(),
        });
        return Buffer.from(versionJson(row, countOf(counts, row)));
      }
      // With a name, the group defaults to the empty group and `count` does not apply (docs/seed-api.md A).
      const filter =
        query.name !== undefined
          ? { groupKey: (query.group ?? "").toLowerCase(), nameKey: query.name.toLowerCase() }
          : { groupKey: anyGroup(query.group)?.toLowerCase() };
      const key = `versions\0${id}\0${filter.groupKey ?? "*"}\0${filter.nameKey ?? "*"}\0${query.count}`;
      return cached(id, `${key}\0${query.includeFileList}`, async () => {
        // Both read at call time, in the tick the generation was taken (see `cached`).
        const [rows, counts] = await Promise.all([
          repository.listVersions(id, filter, query.count, query.includeFileList),
          deploymentCountsOf(
            id,
            filter.nameKey === undefined ? undefined : { groupKey: filter.groupKey ?? "", nameKey: filter.nameKey },
          ),
        ]);
        return arrayJson(rows, (row) => versionJson(row, countOf(counts, row)));
      });
    },

    async search(feedName, term, count) {
      const id = await feedId(feedName);
      const termKey = term.trim().toLowerCase();
      return cached(id, `search\0${id}\0${termKey}\0${count}`, async () => {
        const rows =
          termKey === ""
            ? await repository.listPackages(id, undefined, count)
            : await repository.searchPackages(id, termKey, count);
        return arrayJson(rows, packageJson);
      });
    },

    async meta(feedName) {
      const feed = await getUniversalFeed(feeds, feedName);
      const { packages, versions } = await repository.counts(feed.id);
      return {
        apiVersion: UNIVERSAL_FEED_API_VERSION,
        name: feed.name,
        description: feed.settings.description ?? "",
        version: UNIVERSAL_FEED_API_VERSION,
        packageCount: packages,
        packageVersionCount: versions,
        services: servicesOf(feed, deps.virtualPackages),
      };
    },
  };
}

/** Only what this feed really does: connectors are configured per feed, assembly per server. */
function servicesOf(feed: Feed, virtualPackages: boolean): FeedServiceName[] {
  const services: FeedServiceName[] = [];
  if (virtualPackages) services.push("VirtualPackages");
  if (feed.settings.connectors.length > 0) services.push("RemotePackages");
  services.push("UploadPackage", "UploadContents", "Delete", "DownloadContents");
  return services;
}
