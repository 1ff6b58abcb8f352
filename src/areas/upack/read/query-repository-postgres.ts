import type pg from "pg";
import { type Clock, systemClock } from "../../../domain/clock.js";
import type { ChangeWatch } from "../../../storage/change-watch.js";
import { type PostgresDb, readRows } from "../../../storage/postgres/database.js";
import { flushPostgresDownloadCounts, postgresDownloadCounterOf } from "./download-counts-postgres.js";
import {
  DOWNLOAD_COLUMNS,
  type DownloadRow,
  PACKAGE_COLUMNS,
  type PackageRow,
  PACKAGES_FROM,
  searchTerms,
  type UpackQueryRepository,
  VERSION_COLUMNS,
  type VersionRow,
  VERSIONS_FROM,
} from "./query-repository.js";

/**
 * SEARCH_RANK on PostgreSQL, over `j.m` (the latest version's manifest as jsonb, parsed once per
 * row) with $2 the term, $3 the prefix and $4 the infix pattern (searchTerms). ILIKE where SQLite's
 * LIKE is: under COLLATE "C" it ignores the case of ASCII letters only, as SQLite's LIKE does. The
 * tags are those of an array (what manifestToJson writes), as migration 0016's upack_search_texts
 * reads them on PostgreSQL.
 */
export const SEARCH_RANK = `CASE
  WHEN p.name_key = $2 THEN 0
  WHEN p.name_key ILIKE $3 ESCAPE '\\' THEN 1
  WHEN p.name_key ILIKE $4 ESCAPE '\\' THEN 2
  WHEN (j.m ->> 'title') ILIKE $4 ESCAPE '\\' THEN 3
  WHEN (j.m ->> 'description') ILIKE $4 ESCAPE '\\'
    OR (j.m ->> 'shortDescription') ILIKE $4 ESCAPE '\\' THEN 4
  WHEN EXISTS (SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(j.m -> 'tags') = 'array' THEN j.m -> 'tags' END) t
                WHERE t.value ILIKE $4 ESCAPE '\\') THEN 5
END`;

/**
 * The manifest as jsonb, or NULL when jsonb cannot hold it: a text escaping \u0000 or a lone
 * surrogate, which SQLite reads but jsonb refuses (a cast would fail every search of the feed).
 * Such a package is then ranked by its name alone, as migration 0016's search_text leaves it
 * unknown. Only a manifest with some \u escape pays for wharf_json_valid.
 */
export const MANIFEST = `CASE WHEN strpos(v.manifest, '\\u') = 0 OR wharf_json_valid(v.manifest) THEN v.manifest::jsonb END`;

// OFFSET 0 keeps the planner from inlining `m` into each of SEARCH_RANK's uses: the manifest is
// then parsed once per package rather than up to five times (a search reads every package of the
// feed; about three times faster on 20,000 packages).
const SEARCH = `
  SELECT * FROM (SELECT ${PACKAGE_COLUMNS}, p.group_key, p.name_key, ${SEARCH_RANK} AS rank
                   FROM ${PACKAGES_FROM} CROSS JOIN LATERAL (SELECT ${MANIFEST} AS m OFFSET 0) j WHERE p.feed_id = $1) ranked
   WHERE rank IS NOT NULL ORDER BY rank, name_key, group_key LIMIT $5`;

const versionStatements = (columns: string) => ({
  ofPackage: `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3
              ORDER BY v.sort_key DESC`,
  inGroup: `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = $1 AND p.group_key = $2
            ORDER BY p.name_key, v.sort_key DESC LIMIT $3`,
  all: `SELECT ${columns} FROM ${VERSIONS_FROM} WHERE p.feed_id = $1
        ORDER BY p.group_key, p.name_key, v.sort_key DESC LIMIT $2`,
  one: `SELECT ${columns} FROM ${VERSIONS_FROM}
         WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3 AND v.version_key = $4`,
});
const plain = versionStatements(VERSION_COLUMNS);
const withFileList = versionStatements(`${VERSION_COLUMNS}, v.file_list`);

/**
 * UpackQueryRepository on PostgreSQL (cluster mode): the same rows, in the same order, as on
 * SQLite (COLLATE "C" orders keys and sort keys as SQLite's BINARY does). `watch` is the node's
 * change watch (storage/postgres/change-feed.ts, the one whose localCommit is `db.committed`): on
 * SQLite the repository finds the connection's own, here only the caller knows it. Downloads are
 * counted by the node's counter (download-counts-postgres.ts), flushed before every read that shows
 * counts, as on SQLite.
 */
