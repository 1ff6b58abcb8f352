import { unlessBusy } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";

/**
 * SQL for `connector_metadata` (migration 0007): connectors' metadata answers (packages,
 * versions, search), kept to be served again while fresh and, after that, while the upstream is
 * down. Every method is one transaction and returns a Promise, so that another database can
 * implement the same interface. Freshness is the caller's business: the rows only say when.
 */
export interface MetadataCacheRepository {
  find(connectorId: number, requestKey: string): Promise<CachedAnswer | undefined>;
  /**
   * Stores (or replaces) the answer to `requestKey`, keeping at most `keep` answers for the
   * connector: 404s go first, then the least recently fetched 200s. Skipped while another process
   * holds the database's write lock: the request that fetched the answer must not wait for a cache.
   */
  store(connectorId: number, requestKey: string, answer: CachedAnswer, keep: number): Promise<void>;
  /** Drops the answer to `requestKey`, if one is kept; skipped, as `store`, while the database is busy. */
  forget(connectorId: number, requestKey: string): Promise<void>;
}

export interface CachedAnswer {
  /** 200, or 404 for a negative entry. */
  readonly status: number;
  /** The upstream's JSON text (empty for a 404). */
  readonly body: string;
  /** yyyy-MM-ddTHH:mm:ss.fffZ, from the app's clock. */
  readonly fetchedAt: string;
}

export interface AnswerRow {
  status: number;
  body: string;
  fetched_at: string;
}

/** A row as the cache's users see it (both databases). */
export const toAnswer = (row: AnswerRow): CachedAnswer => ({
  status: row.status,
  body: row.body,
  fetchedAt: row.fetched_at,
});

export function createMetadataCacheRepository(db: Db): MetadataCacheRepository {
  const one = db.prepare<[number, string], AnswerRow>(
    "SELECT status, body, fetched_at FROM connector_metadata WHERE connector_id = ? AND request_key = ?",
  );
  const upsert = db.prepare<[number, string, number, string, string]>(
    `INSERT INTO connector_metadata (connector_id, request_key, status, body, fetched_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (connector_id, request_key)
     DO UPDATE SET status = excluded.status, body = excluded.body, fetched_at = excluded.fetched_at`,
  );
  const count = db.prepare<[number], number>("SELECT count(*) FROM connector_metadata WHERE connector_id = ?").pluck();
  // 200s are kept before 404s: only a 200 is served while the upstream is down, so a burst of
  // requests for unknown names must not push them out. Ties on fetched_at (a coarse or frozen
  // clock) are broken by key, so the bound always holds.
  const trim = db.prepare<{ id: number; key: string; others: number }>(
    `DELETE FROM connector_metadata WHERE connector_id = @id AND request_key <> @key AND request_key NOT IN (
       SELECT request_key FROM connector_metadata WHERE connector_id = @id AND request_key <> @key
       ORDER BY status = 200 DESC, fetched_at DESC, request_key LIMIT @others)`,
  );
  const remove = db.prepare<[number, string]>(
    "DELETE FROM connector_metadata WHERE connector_id = ? AND request_key = ?",
  );

  const storeTx = db.transaction((id: number, key: string, answer: CachedAnswer, keep: number) => {
    // Counting first: the trim's sort is only paid when the bound is actually passed.
    if ((count.get(id) ?? 0) >= keep) trim.run({ id, key, others: Math.max(0, keep - 1) });
    upsert.run(id, key, answer.status, answer.body, answer.fetchedAt);
  });

  return {
    async find(connectorId, requestKey) {
      const row = one.get(connectorId, requestKey);
      return row && toAnswer(row);
    },
    async store(connectorId, requestKey, answer, keep) {
      unlessBusy(() => storeTx.immediate(connectorId, requestKey, answer, keep));
    },
    async forget(connectorId, requestKey) {
      unlessBusy(() => remove.run(connectorId, requestKey));
    },
  };
}
