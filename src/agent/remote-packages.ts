import type { PackageSource, ResolvedPackage } from "../drift/model.js";
import type { AgentConnection } from "./connection.js";
import type { WorkItem } from "./protocol.js";

/**
 * Packages for the `package` items of one work item, from Wharf: the agent may resolve and
 * download only the packages that work names (Wharf checks again), asked for by the item's key.
 */
export function remotePackageSource(connection: AgentConnection, work: WorkItem): PackageSource {
  function itemKeyOf(feed: string, group: string, name: string): string {
    const same = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase();
    const item = work.items.find(
      ({ type, properties }) =>
        type === "package" &&
        same(properties.feed, feed) &&
        same(properties.group ?? "", group) &&
        same(properties.name, name),
    );
    if (item === undefined) {
      throw new Error(`Package ${group === "" ? "" : `${group}/`}${name} of feed ${feed} is not an item of this work.`);
    }
    return item.key;
  }
  return {
    resolve(feed, group, name, _version, signal): Promise<ResolvedPackage | undefined> {
      return connection.resolvePackage(work.id, itemKeyOf(feed, group, name), signal);
    },
    open(feed, group, name, version, signal) {
      return connection.openPackage(work.id, itemKeyOf(feed, group, name), version, signal);
    },
  };
}
