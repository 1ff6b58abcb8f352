import { DomainError } from "../../../domain/errors.js";
import { compilePatterns } from "../../../domain/patterns.js";
import { canonicalVersion } from "../../../domain/upack-version.js";
import type { Connector, ConnectorUpstreams, MetadataRequest } from "../../connectors/index.js";
import type { Feed, FeedService } from "../../management/index.js";
import { getUniversalFeed } from "../feed-lookup.js";
import {
  filterSubject,
  remotePackageOf,
  remotePackagesOf,
  remoteVersionOf,
  type RemoteVersion,
  remoteVersionsOf,
  type Visible,
} from "./entries.js";
import { byPackage, byVersion, type Json, mergePackages, mergeVersions, type Source } from "./merge.js";
import { type ConnectorFailure, withFailures } from "./failures.js";
import { connectorsForPackage, type OwnsPackage, withoutShadowed } from "./shadow.js";
import { packageNotFound, versionNotFound } from "../errors.js";
import type { PackagesQuery, UpackQueryService, VersionsQuery } from "../read/query-service.js";

/**
 * Listings of a universal feed with connectors (docs/seed-api.md area A; docs/compat.md 2.2, 2.3, 2.11,
 * 5.3): the feed's own answer (the local query service, with its caches, unchanged) merged with
 * what each connector's upstream answers, so that remote packages look like the feed's own.
 *
 * - Local shadows remote: a version the feed stores (uploaded, or pulled and cached) is listed as
 *   stored, never as the upstream describes it; after local, connectors in the feed's order, so
 *   the first connector that lists a version wins it. A package entry (`packages`, `search`)
 *   comes from the feed when it stores the package, else from the first connector listing it;
 *   its `versions` and `latestVersion` are those of every source, so a client choosing from
 *   `packages?name=` sees what `versions?name=` lists and downloads can serve.
 * - Connector filters decide which remote packages are visible at all.
 * - A package the feed publishes itself hides connectors' packages of that name altogether,
 *   unless a connector merges with local packages (remote/shadow.ts).
 * - Remote entries carry `isLocal: false, isCached: false`; pulled versions are local rows with
 *   `isLocal: false, isCached: true` (present.ts).
 * - Upstream trouble: each connector's answer may come from its metadata cache, fresh or, when
 *   the upstream fails, stale (upstream.ts). A connector that fails without a cached answer is
 *   left out, and the answer is what the others gave; but when nothing at all was found, the
 *   failure is the answer (502/504 naming the connector), never an empty list or a 404 that
 *   only the failed upstream could have contradicted. An answer given without a connector says
 *   so (remote/failures.ts: the Wharf-Connector-Failures header).
 * - `count` applies to the merged list; merged answers are not kept in the local response cache
 *   (the metadata cache keeps the remote halves).
 */
export interface RemoteListingDeps {
  readonly feeds: FeedService;
  readonly upstreams: ConnectorUpstreams;
  /** Whether the feed publishes a package itself (remote/shadow.ts). */
  readonly owns: OwnsPackage;
  /** Where a connector left out of an answer is reported (the answer itself does not say so). */
  readonly log?: { warn(fields: object, message: string): void };
}

/** What the connectors answered: entries in the feed's connector order, and who failed. */
export interface Gathered<T> {
  readonly sources: Source<T>[];
  readonly failures: DomainError[];
  /** The same failures by connector, for the answer's header. */
  readonly failed: ConnectorFailure[];
}

