import { changeWatchOf } from "../../../storage/change-watch.js";
import type { Db } from "../../../storage/database.js";
import { flushDownloadCounts } from "../download/counts.js";
import { SEARCH_RANK, searchTerms } from "./query-repository.js";

/**
 * Paged reads of stored universal packages for people browsing (the web UI's feed and package
 * pages). The API's listings answer whole lists (up to 1,000 entries, every version of a package);
 * a page shows 50 and must stay fast on a feed of 100,000 versions, so these reads are paged in SQL
 * (LIMIT/OFFSET on the same indexes the API's listings use) and never load a list to slice it.
 * Search ranks exactly as the API's `search` does (SEARCH_RANK). Keys are lowercased by callers.
 */

export type PackageOrder = "name" | "updated" | "relevance";

export interface PackagePageQuery {
  /** Lowercased search term; "" or absent lists every package. */
  readonly termKey?: string;
  /** "relevance" applies to a search only; without a term it lists by name. */
  readonly order: PackageOrder;
  readonly offset: number;
  readonly limit: number;
}

/** One package of a feed page: what its latest version says. */
export interface BrowsePackageRow {
  readonly group_name: string;
  readonly name: string;
  readonly latest_version: string;
  /** The latest version's manifest: a JSON object text. */
  readonly manifest: string;
  readonly downloads: number;
  /** When the latest version was published ("last updated" orders by it). */
  readonly published_at: string;
}

/** One version with what a package page shows about it. */
export interface BrowseVersionRow {
  readonly version: string;
  readonly manifest: string;
  readonly downloads: number;
  readonly published_at: string;
  readonly published_by: string | null;
  readonly size: number;
  readonly sha1: string;
  /** The package file's SHA-256 (its content address). */
  readonly sha256: string;
  readonly is_cached: number;
  readonly is_virtual: number;
}

export interface BrowsePackage {
  readonly group_name: string;
  readonly name: string;
  readonly latest_version: string;
  readonly downloads: number;
  readonly version_count: number;
}

export interface UpackBrowseQueries {
  /** Up to `limit` packages from `offset`, and whether more follow. */
  packagesPage(feedId: number, query: PackagePageQuery): Promise<{ rows: BrowsePackageRow[]; more: boolean }>;
  findPackage(feedId: number, groupKey: string, nameKey: string): Promise<BrowsePackage | undefined>;
  /** Newest first, `limit` from `offset`. */
  versionsPage(
    feedId: number,
    groupKey: string,
    nameKey: string,
    offset: number,
    limit: number,
  ): Promise<BrowseVersionRow[]>;
  /** `versionKey` undefined: the latest version. */
  findVersion(
    feedId: number,
    groupKey: string,
    nameKey: string,
    versionKey?: string,
  ): Promise<BrowseVersionRow | undefined>;
  /** The stored archive entry list (JSON `[{name, size, date}]`) of one version. */
  fileListOf(feedId: number, groupKey: string, nameKey: string, versionKey: string): Promise<string | undefined>;
  /** Which of these (groupKey, nameKey) pairs are packages of the feed: for linking dependencies. */
  existing(feedId: number, ids: ReadonlyArray<{ groupKey: string; nameKey: string }>): Promise<Set<string>>;
}

/** The key `existing` answers with for a package id. */
export const packageIdKey = (groupKey: string, nameKey: string) => `${groupKey}\0${nameKey}`;

/** Column lists, joins and orders of the reads below, the same on both databases (browse-queries-postgres.ts). */
export const PACKAGE_COLUMNS = `p.group_name, p.name, v.version AS latest_version, v.manifest, p.downloads, v.published_at`;
export const LATEST = "upack_packages p JOIN upack_versions v ON v.id = p.latest_version_id";
export const VERSION_COLUMNS = `v.version, v.manifest, v.downloads, v.published_at, v.published_by, v.size, v.sha1,
  v.blob_sha256 AS sha256, v.is_cached, v.is_virtual`;
