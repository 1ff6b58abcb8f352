import type { Db } from "../../storage/database.js";

/**
 * Reads of `package_promotions` and `package_repackagings` (migrations/0019). Nothing here writes
 * them: the migration's triggers do, from the event the version's save raises, in its transaction.
 * Newest first (by id, the order of the commits).
 */
export interface PromotionRepository {
  listPromotions(filter: RecordFilter, limit: number): Promise<PromotionRow[]>;
  listRepackagings(filter: RecordFilter, limit: number): Promise<RepackagingRow[]>;
}

/**
 * Which records: every key given must match (group, name and version lowercased). `feedId` matches
 * a record on either side (promoted into or out of the feed; repackaged in or from it); for
 * repackagings, `versionKey` matches the new version or the original.
 */
export interface RecordFilter {
  readonly feedId?: number;
  readonly fromFeedId?: number;
  readonly toFeedId?: number;
  readonly groupKey?: string;
  readonly nameKey?: string;
  readonly versionKey?: string;
  /** Only records older than this one (paging newest first). */
  readonly beforeId?: number;
}

export interface PromotionRow {
  readonly id: number;
  readonly promoted_at: string;
  readonly from_feed_id: number | null;
  readonly from_feed_name: string;
  readonly to_feed_id: number | null;
  readonly to_feed_name: string;
  readonly package_group: string;
  readonly package_name: string;
  readonly version: string;
  readonly sha1: string | null;
  readonly sha256: string | null;
  readonly promoted_by: string;
  readonly comments: string | null;
}

export interface RepackagingRow {
  readonly id: number;
  readonly repackaged_at: string;
  readonly feed_id: number | null;
  readonly feed_name: string;
  readonly package_group: string;
  readonly package_name: string;
  readonly new_version: string;
  readonly from_feed_id: number | null;
  readonly from_feed_name: string;
  readonly from_version: string;
  readonly from_sha1: string | null;
  readonly from_sha256: string | null;
  readonly repackaged_by: string;
  readonly comments: string | null;
}

/**
 * A statement parameter: `param(name, value)` records the value and returns its placeholder as the
 * database writes it (`@name` on SQLite, `$n` on PostgreSQL); a name given twice is one parameter.
 */
export type Param = (name: string, value: string | number) => string;

/** Where `feedId` may match, and the condition on the version key, of either table (both databases). */
export interface RecordColumns {
  readonly from: string;
  readonly to: string;
  readonly version: (versionKey: string) => string;
}

export const PROMOTION_COLUMNS: RecordColumns = {
  from: "from_feed_id",
  to: "to_feed_id",
  version: (versionKey) => `version_key = ${versionKey}`,
};

// A version matches as the new one or as the original.
export const REPACKAGING_COLUMNS: RecordColumns = {
  from: "from_feed_id",
  to: "feed_id",
  version: (versionKey) => `(new_version_key = ${versionKey} OR lower(from_version) = ${versionKey})`,
};

/**
 * One WHERE clause for both tables (and both databases): `from` and `to` are the feed columns
 * `feedId` may match, `version` the condition on the version key; `__table` stands for the table.
 */
export function whereOf(filter: RecordFilter, columns: RecordColumns, param: Param): string {
  const clauses: string[] = [];
  if (filter.feedId !== undefined) {
    // Two indexed lookups rather than one OR over both columns.
    const feedId = param("feedId", filter.feedId);
    clauses.push(
      `id IN (SELECT id FROM __table WHERE ${columns.from} = ${feedId} UNION SELECT id FROM __table WHERE ${columns.to} = ${feedId})`,
    );
  }
  if (filter.fromFeedId !== undefined) clauses.push(`${columns.from} = ${param("fromFeedId", filter.fromFeedId)}`);
  if (filter.toFeedId !== undefined) clauses.push(`${columns.to} = ${param("toFeedId", filter.toFeedId)}`);
  if (filter.groupKey !== undefined) clauses.push(`group_key = ${param("groupKey", filter.groupKey)}`);
  if (filter.nameKey !== undefined) clauses.push(`name_key = ${param("nameKey", filter.nameKey)}`);
  if (filter.versionKey !== undefined) clauses.push(columns.version(param("versionKey", filter.versionKey)));
  if (filter.beforeId !== undefined) clauses.push(`id < ${param("beforeId", filter.beforeId)}`);
  return clauses.length === 0 ? "" : `WHERE ${clauses.join(" AND ")}`;
}

export function createPromotionRepository(db: Db): PromotionRepository {
  // The filters combine freely, so statements are prepared per shape and kept (a handful of shapes).
  const prepared = new Map<string, ReturnType<Db["prepare"]>>();
  const query = <T>(table: string, filter: RecordFilter, columns: RecordColumns, limit: number) => {
    const params: Record<string, string | number> = {};
    const where = whereOf(filter, columns, (name, value) => {
      params[name] = value;
      return `@${name}`;
    });
    const sql = `SELECT * FROM ${table} ${where.replaceAll("__table", table)} ORDER BY id DESC LIMIT @limit`;
    let statement = prepared.get(sql);
    if (statement === undefined) prepared.set(sql, (statement = db.prepare(sql)));
    return statement.all({ ...params, limit }) as T[];
  };
  return {
    listPromotions: async (filter, limit) =>
      query<PromotionRow>("package_promotions", filter, PROMOTION_COLUMNS, limit),
    listRepackagings: async (filter, limit) =>
      query<RepackagingRow>("package_repackagings", filter, REPACKAGING_COLUMNS, limit),
  };
}