export function withConnectors(local: UpackQueryService, deps: RemoteListingDeps): UpackQueryService {
  const { upstreams, owns } = deps;

  async function connectorsOf(feedName: string): Promise<{ feed: Feed; connectors: readonly Connector[] }> {
    const feed = await getUniversalFeed(deps.feeds, feedName);
    const names = feed.settings.connectors;
    return { feed, connectors: names.length === 0 ? [] : await upstreams.connectorsOf(names) };
  }

  /**
   * Nothing found anywhere and an upstream could not be asked: that upstream's error is the
   * answer. Otherwise the answer goes out without it, and the administrator hears of it.
   */
  function throwWhenNothing(merged: readonly unknown[], failures: readonly DomainError[]): void {
    const [failure] = failures;
    if (merged.length === 0 && failure !== undefined) throw failure;
    for (const { code, message } of failures)
      deps.log?.warn({ code }, `listing answered without a connector: ${message}`);
  }

  return {
    ...local,

    async listPackages(feedName, query) {
      const { feed, connectors: all } = await connectorsOf(feedName);
      if (all.length === 0) return local.listPackages(feedName, query);
      if (query.name !== undefined) {
        const group = query.group ?? "";
        const connectors = await connectorsForPackage(owns, feed, all, group, query.name);
        if (connectors.length === 0) return local.listPackages(feedName, query);
        const [own, remote] = await Promise.all([
          localOrUndefined(() => local.listPackages(feedName, query)),
          gather(
            upstreams,
            connectors,
            { endpoint: "packages", query: { group, name: query.name } },
            (body, visible) => {
              const found = remotePackageOf(body, visible);
              return found ? [found] : [];
            },
          ),
        ]);
        const [merged] = mergePackages(own === undefined ? [] : [parseObject(own)], remote.sources);
        if (merged === undefined) throw remote.failures[0] ?? packageNotFound(group, query.name);
        return withFailures(toBuffer(merged), remote.failed);
      }
      const [own, remote] = await Promise.all([
        local.listPackages(feedName, query),
        gather(upstreams, all, { endpoint: "packages", query: packagesQuery(query) }, remotePackagesOf),
      ]);
      const sources = await withoutShadowed(owns, feed, remote.sources);
      const merged = mergePackages(parseArray(own), sources).sort(byPackage).slice(0, query.count);
      throwWhenNothing(merged, remote.failures);
      return withFailures(toBuffer(merged), remote.failed);
    },

    async search(feedName, term, count) {
      const { feed, connectors } = await connectorsOf(feedName);
      if (connectors.length === 0) return local.search(feedName, term, count);
      const trimmed = term.trim();
      const request: MetadataRequest =
        trimmed === ""
          ? { endpoint: "packages", query: { count: String(count) } }
          : { endpoint: "search", query: { term: trimmed, count: String(count) } };
      const [own, remote] = await Promise.all([
        local.search(feedName, term, count),
        gather(upstreams, connectors, request, remotePackagesOf),
      ]);
      // Ranked already, locally and upstream: the order is kept, local matches first.
      const merged = mergePackages(parseArray(own), await withoutShadowed(owns, feed, remote.sources));
      if (trimmed === "") merged.sort(byPackage);
      throwWhenNothing(merged, remote.failures);
      return withFailures(toBuffer(merged.slice(0, count)), remote.failed);
    },

    async listVersions(feedName, query) {
      const { feed, connectors: all } = await connectorsOf(feedName);
      const connectors =
        query.name === undefined || all.length === 0
          ? all
          : await connectorsForPackage(owns, feed, all, query.group ?? "", query.name);
      if (connectors.length === 0) return local.listVersions(feedName, query);
      if (query.version !== undefined) return oneVersion(feedName, query, connectors);
      const [own, remote] = await Promise.all([
        local.listVersions(feedName, query),
        gather(upstreams, connectors, { endpoint: "versions", query: versionsQuery(query) }, (body, visible) =>
          remoteVersionsOf(body, visible, query.includeFileList),
        ),
      ]);
      const sources = await withoutShadowed(owns, feed, remote.sources);
      let merged = mergeVersions(parseArray(own), sources).sort(byVersion);
      // With a name, `count` does not apply (docs/seed-api.md A), as locally.
      if (query.name === undefined) merged = merged.slice(0, query.count);
      throwWhenNothing(merged, remote.failures);
      return withFailures(toBuffer(merged.map((entry) => entry.json)), remote.failed);
    },
  };

  /**
   * One version: the feed's own when it has it (no upstream is asked), else the first connector,
   * in the feed's order, that knows it.
   */
  async function oneVersion(feedName: string, query: VersionsQuery, connectors: readonly Connector[]): Promise<Buffer> {
    const own = await localOrUndefined(() => local.listVersions(feedName, query));
    if (own !== undefined) return own;
    const group = query.group ?? "";
    const name = query.name ?? "";
    const version = query.version ?? "";
    const canonical = canonicalVersion(version);
    const found =
      canonical === undefined
        ? { failures: [], failed: [] }
        : await firstListing(upstreams, connectors, { group, name, version: canonical }, query.includeFileList);
    // An earlier connector that failed might have listed it too, and would have won.
    if (found.version !== undefined) return withFailures(toBuffer(found.version.json), found.failed);
    throw found.failures[0] ?? versionNotFound(group, name, version);
  }
}

/** Asks every connector at once; a connector that fails is a failure, not an exception. */
export async function gather<T>(
  upstreams: ConnectorUpstreams,
  connectors: readonly Connector[],
  request: MetadataRequest,
  read: (body: unknown, visible: Visible) => T[],
): Promise<Gathered<T>> {
  const sources: Source<T>[] = [];
  const failures: DomainError[] = [];
  const failed: ConnectorFailure[] = [];
  const results = await Promise.all(
    connectors.map(async (connector): Promise<Source<T> | DomainError> => {
      try {
        const answer = await upstreams.metadata(connector, request);
        return { connector, entries: answer.found ? read(answer.body, visibleThrough(connector)) : [] };
      } catch (error) {
        // upstream.ts turns every upstream failure into a DomainError; anything else is a bug.
        if (!(error instanceof DomainError)) throw error;
        return error;
      }
    }),
  );
  results.forEach((result, i) => {
    if (!(result instanceof DomainError)) sources.push(result);
    else {
      failures.push(result);
      failed.push({ connector: connectors[i]?.name ?? "", code: result.code });
    }
  });
  return { sources, failures, failed };
}

