import { type Clock, systemClock } from "../../../domain/clock.js";
import { changeWatchOf } from "../../../storage/change-watch.js";
import type { Db } from "../../../storage/database.js";
import { downloadCounterOf, flushDownloadCounts } from "../download/counts.js";

/**
 * Every SQL read behind the universal feed's listings and downloads (docs/seed-api.md area A). Reads
 * rely on what the write side keeps denormalised (migrations/0004): `latest_version_id` and
 * `versions_desc` on packages, and `sort_key` on versions (ORDER BY sort_key DESC = newest first,
 * straight from the (package_id, sort_key) index). Group, name and version are matched through
 * their lowercased `*_key` columns, so callers pass keys already lowercased.
 */

/** One package with its latest version, as listed by `packages` and `search`. */
export interface PackageRow {
  /** Internal id (the native API's ProGetPackage_Id). */
  readonly package_id: number;
  readonly group_name: string;
  readonly name: string;
  readonly latest_version: string;
  /** JSON array text, highest version first. */
  readonly versions_desc: string;
  readonly downloads: number;
  /** The latest version's stored manifest: a JSON object text. */
  readonly manifest: string;
  readonly is_cached: number;
  readonly is_virtual: number;
}

/** One version, as listed by `versions`. */
export interface VersionRow {
  readonly package_id: number;
  readonly group_name: string;
  readonly name: string;
  readonly version: string;
  /** The stored manifest: a JSON object text. */
  readonly manifest: string;
  readonly downloads: number;
  readonly published_at: string;
  readonly size: number;
  readonly sha1: string;
  readonly is_cached: number;
  readonly is_virtual: number;
  /** Only when the file list was asked for: JSON `[{name, size, date}]` of the archive's entries. */
  readonly file_list?: string;
}

/** What a download needs, from one indexed lookup. */
export interface DownloadRow {
  readonly version_id: number;
  readonly package_id: number;
  readonly group_name: string;
  readonly name: string;
  readonly version: string;
  readonly blob_sha256: string;
  /** Of the stored file: what a virtual package's `name:version:sha1` reference is checked against. */
  readonly sha1: string;
  readonly size: number;
  readonly published_at: string;
  readonly is_virtual: number;
}

export interface VersionFilter {
  /** Lowercased; undefined = every group. */
  readonly groupKey?: string;
  /** Lowercased; when given, every version of that one package is listed (no limit). */
  readonly nameKey?: string;
}

export interface UpackQueryRepository {
  findPackage(feedId: number, groupKey: string, nameKey: string): Promise<PackageRow | undefined>;
  /** Ordered by group, then name; `groupKey` undefined = all groups. */
  listPackages(feedId: number, groupKey: string | undefined, limit: number): Promise<PackageRow[]>;
  /** Packages matching `termKey` (lowercased), best match first (see SEARCH_RANK). */
  searchPackages(feedId: number, termKey: string, limit: number): Promise<PackageRow[]>;
  /** Newest first within each package; packages ordered by group, then name. */
  listVersions(feedId: number, filter: VersionFilter, limit: number, withFiles: boolean): Promise<VersionRow[]>;
  findVersion(
    feedId: number,
    groupKey: string,
    nameKey: string,
    versionKey: string,
    withFiles: boolean,
  ): Promise<VersionRow | undefined>;
  /** `versionKey` undefined = the package's latest version. */
  findDownload(
    feedId: number,
    groupKey: string,
    nameKey: string,
    versionKey: string | undefined,
  ): Promise<DownloadRow | undefined>;
  packageExists(feedId: number, groupKey: string, nameKey: string): Promise<boolean>;
  /** Whether the feed holds a version of the package that was uploaded or imported, not pulled and cached. */
  ownsPackage(feedId: number, groupKey: string, nameKey: string): Promise<boolean>;
  /** The stored manifest (upack.json as validated at upload) of one version. */
  manifestOf(versionId: number): Promise<string | undefined>;
  counts(feedId: number): Promise<{ packages: number; versions: number }>;
  /**
   * Counts one download of the version and its package. Batched (download/counts.ts): written
   * within about a second, and before any read of this repository that shows counts.
   */
  recordDownload(feedId: number, versionId: number, packageId: number): Promise<void>;
  /**
   * A token that changes whenever something a read of this feed could see was written, by this
   * connection or another process: equal tokens mean every read of the feed gives the same rows.
   * Download counts made through recordDownload only change the token of their own feed, so that
   * a busy feed's downloads do not churn every other feed's cached listings. Synchronous on
   * purpose, so that a caller can take it in the same tick as the read it guards.
   */
  generation(feedId: number): string;
}

