import type pg from "pg";
import type { ChangeWatch } from "../../../storage/change-watch.js";
import { type PostgresDb, readRows } from "../../../storage/postgres/database.js";
import {
  type BrowsePackage,
  type BrowsePackageRow,
  type BrowseVersionRow,
  LATEST,
  MAX_KEPT_ORDERS,
  ORDER_BY,
  PACKAGE_COLUMNS,
  type PackageOrder,
  packageIdKey,
  type UpackBrowseQueries,
  VERSION_COLUMNS,
  VERSIONS,
} from "./browse-queries.js";
import { flushPostgresDownloadCounts } from "./download-counts-postgres.js";
import { MANIFEST, SEARCH_RANK } from "./query-repository-postgres.js";
import { searchTerms } from "./query-repository.js";

const ONE_PACKAGE = "p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3";

/**
 * browse-queries.ts's MAY_MATCH on PostgreSQL, $4 being the infix pattern (as in SEARCH_RANK): ILIKE
 * under COLLATE "C" ignores the case of ASCII letters only, as SQLite's LIKE does.
 */
const MAY_MATCH = `(p.name_key ILIKE $4 ESCAPE '\\' OR p.search_text IS NULL OR p.search_text ILIKE $4 ESCAPE '\\')`;

const BY_NAME = `
  SELECT ${PACKAGE_COLUMNS} FROM (
    SELECT p.id FROM upack_packages p WHERE p.feed_id = $1 AND p.latest_version_id IS NOT NULL
    ORDER BY ${ORDER_BY.name} LIMIT $2 OFFSET $3
  ) page JOIN upack_packages p ON p.id = page.id JOIN upack_versions v ON v.id = p.latest_version_id
  ORDER BY ${ORDER_BY.name}`;

const UPDATED_IDS = `SELECT p.id FROM ${LATEST} WHERE p.feed_id = $1 ORDER BY ${ORDER_BY.updated}`;

/**
 * A search's ids in `order`. The manifest is parsed once per package (query-repository-postgres.ts's
 * MANIFEST), and only for a package that MAY_MATCH lets through (it reads the package row alone);
 * `rank` is the lateral's column, which ORDER_BY.relevance names.
 */
const searchIds = (order: PackageOrder) => `
  SELECT p.id FROM ${LATEST}
    CROSS JOIN LATERAL (SELECT ${MANIFEST} AS m OFFSET 0) j
    CROSS JOIN LATERAL (SELECT ${SEARCH_RANK} AS rank) r
   WHERE p.feed_id = $1 AND ${MAY_MATCH} AND r.rank IS NOT NULL ORDER BY ${ORDER_BY[order]}`;
const SEARCH_IDS: Record<PackageOrder, string> = {
  name: searchIds("name"),
  updated: searchIds("updated"),
  relevance: searchIds("relevance"),
};

const BY_IDS = `SELECT p.id, ${PACKAGE_COLUMNS} FROM ${LATEST} WHERE p.id = ANY ($1::bigint[])`;

const PACKAGE_ONE = `
  SELECT p.group_name, p.name, v.version AS latest_version, p.downloads,
    (SELECT COUNT(*) FROM upack_versions c WHERE c.package_id = p.id) AS version_count
  FROM ${LATEST} WHERE ${ONE_PACKAGE}`;
const VERSIONS_PAGE = `SELECT ${VERSION_COLUMNS} FROM ${VERSIONS} WHERE ${ONE_PACKAGE}
  ORDER BY v.sort_key DESC LIMIT $4 OFFSET $5`;
const VERSION_ONE = `SELECT ${VERSION_COLUMNS} FROM ${VERSIONS} WHERE ${ONE_PACKAGE} AND v.version_key = $4`;
const VERSION_LATEST = `SELECT ${VERSION_COLUMNS} FROM ${LATEST} WHERE ${ONE_PACKAGE}`;
const FILE_LIST = `SELECT v.file_list FROM ${VERSIONS} WHERE ${ONE_PACKAGE} AND v.version_key = $4`;
/** Every pair at once (SQLite asks one by one, each an index lookup). */
const EXISTING = `
  SELECT p.group_key, p.name_key FROM unnest($2::text[], $3::text[]) AS i(group_key, name_key)
    JOIN upack_packages p ON p.feed_id = $1 AND p.group_key = i.group_key AND p.name_key = i.name_key
   WHERE p.latest_version_id IS NOT NULL`;

