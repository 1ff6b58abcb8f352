import type { ItemResult, ItemStatus } from "../../drift/model.js";
import type { Db } from "../../storage/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";

/**
 * The SQL of checks (migration 0011 `config_collections`, `config_collected_items`): one row per
 * check of a server, the items it found, and the counts that let a status of every server read no
 * item rows. At most one collection per server is executing (a unique partial index): begin()
 * answers undefined while one is. Synchronous single statements or transactions; the checker
 * retries them while another process holds the write lock.
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
  begin(serverId: number, jobId: number | undefined, startedAt: string): number | undefined;
  executingOf(serverId: number): Collection | undefined;
  get(id: number): Collection | undefined;
  /** The server's most recent collection, of any status. */
  latestOf(serverId: number): Collection | undefined;
  /** The server's collections, newest first (the last KEEP_COLLECTIONS: prune keeps no more). */
  recentOf(serverId: number): Collection[];
  /** The server's most recent completed collection (what its items show). */
  latestCompletedOf(serverId: number): Collection | undefined;
  /** Stores what was found and ends the collection completed. `roleIds`: by lowercased role name. */
  complete(id: number, endedAt: string, results: readonly ItemResult[], roleIds: ReadonlyMap<string, number>): void;
  fail(id: number, endedAt: string, errorText: string): void;
  items(collectionId: number): CollectedItem[];
  /** Deletes all but the `keep` most recent collections of the server (and their items). */
  prune(serverId: number, keep: number): void;
  /** Ends every executing collection `error` with the text (the restart rule); how many. */
  endExecuting(endedAt: string, errorText: string): number;
}

interface CollectionRow {
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

interface ItemRow {
  type: string;
  key: string;
  role_id: number | null;
  role_name: string | null;
  status: ItemStatus;
  differences: string;
  error_text: string | null;
}

const toCollection = (row: CollectionRow | undefined): Collection | undefined => row && collectionOf(row);

const collectionOf = (row: CollectionRow): Collection => ({
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
    items: db.prepare<[number], ItemRow>(
      `SELECT type, key, role_id, role_name, status, differences, error_text FROM config_collected_items
       WHERE collection_id = ? ORDER BY position`,
    ),
    // Executing ones are never pruned: their check is still writing.
    prune: db.prepare<[number, number, number]>(
      `DELETE FROM config_collections WHERE server_id = ? AND status <> 'executing' AND id NOT IN
       (SELECT id FROM config_collections WHERE server_id = ? ORDER BY id DESC LIMIT ?)`,
    ),
    endExecuting: db.prepare<[string, string]>(
      "UPDATE config_collections SET status = 'error', ended_at = ?, error_text = ? WHERE status = 'executing'",
    ),
  };

  const complete = db.transaction(
    (id: number, endedAt: string, results: readonly ItemResult[], roleIds: ReadonlyMap<string, number>) => {
      let drifted = 0;
      let unknown = 0;
      results.forEach((result, position) => {
        if (result.status === "drifted") drifted += 1;
        if (result.status === "unknown") unknown += 1;
        q.addItem.run(
          id,
          position,
          result.type,
          result.key,
          result.role === null ? null : (roleIds.get(result.role.toLowerCase()) ?? null),
          result.role,
          result.status,
          JSON.stringify(result.differences),
          result.error ?? null,
        );
      });
      q.complete.run(endedAt, results.length, drifted, unknown, id);
    },
  );

  return {
    begin(serverId, jobId, startedAt) {
      try {
        return q.insert.get(serverId, jobId ?? null, startedAt)?.id;
      } catch (error) {
        if (isUniqueViolation(error)) return undefined;
        throw error;
      }
    },
    executingOf: (serverId) => toCollection(q.executing.get(serverId)),
    get: (id) => toCollection(q.get.get(id)),
    latestOf: (serverId) => toCollection(q.latest.get(serverId)),
    recentOf: (serverId) => q.recent.all(serverId).map(collectionOf),
    latestCompletedOf: (serverId) => toCollection(q.latestCompleted.get(serverId)),
    complete: (id, endedAt, results, roleIds) => complete(id, endedAt, results, roleIds),
    fail(id, endedAt, errorText) {
      q.fail.run(endedAt, errorText, id);
    },
    items: (collectionId) =>
      q.items.all(collectionId).map((row) => ({
        type: row.type,
        key: row.key,
        roleId: row.role_id ?? undefined,
        roleName: row.role_name ?? undefined,
        status: row.status,
        differences: JSON.parse(row.differences) as unknown[],
        errorText: row.error_text ?? undefined,
      })),
    prune(serverId, keep) {
      q.prune.run(serverId, serverId, keep);
    },
    endExecuting: (endedAt, errorText) => q.endExecuting.run(endedAt, errorText).changes,
  };
}