/** Column lists and joins of the reads below, the same on both databases (read/query-repository-postgres.ts). */
export const PACKAGE_COLUMNS = `p.id AS package_id, p.group_name, p.name, v.version AS latest_version, p.versions_desc, p.downloads,
  v.manifest, v.is_cached, v.is_virtual`;
export const PACKAGES_FROM = "upack_packages p JOIN upack_versions v ON v.id = p.latest_version_id";
export const VERSION_COLUMNS = `p.id AS package_id, p.group_name, p.name, v.version, v.manifest, v.downloads, v.published_at, v.size, v.sha1,
  v.is_cached, v.is_virtual`;
export const VERSIONS_FROM = "upack_packages p JOIN upack_versions v ON v.package_id = p.id";

export const DOWNLOAD_COLUMNS = `v.id AS version_id, p.id AS package_id, p.group_name, p.name, v.version, v.blob_sha256,
    v.sha1, v.size, v.published_at, v.is_virtual`;

/**
 * Search ranks (1.4-style "what a user means"): exact name, name prefix, name substring, then
 * title, description (or shortDescription), tags. LIKE is case-insensitive for ASCII, which is
 * every character a name or tag may hold.
 */
export const SEARCH_RANK = `CASE
  WHEN p.name_key = @term THEN 0
  WHEN p.name_key LIKE @prefix ESCAPE '\\' THEN 1
  WHEN p.name_key LIKE @infix ESCAPE '\\' THEN 2
  WHEN json_extract(v.manifest, '$.title') LIKE @infix ESCAPE '\\' THEN 3
  WHEN json_extract(v.manifest, '$.description') LIKE @infix ESCAPE '\\'
    OR json_extract(v.manifest, '$.shortDescription') LIKE @infix ESCAPE '\\' THEN 4
  WHEN EXISTS (SELECT 1 FROM json_each(v.manifest, '$.tags') t WHERE t.value LIKE @infix ESCAPE '\\') THEN 5
END`;

/** SEARCH_RANK's parameters for a lowercased term: LIKE's wildcards in it match themselves. */
export function searchTerms(termKey: string): { term: string; prefix: string; infix: string } {
  const escaped = termKey.replace(/[\\%_]/g, (char) => `\\${char}`);
  return { term: termKey, prefix: `${escaped}%`, infix: `%${escaped}%` };
}