/**
 * UpackBrowseQueries on PostgreSQL (cluster mode): the same rows, pages and orders as on SQLite
 * (COLLATE "C" orders keys as SQLite's BINARY does). `watch` is the node's change watch
 * (storage/postgres/change-feed.ts), as for createPostgresUpackQueryRepository: the orders kept
 * between writes are keyed on its version. Pages that show download counts first write this node's
 * pending ones (download-counts-postgres.ts), as on SQLite.
 */
export function createPostgresUpackBrowseQueries(
  db: PostgresDb,
  watch: Pick<ChangeWatch, "version">,
): UpackBrowseQueries {
  const one = async <Row extends pg.QueryResultRow>(sql: string, params: readonly unknown[]) =>
    (await readRows<Row>(db, sql, params))[0];
  const orders = new Map<string, { version: string; ids: number[] }>();

  /** As on SQLite; the version is taken before the read, so that a write during it is not missed. */
  async function keptOrder(key: string, read: () => Promise<number[]>): Promise<number[]> {
    const version = watch.version();
    const kept = orders.get(key);
    if (kept?.version === version) return kept.ids;
    const ids = await read();
    orders.delete(key);
    if (orders.size >= MAX_KEPT_ORDERS) orders.delete(orders.keys().next().value as string);
    orders.set(key, { version, ids });
    return ids;
  }
  const idsOf = async (sql: string, params: readonly unknown[]) =>
    (await readRows<{ id: number }>(db, sql, params)).map((row) => row.id);
  async function rowsOf(ids: readonly number[]): Promise<BrowsePackageRow[]> {
    if (ids.length === 0) return [];
    const rows = new Map(
      (await readRows<BrowsePackageRow & { id: number }>(db, BY_IDS, [ids])).map((row) => [row.id, row]),
    );
    return ids.flatMap((id) => {
      const row = rows.get(id);
      if (row === undefined) return [];
      const { id: _id, ...rest } = row;
      return [rest];
    });
  }
  function orderedIds(feedId: number, termKey: string, order: PackageOrder): Promise<number[]> {
    const key = `${feedId}\0${order}\0${termKey}`;
    if (termKey === "") return keptOrder(key, () => idsOf(UPDATED_IDS, [feedId]));
    const { term, prefix, infix } = searchTerms(termKey);
    return keptOrder(key, () => idsOf(SEARCH_IDS[order], [feedId, term, prefix, infix]));
  }
  /** Pages show download counts: the batched ones are written first (as the API's reads do). */
  const withCounts = () => flushPostgresDownloadCounts(db);

  return {
    async packagesPage(feedId, query) {
      await withCounts();
      const termKey = query.termKey?.trim() ?? "";
      const limit = query.limit + 1;
      const rows =
        termKey === "" && query.order !== "updated"
          ? await readRows<BrowsePackageRow>(db, BY_NAME, [feedId, limit, query.offset])
          : await rowsOf((await orderedIds(feedId, termKey, query.order)).slice(query.offset, query.offset + limit));
      const more = rows.length > query.limit;
      return { rows: more ? rows.slice(0, query.limit) : rows, more };
    },
    async findPackage(feedId, groupKey, nameKey) {
      await withCounts();
      return one<BrowsePackage>(PACKAGE_ONE, [feedId, groupKey, nameKey]);
    },
    async versionsPage(feedId, groupKey, nameKey, offset, limit) {
      await withCounts();
      return readRows<BrowseVersionRow>(db, VERSIONS_PAGE, [feedId, groupKey, nameKey, limit, offset]);
    },
    async findVersion(feedId, groupKey, nameKey, versionKey) {
      await withCounts();
      return versionKey === undefined
        ? one<BrowseVersionRow>(VERSION_LATEST, [feedId, groupKey, nameKey])
        : one<BrowseVersionRow>(VERSION_ONE, [feedId, groupKey, nameKey, versionKey]);
    },
    async fileListOf(feedId, groupKey, nameKey, versionKey) {
      return (await one<{ file_list: string }>(FILE_LIST, [feedId, groupKey, nameKey, versionKey]))?.file_list;
    },
    async existing(feedId, ids) {
      if (ids.length === 0) return new Set();
      const rows = await readRows<{ group_key: string; name_key: string }>(db, EXISTING, [
        feedId,
        ids.map((id) => id.groupKey),
        ids.map((id) => id.nameKey),
      ]);
      const stored = new Set(rows.map((row) => packageIdKey(row.group_key, row.name_key)));
      // In the order asked, as SQLite's answer is.
      const found = new Set<string>();
      for (const { groupKey, nameKey } of ids) {
        if (stored.has(packageIdKey(groupKey, nameKey))) found.add(packageIdKey(groupKey, nameKey));
      }
      return found;
    },
  };
}
