import type { ItemResult, ItemStatus } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";

/**
 * The SQL of checks (migration 0011 `config_collections`, `config_collected_items`): one row per
 * check of a server, the items it found, and the counts that let a status of every server read no
 * item rows. At most one collection per server is executing (a unique partial index): begin()
 * answers undefined while one is. Asynchronous (PostgreSQL in cluster mode:
 * collections-repository-postgres.ts); on SQLite each method is still one synchronous statement or
 * transaction, which the checker retries while another process holds the write lock.
 */
export type CollectionStatus = "executing" | "completed" | "error";

export interface Collection {
  readonly id: number;
  readonly serverId: number;
  readonly jobId: number | undefined;
  readonly status: CollectionStatus;
  readonly startedAt: string;
  readonly endedAt: string | undefined;
  readonly errorText: string | undefined;
  readonly items: number;
  readonly drifted: number;
  readonly unknown: number;
}

export interface CollectedItem {
  readonly type: string;
  readonly key: string;
  readonly roleId: number | undefined;
  readonly roleName: string | undefined;
  readonly status: ItemStatus;
  readonly differences: readonly unknown[];
  readonly errorText: string | undefined;
}

export interface CollectionsRepository {
  /** A new executing collection; undefined when one is already executing for the server. */
  begin(serverId: number, jobId: number | undefined, startedAt: string): Promise<number | undefined>;
  executingOf(serverId: number): Promise<Collection | undefined>;
  get(id: number): Promise<Collection | undefined>;
  /** The server's most recent collection, of any status. */
  latestOf(serverId: number): Promise<Collection | undefined>;
  /** The server's collections, newest first (the last KEEP_COLLECTIONS: prune keeps no more). */
  recentOf(serverId: number): Promise<Collection[]>;
  /** The server's most recent completed collection (what its items show). */
  latestCompletedOf(serverId: number): Promise<Collection | undefined>;
  /**
   * Stores what was found and ends the collection completed. `roleIds`: by lowercased role name.
   * complete() and fail() change only an executing collection: one the restart rule ended meanwhile
   * keeps its ending, and no items.
   */
  complete(
    id: number,
    endedAt: string,
    results: readonly ItemResult[],
    roleIds: ReadonlyMap<string, number>,
  ): Promise<void>;
  fail(id: number, endedAt: string, errorText: string): Promise<void>;
  items(collectionId: number): Promise<CollectedItem[]>;
  /** Deletes all but the `keep` most recent collections of the server (and their items). */
  prune(serverId: number, keep: number): Promise<void>;
  /**
   * The restart rule: ends `error` with the text every executing collection whose process is gone;
   * how many. SQLite (one process, the rule run at its start): every executing one. PostgreSQL
   * (cluster mode): those of nodes without a recent heartbeat (collections-repository-postgres.ts).
   */
  endOrphaned(endedAt: string, errorText: string): Promise<number>;
}

export interface CollectionRow {
  id: number;
  server_id: number;
  job_id: number | null;
  status: CollectionStatus;
  started_at: string;
  ended_at: string | null;
  error_text: string | null;
  items: number;
  drifted: number;
  unknown: number;
}

export interface CollectedItemRow {
  type: string;
  key: string;
  role_id: number | null;
  role_name: string | null;
  status: ItemStatus;
  differences: string;
  error_text: string | null;
}

const toCollection = (row: CollectionRow | undefined): Collection | undefined => row && collectionOf(row);

export const collectionOf = (row: CollectionRow): Collection => ({
  id: row.id,
  serverId: row.server_id,
  jobId: row.job_id ?? undefined,
  status: row.status,
  startedAt: row.started_at,
  endedAt: row.ended_at ?? undefined,
  errorText: row.error_text ?? undefined,
  items: row.items,
  drifted: row.drifted,
  unknown: row.unknown,
});

/** A stored item as the status shows it (both databases). */
export const collectedItemOf = (row: CollectedItemRow): CollectedItem => ({
  type: row.type,
  key: row.key,
  roleId: row.role_id ?? undefined,
  roleName: row.role_name ?? undefined,
  status: row.status,
  differences: JSON.parse(row.differences) as unknown[],
  errorText: row.error_text ?? undefined,
});

/** The counts a completed collection stores of its results (both databases). */
export function countsOf(results: readonly ItemResult[]): { drifted: number; unknown: number } {
  let drifted = 0;
  let unknown = 0;
  for (const result of results) {
    if (result.status === "drifted") drifted += 1;
    if (result.status === "unknown") unknown += 1;
  }
  return { drifted, unknown };
}