export const VERSIONS = "upack_packages p JOIN upack_versions v ON v.package_id = p.id";
const ONE_PACKAGE = "p.feed_id = @feed AND p.group_key = @group AND p.name_key = @name";

export const ORDER_BY: Record<PackageOrder, string> = {
  name: "p.group_key, p.name_key",
  updated: "v.published_at DESC, p.group_key, p.name_key",
  relevance: "rank, p.name_key, p.group_key",
};

/**
 * Whether a package may match a search at all, read from the package row alone before SEARCH_RANK
 * reads the latest version's manifest (reading 100,000 packages' latest versions is most of a first
 * search's cost on a big feed). search_text (migration 0016, kept by triggers) holds every text
 * SEARCH_RANK matches besides the name, decoded from the manifest: a package whose name and
 * search_text both lack the term cannot match. NULL (not known) is always ranked. Same LIKE as
 * SEARCH_RANK, so the same letter-case rule.
 */
const MAY_MATCH = `(p.name_key LIKE @infix ESCAPE '\\' OR p.search_text IS NULL OR p.search_text LIKE @infix ESCAPE '\\')`;

/** Orders (a feed's by last update, a search's) kept at once: up to 800 KiB each at 100,000 packages. */
export const MAX_KEPT_ORDERS = 32;

