import { type PostgresDb, readRows } from "../../storage/postgres/database.js";
import {
  PROMOTION_COLUMNS,
  type PromotionRepository,
  type PromotionRow,
  type RecordColumns,
  type RecordFilter,
  REPACKAGING_COLUMNS,
  type RepackagingRow,
  whereOf,
} from "./repository.js";

/**
 * PromotionRepository on PostgreSQL (cluster mode): the same rows and answers as on SQLite. The
 * keys compare as SQLite's do: the key columns are "C" text, and `lower(from_version)` folds ASCII
 * only there, as SQLite's lower() (migrations/postgres/0001-baseline.sql).
 */
export function createPostgresPromotionRepository(db: PostgresDb): PromotionRepository {
  const query = async <T extends object>(
    table: string,
    filter: RecordFilter,
    columns: RecordColumns,
    limit: number,
  ) => {
    const params: (string | number)[] = [];
    const numbers = new Map<string, string>();
    const where = whereOf(filter, columns, (name, value) => {
      let placeholder = numbers.get(name);
      if (placeholder === undefined) {
        params.push(value);
        numbers.set(name, (placeholder = `$${params.length}`));
      }
      return placeholder;
    });
    params.push(limit);
    const sql = `SELECT * FROM ${table} ${where.replaceAll("__table", table)} ORDER BY id DESC LIMIT $${params.length}`;
    return readRows<T & Record<string, unknown>>(db, sql, params);
  };
  return {
    listPromotions: async (filter, limit) =>
      query<PromotionRow>("package_promotions", filter, PROMOTION_COLUMNS, limit),
    listRepackagings: async (filter, limit) =>
      query<RepackagingRow>("package_repackagings", filter, REPACKAGING_COLUMNS, limit),
  };
}