/** The role id an item result is stored with: its role's, by lowercased name; null for the server's own (both databases). */
export const resultRoleId = (result: ItemResult, roleIds: ReadonlyMap<string, number>): number | null =>
  result.role === null ? null : (roleIds.get(result.role.toLowerCase()) ?? null);

export function createCollectionsRepository(db: Db): CollectionsRepository {
  const q = {
    insert: db.prepare<[number, number | null, string], { id: number }>(
      "INSERT INTO config_collections (server_id, job_id, status, started_at) VALUES (?, ?, 'executing', ?) RETURNING id",
    ),
    executing: db.prepare<[number], CollectionRow>(
      "SELECT * FROM config_collections WHERE server_id = ? AND status = 'executing'",
    ),
    get: db.prepare<[number], CollectionRow>("SELECT * FROM config_collections WHERE id = ?"),
    latest: db.prepare<[number], CollectionRow>(
      "SELECT * FROM config_collections WHERE server_id = ? ORDER BY id DESC LIMIT 1",
    ),
    recent: db.prepare<[number], CollectionRow>(
      "SELECT * FROM config_collections WHERE server_id = ? ORDER BY id DESC",
    ),
    latestCompleted: db.prepare<[number], CollectionRow>(
      "SELECT * FROM config_collections WHERE server_id = ? AND status = 'completed' ORDER BY id DESC LIMIT 1",
    ),
    addItem: db.prepare<
      [number, number, string, string, number | null, string | null, ItemStatus, string, string | null]
    >(
      `INSERT INTO config_collected_items (collection_id, position, type, key, role_id, role_name, status, differences, error_text)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    complete: db.prepare<[string, number, number, number, number]>(
      `UPDATE config_collections SET status = 'completed', ended_at = ?, items = ?, drifted = ?, unknown = ?
       WHERE id = ? AND status = 'executing'`,
    ),
    fail: db.prepare<[string, string, number]>(
      "UPDATE config_collections SET status = 'error', ended_at = ?, error_text = ? WHERE id = ? AND status = 'executing'",
    ),
    items: db.prepare<[number], CollectedItemRow>(
      `SELECT type, key, role_id, role_name, status, differences, error_text FROM config_collected_items
       WHERE collection_id = ? ORDER BY position`,
    ),
    // Executing ones are never pruned: their check is still writing.
    prune: db.prepare<[number, number, number]>(
      `DELETE FROM config_collections WHERE server_id = ? AND status <> 'executing' AND id NOT IN
       (SELECT id FROM config_collections WHERE server_id = ? ORDER BY id DESC LIMIT ?)`,
    ),
    endOrphaned: db.prepare<[string, string]>(
      "UPDATE config_collections SET status = 'error', ended_at = ?, error_text = ? WHERE status = 'executing'",
    ),
  };

  const complete = db.transaction(
    (id: number, endedAt: string, results: readonly ItemResult[], roleIds: ReadonlyMap<string, number>) => {
      const { drifted, unknown } = countsOf(results);
      if (q.complete.run(endedAt, results.length, drifted, unknown, id).changes === 0) return;
      results.forEach((result, position) => {
        q.addItem.run(
          id,
          position,
          result.type,
          result.key,
          resultRoleId(result, roleIds),
          result.role,
          result.status,
          JSON.stringify(result.differences),
          result.error ?? null,
        );
      });
    },
  );

  return {
    async begin(serverId, jobId, startedAt) {
      try {
        return q.insert.get(serverId, jobId ?? null, startedAt)?.id;
      } catch (error) {
        if (isUniqueViolation(error)) return undefined;
        throw error;
      }
    },
    executingOf: async (serverId) => toCollection(q.executing.get(serverId)),
    get: async (id) => toCollection(q.get.get(id)),
    latestOf: async (serverId) => toCollection(q.latest.get(serverId)),
    recentOf: async (serverId) => q.recent.all(serverId).map(collectionOf),
    latestCompletedOf: async (serverId) => toCollection(q.latestCompleted.get(serverId)),
    complete: async (id, endedAt, results, roleIds) => complete(id, endedAt, results, roleIds),
    async fail(id, endedAt, errorText) {
      q.fail.run(endedAt, errorText, id);
    },
    items: async (collectionId) => q.items.all(collectionId).map(collectedItemOf),
    async prune(serverId, keep) {
      q.prune.run(serverId, serverId, keep);
    },
    endOrphaned: async (endedAt, errorText) => q.endOrphaned.run(endedAt, errorText).changes,
  };
}
