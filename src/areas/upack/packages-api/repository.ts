import type { Statement } from "better-sqlite3";
import type { Db } from "../../../storage/database.js";
import { flushDownloadCounts } from "../download/counts.js";
import type { ListFilter } from "./params.js";

/**
 * The reads behind PackageVersionInfo (docs/compat.md 3). They read the universal feed's own tables
 * (migrations/0004) rather than going through UpackQueryRepository, because that one's rows lack
 * what this API reports (publisher, MD5/SHA-512, SHA-256, the package total beside the version's
 * count); this API is a second face of the same packages, and writes still go only through the
 * upack services. Read-only; keys passed in are already lowercased (see ListFilter).
 */

export interface VersionInfoRow {
  readonly group_name: string;
  readonly name: string;
  readonly version: string;
  /** Downloads of every version of the package. */
  readonly total_downloads: number;
  readonly downloads: number;
  readonly published_at: string;
  readonly published_by: string | null;
  readonly size: number;
  readonly sha1: string;
  /** The stored file's content address: its SHA-256. */
  readonly blob_sha256: string;
  readonly md5: string | null;
  readonly sha512: string | null;
}

export interface PackagesApiRepository {
  /** Matching versions: packages by group then name, each package's versions newest first. */
  listVersions(feedId: number, filter: ListFilter): Promise<VersionInfoRow[]>;
  /**
   * One row per matching package: its highest version (Inedo.UPack ordering), or with
   * `stableOnly` its highest version without a prerelease part; a package with only
   * prereleases is then left out. Ordered by group, then name.
   */
  listLatest(feedId: number, filter: ListFilter, stableOnly: boolean): Promise<VersionInfoRow[]>;
  findVersion(
    feedId: number,
    groupKey: string,
    nameKey: string,
    versionKey: string,
  ): Promise<VersionInfoRow | undefined>;
}

/** The columns of a VersionInfoRow (both databases). */
export const COLUMNS = `p.group_name, p.name, v.version, p.downloads AS total_downloads, v.downloads, v.published_at,
  v.published_by, v.size, v.sha1, v.blob_sha256, v.md5, v.sha512`;

/**
 * A release: stored versions are canonical (`M.m.p[-pre][+build]`), so a '-' before any '+' is
 * the prerelease separator, and one after the '+' belongs to the build metadata.
 */
const IS_STABLE = `(instr(s.version, '-') = 0 OR (instr(s.version, '+') > 0 AND instr(s.version, '-') > instr(s.version, '+')))`;

// Walks the (package_id, sort_key) index from the top down to the first release.
const HIGHEST_STABLE = `(SELECT s.id FROM upack_versions s WHERE s.package_id = p.id AND ${IS_STABLE}
  ORDER BY s.sort_key DESC LIMIT 1)`;

interface Bindings {
  readonly feed: number;
  readonly group?: string;
  readonly name?: string;
  readonly version?: string;
}

export function createPackagesApiRepository(db: Db): PackagesApiRepository {
  // One statement per combination of filters (at most 16), prepared on first use: an
  // `(@x IS NULL OR ...)` form would keep SQLite from using the (feed_id, group_key, name_key) index.
  const statements = new Map<string, Statement<[Bindings], VersionInfoRow>>();
  function statement(
    kind: "versions" | "latest" | "stable",
    filter: ListFilter,
  ): Statement<[Bindings], VersionInfoRow> {
    const where = ["p.feed_id = @feed"];
    if (filter.groupKey !== undefined) where.push("p.group_key = @group");
    if (filter.nameKey !== undefined) where.push("p.name_key = @name");
    if (filter.versionKey !== undefined) where.push("v.version_key = @version");
    const key = `${kind}:${where.join(" AND ")}`;
    let prepared = statements.get(key);
    if (prepared === undefined) {
      const join =
        kind === "versions"
          ? "v.package_id = p.id"
          : kind === "latest"
            ? "v.id = p.latest_version_id"
            : `v.id = ${HIGHEST_STABLE}`;
      const order = kind === "versions" ? "p.group_key, p.name_key, v.sort_key DESC" : "p.group_key, p.name_key";
      prepared = db.prepare<[Bindings], VersionInfoRow>(
        `SELECT ${COLUMNS} FROM upack_packages p JOIN upack_versions v ON ${join}
         WHERE ${where.join(" AND ")} ORDER BY ${order}`,
      );
      statements.set(key, prepared);
    }
    return prepared;
  }

  const bindings = (feed: number, filter: ListFilter): Bindings => ({
    feed,
    ...(filter.groupKey === undefined ? {} : { group: filter.groupKey }),
    ...(filter.nameKey === undefined ? {} : { name: filter.nameKey }),
    ...(filter.versionKey === undefined ? {} : { version: filter.versionKey }),
  });

  return {
    // Download counts are batched (upack/download/counts.ts): pending ones are written before a read shows them.
    async listVersions(feedId, filter) {
      flushDownloadCounts(db);
      return statement("versions", filter).all(bindings(feedId, filter));
    },
    async listLatest(feedId, filter, stableOnly) {
      flushDownloadCounts(db);
      const latestFilter = { ...filter, versionKey: undefined };
      return statement(stableOnly ? "stable" : "latest", latestFilter).all(bindings(feedId, latestFilter));
    },
    async findVersion(feedId, groupKey, nameKey, versionKey) {
      flushDownloadCounts(db);
      const filter = { groupKey, nameKey, versionKey };
      return statement("versions", filter).get(bindings(feedId, filter));
    },
  };
}