export function createUpackBrowseQueries(db: Db): UpackBrowseQueries {
  // By name: a page is chosen by id alone along the (feed_id, group_key, name_key) index (OFFSET
  // skips index entries, not joined rows), then only its rows are joined to their latest version.
  const byName = db.prepare<[{ feed: number; limit: number; offset: number }], BrowsePackageRow>(
    `SELECT ${PACKAGE_COLUMNS} FROM (
       SELECT p.id FROM upack_packages p WHERE p.feed_id = @feed AND p.latest_version_id IS NOT NULL
       ORDER BY ${ORDER_BY.name} LIMIT @limit OFFSET @offset
     ) page JOIN upack_packages p ON p.id = page.id JOIN upack_versions v ON v.id = p.latest_version_id
     ORDER BY ${ORDER_BY.name}`,
  );
  // Orders without an index to walk: "last updated" (the time is on each package's latest version)
  // and searches (every package is ranked, as the API's search does). The ids in that order are read
  // once and kept until the next write (ChangeWatch; download counts, written quietly, change no
  // order), so that paging costs one read of 50 rows by id. The first read of a search or of a
  // feed's order costs what the API's search does.
  const updatedIds = db
    .prepare<[{ feed: number }], number>(
      `SELECT p.id FROM ${LATEST} WHERE p.feed_id = @feed ORDER BY ${ORDER_BY.updated}`,
    )
    .pluck();
  const searching = (order: PackageOrder) =>
    db
      .prepare<[{ feed: number; term: string; prefix: string; infix: string }], number>(
        // MAY_MATCH reads the package row only, so SQLite tests it before reading the version's.
        `SELECT p.id, ${SEARCH_RANK} AS rank FROM ${LATEST}
         WHERE p.feed_id = @feed AND ${MAY_MATCH} AND rank IS NOT NULL ORDER BY ${ORDER_BY[order]}`,
      )
      .pluck();
  const search = { name: searching("name"), updated: searching("updated"), relevance: searching("relevance") };
  const byIds = db.prepare<[string], BrowsePackageRow & { id: number }>(
    `SELECT p.id, ${PACKAGE_COLUMNS} FROM ${LATEST} WHERE p.id IN (SELECT value FROM json_each(?))`,
  );
  const watch = changeWatchOf(db);
  const orders = new Map<string, { version: string; ids: number[] }>();
  function keptOrder(key: string, read: () => number[]): number[] {
    const version = watch.version();
    const kept = orders.get(key);
    if (kept?.version === version) return kept.ids;
    const ids = read();
    orders.delete(key);
    if (orders.size >= MAX_KEPT_ORDERS) orders.delete(orders.keys().next().value as string);
    orders.set(key, { version, ids });
    return ids;
  }
  function rowsOf(ids: readonly number[]): BrowsePackageRow[] {
    const rows = new Map(byIds.all(JSON.stringify(ids)).map((row) => [row.id, row]));
    return ids.flatMap((id) => {
      const row = rows.get(id);
      if (row === undefined) return [];
      const { id: _id, ...rest } = row;
      return [rest];
    });
  }
  function orderedIds(feedId: number, termKey: string, order: PackageOrder): number[] {
    const key = `${feedId}\0${order}\0${termKey}`;
    if (termKey === "") return keptOrder(key, () => updatedIds.all({ feed: feedId }));
    return keptOrder(key, () => search[order].all({ feed: feedId, ...searchTerms(termKey) }));
  }
  type One = { feed: number; group: string; name: string };
  const packageOne = db.prepare<[One], BrowsePackage>(
    `SELECT p.group_name, p.name, v.version AS latest_version, p.downloads,
       (SELECT COUNT(*) FROM upack_versions c WHERE c.package_id = p.id) AS version_count
     FROM ${LATEST} WHERE ${ONE_PACKAGE}`,
  );
  const versions = db.prepare<[One & { limit: number; offset: number }], BrowseVersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM ${VERSIONS} WHERE ${ONE_PACKAGE}
     ORDER BY v.sort_key DESC LIMIT @limit OFFSET @offset`,
  );
  const versionOne = db.prepare<[One & { version: string }], BrowseVersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM ${VERSIONS} WHERE ${ONE_PACKAGE} AND v.version_key = @version`,
  );
  const versionLatest = db.prepare<[One], BrowseVersionRow>(
    `SELECT ${VERSION_COLUMNS} FROM ${LATEST} WHERE ${ONE_PACKAGE}`,
  );
  const fileList = db
    .prepare<[One & { version: string }], string>(
      `SELECT v.file_list FROM ${VERSIONS} WHERE ${ONE_PACKAGE} AND v.version_key = @version`,
    )
    .pluck();
  const exists = db
    .prepare<[One], number>(`SELECT 1 FROM upack_packages p WHERE ${ONE_PACKAGE} AND p.latest_version_id IS NOT NULL`)
    .pluck();
  /** Pages show download counts: the batched ones are written first (as the API's reads do). */
  const withCounts = () => flushDownloadCounts(db);

  return {
    async packagesPage(feedId, query) {
      withCounts();
      const termKey = query.termKey?.trim() ?? "";
      const window = { feed: feedId, limit: query.limit + 1, offset: query.offset };
      const rows =
        termKey === "" && query.order !== "updated"
          ? byName.all(window)
          : rowsOf(orderedIds(feedId, termKey, query.order).slice(window.offset, window.offset + window.limit));
      const more = rows.length > query.limit;
      return { rows: more ? rows.slice(0, query.limit) : rows, more };
    },
    async findPackage(feedId, groupKey, nameKey) {
      withCounts();
      return packageOne.get({ feed: feedId, group: groupKey, name: nameKey });
    },
    async versionsPage(feedId, groupKey, nameKey, offset, limit) {
      withCounts();
      return versions.all({ feed: feedId, group: groupKey, name: nameKey, limit, offset });
    },
    async findVersion(feedId, groupKey, nameKey, versionKey) {
      withCounts();
      const one = { feed: feedId, group: groupKey, name: nameKey };
      return versionKey === undefined ? versionLatest.get(one) : versionOne.get({ ...one, version: versionKey });
    },
    async fileListOf(feedId, groupKey, nameKey, versionKey) {
      return fileList.get({ feed: feedId, group: groupKey, name: nameKey, version: versionKey });
    },
    async existing(feedId, ids) {
      const found = new Set<string>();
      for (const { groupKey, nameKey } of ids) {
        if (exists.get({ feed: feedId, group: groupKey, name: nameKey }) !== undefined) {
          found.add(packageIdKey(groupKey, nameKey));
        }
      }
      return found;
    },
  };
}