export function createPostgresUpackQueryRepository(
  db: PostgresDb,
  watch: Pick<ChangeWatch, "version">,
  clock: Clock = systemClock,
): UpackQueryRepository {
  const downloads = postgresDownloadCounterOf(db);
  /** Before a read that shows download counts: this node's pending ones are written first. */
  const withCounts = () => flushPostgresDownloadCounts(db);
  const one = async <Row extends pg.QueryResultRow>(sql: string, params: readonly unknown[]) =>
    (await readRows<Row>(db, sql, params))[0];

  return {
    async findPackage(feedId, groupKey, nameKey) {
      await withCounts();
      return one<PackageRow>(
        `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3`,
        [feedId, groupKey, nameKey],
      );
    },
    async listPackages(feedId, groupKey, limit) {
      await withCounts();
      return groupKey === undefined
        ? readRows<PackageRow>(
            db,
            `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = $1 ORDER BY p.group_key, p.name_key LIMIT $2`,
            [feedId, limit],
          )
        : readRows<PackageRow>(
            db,
            `SELECT ${PACKAGE_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = $1 AND p.group_key = $2
             ORDER BY p.name_key LIMIT $3`,
            [feedId, groupKey, limit],
          );
    },
    async searchPackages(feedId, termKey, limit) {
      await withCounts();
      const { term, prefix, infix } = searchTerms(termKey);
      return readRows<PackageRow>(db, SEARCH, [feedId, term, prefix, infix, limit]);
    },
    async listVersions(feedId, filter, limit, withFiles) {
      await withCounts();
      const statements = withFiles ? withFileList : plain;
      type Row = VersionRow;
      if (filter.nameKey !== undefined) {
        return readRows<Row>(db, statements.ofPackage, [feedId, filter.groupKey ?? "", filter.nameKey]);
      }
      if (filter.groupKey !== undefined) return readRows<Row>(db, statements.inGroup, [feedId, filter.groupKey, limit]);
      return readRows<Row>(db, statements.all, [feedId, limit]);
    },
    async findVersion(feedId, groupKey, nameKey, versionKey, withFiles) {
      await withCounts();
      return one<VersionRow>((withFiles ? withFileList : plain).one, [feedId, groupKey, nameKey, versionKey]);
    },
    async findDownload(feedId, groupKey, nameKey, versionKey) {
      return versionKey === undefined
        ? one<DownloadRow>(
            `SELECT ${DOWNLOAD_COLUMNS} FROM ${PACKAGES_FROM} WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3`,
            [feedId, groupKey, nameKey],
          )
        : one<DownloadRow>(
            `SELECT ${DOWNLOAD_COLUMNS} FROM ${VERSIONS_FROM}
              WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3 AND v.version_key = $4`,
            [feedId, groupKey, nameKey, versionKey],
          );
    },
    async packageExists(feedId, groupKey, nameKey) {
      const rows = await readRows(
        db,
        `SELECT 1 FROM upack_packages
          WHERE feed_id = $1 AND group_key = $2 AND name_key = $3 AND latest_version_id IS NOT NULL`,
        [feedId, groupKey, nameKey],
      );
      return rows.length > 0;
    },
    async ownsPackage(feedId, groupKey, nameKey) {
      const rows = await readRows(
        db,
        `SELECT 1 FROM ${VERSIONS_FROM} WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3 AND v.is_cached = 0
         LIMIT 1`,
        [feedId, groupKey, nameKey],
      );
      return rows.length > 0;
    },
    async manifestOf(versionId) {
      return (await one<{ manifest: string }>("SELECT manifest FROM upack_versions WHERE id = $1", [versionId]))
        ?.manifest;
    },
    async counts(feedId) {
      return (
        (await one<{ packages: number; versions: number }>(
          `SELECT (SELECT COUNT(*) FROM upack_packages WHERE feed_id = $1 AND latest_version_id IS NOT NULL) AS packages,
                  (SELECT COUNT(*) FROM ${VERSIONS_FROM} WHERE p.feed_id = $1) AS versions`,
          [feedId],
        )) ?? { packages: 0, versions: 0 }
      );
    },
    async recordDownload(feedId, versionId, packageId) {
      downloads.add(feedId, versionId, packageId, clock.now().toISOString());
    },
    generation(feedId) {
      // Counts are written quietly (they move no node's cache version) and tracked per feed instead.
      // Unlike SQLite's, this cannot write pending counts first (it is synchronous): a count added
      // moves the feed's state at once instead, and the read the generation guards writes them.
      return `${watch.version()}:${downloads.stateOf(feedId)}`;
    },
  };
}
