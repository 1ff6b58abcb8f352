import type { Connector } from "../../connectors/index.js";
import type { Feed } from "../../management/index.js";
import type { UpackQueryRepository } from "../read/query-repository.js";
import type { Source } from "./merge.js";

/**
 * Dependency confusion (README "Connectors"): a package the feed publishes itself belongs to the
 * feed. Once the feed holds a version of it that was uploaded or imported, connectors' versions of
 * that package are not listed, not candidates for `latest` and not served, so an upstream cannot
 * take a local name over by listing a higher version. Only a connector whose
 * `mergeWithLocalPackages` is on (a trusted upstream) still adds versions to it, as Artifactory's
 * and Nexus's "local first" resolution do unless told otherwise.
 *
 * Cached versions (pulled from a connector and kept) do not make a package the feed's: they are
 * the connector's, and a feed that caches would otherwise stop seeing its upstream's new versions
 * after the first download.
 */
export type OwnsPackage = (feedId: number, group: string, name: string) => Promise<boolean>;

export function ownershipOf(repository: Pick<UpackQueryRepository, "ownsPackage">): OwnsPackage {
  return (feedId, group, name) => repository.ownsPackage(feedId, group.toLowerCase(), name.toLowerCase());
}

/** The connectors, in the feed's order, that may list and serve versions of one package. */
export async function connectorsForPackage(
  owns: OwnsPackage,
  feed: Feed,
  connectors: readonly Connector[],
  group: string,
  name: string,
): Promise<readonly Connector[]> {
  if (connectors.every((connector) => connector.mergeWithLocalPackages)) return connectors;
  if (!(await owns(feed.id, group, name))) return connectors;
  return connectors.filter((connector) => connector.mergeWithLocalPackages);
}

/** The connectors' entries without those of packages the feed owns (from connectors that do not merge). */
export async function withoutShadowed<T extends { group: string; name: string; key: string }>(
  owns: OwnsPackage,
  feed: Feed,
  sources: readonly Source<T>[],
): Promise<Source<T>[]> {
  const candidates = new Map<string, T>();
  for (const { connector, entries } of sources) {
    if (connector.mergeWithLocalPackages) continue;
    for (const entry of entries) if (!candidates.has(entry.key)) candidates.set(entry.key, entry);
  }
  const owned = new Set<string>();
  for (const [key, entry] of candidates) if (await owns(feed.id, entry.group, entry.name)) owned.add(key);
  if (owned.size === 0) return [...sources];
  return sources.map((source) =>
    source.connector.mergeWithLocalPackages
      ? source
      : { connector: source.connector, entries: source.entries.filter((entry) => !owned.has(entry.key)) },
  );
}
