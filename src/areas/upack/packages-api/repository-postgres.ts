import { type PostgresDb, readRows } from "../../../storage/postgres/database.js";
import { flushPostgresDownloadCounts } from "../read/download-counts-postgres.js";
import type { ListFilter } from "./params.js";
import { COLUMNS, type PackagesApiRepository, type VersionInfoRow } from "./repository.js";

/** SQLite's IS_STABLE, with strpos for instr (both 1-based, 0 when absent). */
const IS_STABLE = `(strpos(s.version, '-') = 0 OR (strpos(s.version, '+') > 0 AND strpos(s.version, '-') > strpos(s.version, '+')))`;

// Walks the (package_id, sort_key) index from the top down to the first release.
const HIGHEST_STABLE = `(SELECT s.id FROM upack_versions s WHERE s.package_id = p.id AND ${IS_STABLE}
  ORDER BY s.sort_key DESC LIMIT 1)`;

const JOINS = {
  versions: "v.package_id = p.id",
  latest: "v.id = p.latest_version_id",
  stable: `v.id = ${HIGHEST_STABLE}`,
} as const;

/**
 * One statement per combination of filters, as on SQLite: only the filters given are in the WHERE
 * clause (the (feed_id, group_key, name_key) index stays usable), numbered in their order.
 */
function statement(kind: keyof typeof JOINS, feedId: number, filter: ListFilter): [string, unknown[]] {
  const where = ["p.feed_id = $1"];
  const params: unknown[] = [feedId];
  const add = (condition: string, value: string | undefined) => {
    if (value === undefined) return;
    params.push(value);
    where.push(`${condition} = $${params.length}`);
  };
  add("p.group_key", filter.groupKey);
  add("p.name_key", filter.nameKey);
  add("v.version_key", filter.versionKey);
  const order = kind === "versions" ? "p.group_key, p.name_key, v.sort_key DESC" : "p.group_key, p.name_key";
  return [
    `SELECT ${COLUMNS} FROM upack_packages p JOIN upack_versions v ON ${JOINS[kind]}
      WHERE ${where.join(" AND ")} ORDER BY ${order}`,
    params,
  ];
}

/** PackagesApiRepository on PostgreSQL (cluster mode): the same rows, in the same order, as on SQLite. */
export function createPostgresPackagesApiRepository(db: PostgresDb): PackagesApiRepository {
  const rows = (kind: keyof typeof JOINS, feedId: number, filter: ListFilter) =>
    readRows<VersionInfoRow>(db, ...statement(kind, feedId, filter));

  return {
    // Download counts are batched (read/download-counts-postgres.ts): this node's pending ones are
    // written before a read shows them.
    async listVersions(feedId, filter) {
      await flushPostgresDownloadCounts(db);
      return rows("versions", feedId, filter);
    },
    async listLatest(feedId, filter, stableOnly) {
      await flushPostgresDownloadCounts(db);
      return rows(stableOnly ? "stable" : "latest", feedId, { ...filter, versionKey: undefined });
    },
    async findVersion(feedId, groupKey, nameKey, versionKey) {
      await flushPostgresDownloadCounts(db);
      return (await rows("versions", feedId, { groupKey, nameKey, versionKey }))[0];
    },
  };
}