/** `clock` stamps downloads (upack_versions.last_downloaded_at, which retention reads). */
export function createUpackQueryRepository(db: Db, clock: Clock = systemClock): UpackQueryRepository {
  // Prepared once: a listing is then one statement execution with no per-row query.
  const packageOne = db.prepare<[number, string, string], PackageRow>(
    `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ?`,
  );
  const packagesAll = db.prepare<[number, number], PackageRow>(
    `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = ? ORDER BY p.group_key, p.name_key LIMIT ?`,
  );
  const packagesInGroup = db.prepare<[number, string, number], PackageRow>(
    `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = ? AND p.group_key = ?
     ORDER BY p.name_key LIMIT ?`,
  );
  const search = db.prepare<[{ feed: number; term: string; prefix: string; infix: string; limit: number }], PackageRow>(
    `SELECT * FROM (SELECT ${PACKAGE_COLUMNS}, p.group_key, p.name_key, ${SEARCH_RANK} AS rank
       FROM ${PACKAGES_FROM} WHERE p.feed_id = @feed)
     WHERE rank IS NOT NULL ORDER BY rank, name_key, group_key LIMIT @limit`,
  );

  const versionStatements = (columns: string) => ({
    ofPackage: db.prepare<[number, string, string], VersionRow>(
      `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ?
       ORDER BY v.sort_key DESC`,
    ),
    inGroup: db.prepare<[number, string, number], VersionRow>(
      `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = ? AND p.group_key = ?
       ORDER BY p.name_key, v.sort_key DESC LIMIT ?`,
    ),
    all: db.prepare<[number, number], VersionRow>(
      `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = ?
       ORDER BY p.group_key, p.name_key, v.sort_key DESC LIMIT ?`,
    ),
    one: db.prepare<[number, string, string, string], VersionRow>(
      `SELECT ${columns} FROM ${VERSIONS_FROM}
       WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ? AND v.version_key = ?`,
    ),
  });
  const plain = versionStatements(VERSION_COLUMNS);
  const withFileList = versionStatements(`${VERSION_COLUMNS}, v.file_list`);

  const downloadExact = db.prepare<[number, string, string, string], DownloadRow>(
    `SELECT ${DOWNLOAD_COLUMNS} FROM ${VERSIONS_FROM}
     WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ? AND v.version_key = ?`,
  );
  const downloadLatest = db.prepare<[number, string, string], DownloadRow>(
    `SELECT ${DOWNLOAD_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ?`,
  );
  const packageExists = db
    .prepare<[number, string, string], number>(
      "SELECT 1 FROM upack_packages WHERE feed_id = ? AND group_key = ? AND name_key = ? AND latest_version_id IS NOT NULL",
    )
    .pluck();
  const ownsPackage = db
    .prepare<[number, string, string], number>(
      `SELECT 1 FROM ${VERSIONS_FROM} WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ? AND v.is_cached = 0
       LIMIT 1`,
    )
    .pluck();
  const manifestOf = db.prepare<[number], string>("SELECT manifest FROM upack_versions WHERE id = ?").pluck();
  const counts = db.prepare<[number, number], { packages: number; versions: number }>(
    `SELECT (SELECT COUNT(*) FROM upack_packages WHERE feed_id = ? AND latest_version_id IS NOT NULL) AS packages,
            (SELECT COUNT(*) FROM ${VERSIONS_FROM} WHERE p.feed_id = ?) AS versions`,
  );
  const watch = changeWatchOf(db);
  const downloads = downloadCounterOf(db);
  /** Before a read that shows download counts: pending ones are written first. */
  const withCounts = () => flushDownloadCounts(db);

  return {
    async findPackage(feedId, groupKey, nameKey) {
      withCounts();
      return packageOne.get(feedId, groupKey, nameKey);
    },
    async listPackages(feedId, groupKey, limit) {
      withCounts();
      return groupKey === undefined ? packagesAll.all(feedId, limit) : packagesInGroup.all(feedId, groupKey, limit);
    },
    async searchPackages(feedId, termKey, limit) {
      withCounts();
      return search.all({ feed: feedId, ...searchTerms(termKey), limit });
    },
    async listVersions(feedId, filter, limit, withFiles) {
      withCounts();
      const statements = withFiles ? withFileList : plain;
      if (filter.nameKey !== undefined) return statements.ofPackage.all(feedId, filter.groupKey ?? "", filter.nameKey);
      if (filter.groupKey !== undefined) return statements.inGroup.all(feedId, filter.groupKey, limit);
      return statements.all.all(feedId, limit);
    },
    async findVersion(feedId, groupKey, nameKey, versionKey, withFiles) {
      withCounts();
      return (withFiles ? withFileList : plain).one.get(feedId, groupKey, nameKey, versionKey);
    },
    async findDownload(feedId, groupKey, nameKey, versionKey) {
      return versionKey === undefined
        ? downloadLatest.get(feedId, groupKey, nameKey)
        : downloadExact.get(feedId, groupKey, nameKey, versionKey);
    },
    async packageExists(feedId, groupKey, nameKey) {
      return packageExists.get(feedId, groupKey, nameKey) !== undefined;
    },
    async ownsPackage(feedId, groupKey, nameKey) {
      return ownsPackage.get(feedId, groupKey, nameKey) !== undefined;
    },
    async manifestOf(versionId) {
      return manifestOf.get(versionId);
    },
    async counts(feedId) {
      return counts.get(feedId, feedId) ?? { packages: 0, versions: 0 };
    },
    async recordDownload(feedId, versionId, packageId) {
      downloads.add(feedId, versionId, packageId, clock.now().toISOString());
    },
    generation(feedId) {
      // Counts are written quietly (they move no ChangeWatch version) and tracked per feed instead.
      withCounts();
      return `${watch.version()}:${downloads.writtenFor(feedId)}`;
    },
  };
}
