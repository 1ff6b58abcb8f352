import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import { type AnswerRow, type MetadataCacheRepository, toAnswer } from "./metadata-cache.js";

const ONE = "SELECT status, body, fetched_at FROM connector_metadata WHERE connector_id = $1 AND request_key = $2";
/**
 * How long a cache write waits for a lock before it is skipped: the PostgreSQL form of SQLite's
 * unlessBusy (the request that fetched the answer must not wait for a cache). Long enough for
 * another node's store for the same connector (a few milliseconds), short beside an upstream
 * request.
 */
const LOCK_WAIT = "SET LOCAL lock_timeout = '100ms'";
/**
 * Stores for one connector run one after the other, as on SQLite, so that the count and the trim
 * keep the bound (two nodes trimming side by side could each leave room for their own answer only).
 * NO KEY UPDATE: feeds binding the connector (KEY SHARE) go on; the connector's update or deletion,
 * which locks this row before its answers, waits for the store or the store for it, never a deadlock.
 */
const LOCK_CONNECTOR = "SELECT 1 FROM connectors WHERE id = $1 FOR NO KEY UPDATE";
const COUNT = "SELECT count(*) AS count FROM connector_metadata WHERE connector_id = $1";
// As on SQLite: 200s before 404s, then the most recently fetched, ties broken by key (COLLATE "C").
const TRIM = `DELETE FROM connector_metadata WHERE connector_id = $1 AND request_key <> $2 AND request_key NOT IN (
       SELECT request_key FROM connector_metadata WHERE connector_id = $1 AND request_key <> $2
       ORDER BY status = 200 DESC, fetched_at DESC, request_key LIMIT $3)`;
const UPSERT = `INSERT INTO connector_metadata (connector_id, request_key, status, body, fetched_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (connector_id, request_key)
     DO UPDATE SET status = excluded.status, body = excluded.body, fetched_at = excluded.fetched_at`;
const REMOVE = "DELETE FROM connector_metadata WHERE connector_id = $1 AND request_key = $2";

/** lock_not_available (lock_timeout passed) and deadlock_detected: another writer holds what the write needs. */
const BUSY_STATES: readonly unknown[] = ["55P03", "40P01"];
const isBusy = (error: unknown) => error instanceof Error && BUSY_STATES.includes((error as { code?: unknown }).code);

/** Runs a cache write, or skips it (rolled back) when another writer holds a lock it needs. */
async function unlessBusy(write: () => Promise<void>): Promise<void> {
  try {
    await write();
  } catch (error) {
    if (!isBusy(error)) throw error;
  }
}

/** MetadataCacheRepository on PostgreSQL (cluster mode): the same answers, bound and skips as on SQLite. */
export function createPostgresMetadataCacheRepository(db: PostgresDb): MetadataCacheRepository {
  return {
    async find(connectorId, requestKey) {
      const [row] = await readRows<AnswerRow>(db, ONE, [connectorId, requestKey]);
      return row && toAnswer(row);
    },
    async store(connectorId, requestKey, answer, keep) {
      await unlessBusy(() =>
        inTransaction(db, async (client) => {
          await client.query(LOCK_WAIT);
          await client.query(LOCK_CONNECTOR, [connectorId]);
          // Counting first: the trim's sort is only paid when the bound is actually passed.
          const [counted] = (await client.query<{ count: number }>(COUNT, [connectorId])).rows;
          if ((counted?.count ?? 0) >= keep) await client.query(TRIM, [connectorId, requestKey, Math.max(0, keep - 1)]);
          await client.query(UPSERT, [connectorId, requestKey, answer.status, answer.body, answer.fetchedAt]);
        }),
      );
    },
    async forget(connectorId, requestKey) {
      await unlessBusy(() =>
        inTransaction(db, async (client) => {
          await client.query(LOCK_WAIT);
          await client.query(REMOVE, [connectorId, requestKey]);
        }),
      );
    },
  };
}