/** The version a connector lists, if any did, and the failures of the connectors that could not answer. */
export type Listed = (
  | { readonly connector: Connector; readonly version: RemoteVersion }
  | { readonly connector?: undefined; readonly version?: undefined }
) & { readonly failures: DomainError[]; readonly failed: ConnectorFailure[] };

/**
 * The first connector, in the feed's order, that lists exactly this version (canonical text).
 * Asked one at a time, unlike gather(): a later connector is asked only when no earlier one has it.
 */
export async function firstListing(
  upstreams: ConnectorUpstreams,
  connectors: readonly Connector[],
  id: { readonly group: string; readonly name: string; readonly version: string },
  withFiles: boolean,
): Promise<Listed> {
  const failures: DomainError[] = [];
  const failed: ConnectorFailure[] = [];
  const request: MetadataRequest = {
    endpoint: "versions",
    query: { group: id.group, name: id.name, version: id.version, includeFileList: withFiles ? "true" : undefined },
  };
  for (const connector of connectors) {
    try {
      const answer = await upstreams.metadata(connector, request);
      const found = answer.found ? remoteVersionOf(answer.body, visibleThrough(connector), withFiles) : undefined;
      if (found !== undefined && found.versionText.toLowerCase() === id.version.toLowerCase()) {
        return { connector, version: found, failures, failed };
      }
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      failures.push(error);
      failed.push({ connector: connector.name, code: error.code });
    }
  }
  return { failures, failed };
}

/** Connectors whose compiled filters are remembered; more than any deployment has, in practice. */
const MAX_COMPILED_FILTERS = 256;
/**
 * Compiled filters by connector id, with the list they were compiled from: a connector has up to
 * 1000 patterns and is asked on every request. Checked against the connector's list on every use,
 * so a changed list (an update, or a connector of another database with the same id) is compiled
 * again; modifiedAt would not do, an update within the same millisecond keeps it.
 */
const compiledFilters = new Map<number, { readonly filters: readonly string[]; readonly visible: Visible }>();

/** Connector filters (domain/patterns.ts) matched against `group/name`, or `name` in the empty group. */
export function visibleThrough(connector: Connector): Visible {
  const { filters } = connector;
  if (filters.length === 0) return () => true;
  const kept = compiledFilters.get(connector.id);
  if (kept !== undefined && sameList(kept.filters, filters)) return kept.visible;
  const patterns = compilePatterns(filters);
  const visible: Visible = (group, name) => patterns.matches(filterSubject(group, name));
  if (kept === undefined && compiledFilters.size >= MAX_COMPILED_FILTERS) {
    const oldest = compiledFilters.keys().next();
    if (!oldest.done) compiledFilters.delete(oldest.value);
  }
  compiledFilters.set(connector.id, { filters, visible });
  return visible;
}

/** Usually the same array (upstreams.connectorsOf remembers connectors), else compared pattern by pattern. */
function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a === b || (a.length === b.length && a.every((pattern, i) => pattern === b[i]));
}

function packagesQuery(query: PackagesQuery): Record<string, string | undefined> {
  // Inedo.UPack's "*" (any group) is not passed on: an upstream may take it literally.
  return { group: query.group === "*" ? undefined : query.group, count: String(query.count) };
}

function versionsQuery(query: VersionsQuery): Record<string, string | undefined> {
  const files = query.includeFileList ? "true" : undefined;
  if (query.name !== undefined) return { group: query.group ?? "", name: query.name, includeFileList: files };
  const group = query.group === "*" ? undefined : query.group;
  return { group, count: String(query.count), includeFileList: files };
}

function parseArray(json: Buffer): Json[] {
  const parsed = JSON.parse(json.toString("utf8")) as unknown;
  return Array.isArray(parsed) ? (parsed as Json[]) : [];
}

function parseObject(json: Buffer): Json {
  return JSON.parse(json.toString("utf8")) as Json;
}

function toBuffer(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value));
}

/** The feed's own "not found": a connector may still have it. */
export function isLocalMiss(error: unknown): error is DomainError {
  return error instanceof DomainError && (error.code === "PACKAGE_NOT_FOUND" || error.code === "VERSION_NOT_FOUND");
}

/** The local answer, or undefined for the local "not found". */
async function localOrUndefined(read: () => Promise<Buffer>): Promise<Buffer | undefined> {
  try {
    return await read();
  } catch (error) {
    if (isLocalMiss(error)) return undefined;
    throw error;
  }
}
