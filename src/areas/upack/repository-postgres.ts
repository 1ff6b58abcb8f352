import type pg from "pg";
import { type Clock, systemClock } from "../../domain/clock.js";
import { type ChangeCause, packageEventType } from "../../lifecycle/events.js";
import { appendPackageEvent } from "../../lifecycle/events-postgres.js";
import { inTransaction, type PostgresDb, readRows } from "../../storage/postgres/database.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import {
  isExpectedBlob,
  type NewVersion,
  type SaveOutcome,
  type StoredVersionRef,
  type UpackWriteRepository,
  versionColumns,
  versionExists,
  type VersionIdentity,
} from "./repository.js";

const VERSION_BY_IDENTITY = `
  SELECT v.id, v.version, v.blob_sha256 FROM upack_packages p JOIN upack_versions v ON v.package_id = p.id
   WHERE p.feed_id = $1 AND p.group_key = $2 AND p.name_key = $3 AND v.version_key = $4`;

// The package row is the lock every writer of its versions takes first (saves, deletes, and the
// download counter: read/download-counts-postgres.ts), so that a package's versions and its
// denormalised columns change one transaction at a time, as with SQLite's single writer.
const RESPELL_AND_LOCK = `
  UPDATE upack_packages SET group_name = $4, name = $5 WHERE feed_id = $1 AND group_key = $2 AND name_key = $3
  RETURNING id`;
// A concurrent save of the same new package waits here for the other's row and then updates it.
const INSERT_PACKAGE = `
  INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (feed_id, group_key, name_key) DO UPDATE SET group_name = EXCLUDED.group_name, name = EXCLUDED.name
  RETURNING id`;
const VERSION_BY_KEY = "SELECT id, version, blob_sha256 FROM upack_versions WHERE package_id = $1 AND version_key = $2";
const INSERT_VERSION = `
  INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, md5, sha512,
                              size, file_list, is_virtual, published_at, published_by, is_cached)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`;
const REPLACE_VERSION = `
  UPDATE upack_versions SET package_id = $1, version = $2, version_key = $3, sort_key = $4, manifest = $5,
         blob_sha256 = $6, sha1 = $7, md5 = $8, sha512 = $9, size = $10, file_list = $11, is_virtual = $12,
         published_at = $13, published_by = $14, is_cached = $15
   WHERE id = $16`;
/**
 * SQLite's json_group_array(version ORDER BY sort_key DESC), byte for byte: json_agg would write
 * ", " between the elements, and versions_desc is served as stored.
 */
const REFRESH_PACKAGE = `
  UPDATE upack_packages SET
    latest_version_id = (SELECT id FROM upack_versions WHERE package_id = $1 ORDER BY sort_key DESC LIMIT 1),
    versions_desc = (SELECT coalesce('[' || string_agg(to_json(version)::text, ',' ORDER BY sort_key DESC) || ']', '[]')
                       FROM upack_versions WHERE package_id = $1),
    downloads = (SELECT coalesce(sum(downloads), 0) FROM upack_versions WHERE package_id = $1)
  WHERE id = $1`;

type VersionRefRow = { id: number; version: string; blob_sha256: string };

const refOf = (row: VersionRefRow): StoredVersionRef => ({
  id: row.id,
  version: row.version,
  blobSha256: row.blob_sha256,
});

const keyOf = (feedId: number, id: VersionIdentity) => [feedId, id.group.toLowerCase(), id.name.toLowerCase()] as const;

/**
 * UpackWriteRepository on PostgreSQL (cluster mode): the same rows, events and answers as on
 * SQLite. Each write locks the package rows it writes under first (a new package by inserting it),
 * so that concurrent saves and deletes of one package's versions take turns, as SQLite's IMMEDIATE
 * transactions do; a save of several packages locks them in one order (feed, group, name), so that
 * two such saves cannot deadlock.
 */
export function createPostgresUpackWriteRepository(db: PostgresDb, clock: Clock = systemClock): UpackWriteRepository {
  const raise = async (
    client: pg.PoolClient,
    change: "saved" | "replaced" | "deleted",
    feedId: number,
    id: VersionIdentity,
    cause: ChangeCause,
    pulled?: boolean,
  ) => {
    const type = packageEventType(change, cause, pulled);
    if (type === undefined) return;
    // The outbox row packageEventWriter writes on SQLite, in this transaction.
    await appendPackageEvent(client, {
      type,
      feedId,
      package: { group: id.group, name: id.name, version: id.version },
      actor: cause.actor,
      data: cause.data,
      occurredAt: clock.now(),
    });
  };

  const findVersionRow = async (feedId: number, id: VersionIdentity) => {
    const [row] = await readRows<VersionRefRow>(db, VERSION_BY_IDENTITY, [
      ...keyOf(feedId, id),
      id.version.toLowerCase(),
    ]);
    return row && refOf(row);
  };

  /**
   * Locks (creating the missing ones) the packages of the versions, each spelled as its last
   * version in the list spells it (SQLite respells at every version: the last one stays); their
   * ids by packageKey.
   */
  async function lockPackages(client: pg.PoolClient, versions: readonly NewVersion[]): Promise<Map<string, number>> {
    const spelling = new Map<string, NewVersion>();
    for (const version of versions) spelling.set(packageKey(version.feedId, version), version);
    const order = [...spelling.values()].sort((a, b) => compareKeys(keyOf(a.feedId, a), keyOf(b.feedId, b)));
    const ids = new Map<string, number>();
    for (const version of order) {
      const [feedId, groupKey, nameKey] = keyOf(version.feedId, version);
      const respelled = await client.query<{ id: number }>(RESPELL_AND_LOCK, [
        feedId,
        groupKey,
        nameKey,
        version.group,
        version.name,
      ]);
      const row =
        respelled.rows[0] ??
        (await client.query<{ id: number }>(INSERT_PACKAGE, [feedId, version.group, version.name, groupKey, nameKey]))
          .rows[0];
      if (row === undefined) throw new Error("upack_packages upsert returned no id");
      ids.set(packageKey(version.feedId, version), row.id);
    }
    return ids;
  }

  async function save(
    client: pg.PoolClient,
    packageId: number,
    version: NewVersion,
    replace: boolean,
    cause: ChangeCause,
  ): Promise<SaveOutcome> {
    const columns = versionColumns(packageId, version);
    // Stable until COMMIT: every writer of this package's versions waits for its row, locked above.
    const [existing] = (await client.query<VersionRefRow>(VERSION_BY_KEY, [packageId, version.version.toLowerCase()]))
      .rows;
    let outcome: SaveOutcome;
    if (existing === undefined) {
      const inserted = (await client.query<{ id: number }>(INSERT_VERSION, columns)).rows[0];
      if (inserted === undefined) throw new Error("upack_versions insert returned no id");
      outcome = { versionId: inserted.id, replaced: false };
    } else if (replace) {
      await client.query(REPLACE_VERSION, [...columns, existing.id]);
      outcome = { versionId: existing.id, replaced: true, replacedBlob: existing.blob_sha256 };
    } else {
      throw versionExists(version);
    }
    await client.query(REFRESH_PACKAGE, [packageId]);
    await raise(client, outcome.replaced ? "replaced" : "saved", version.feedId, version, cause, version.isCached);
    return outcome;
  }

  return {
    findVersion: async (feedId, id) => findVersionRow(feedId, id),

    async saveVersions(versions, { replace, cause }) {
      try {
        return await inTransaction(db, async (client) => {
          const packageIds = await lockPackages(client, versions);
          const outcomes: SaveOutcome[] = [];
          for (const version of versions) {
            const packageId = packageIds.get(packageKey(version.feedId, version)) as number;
            outcomes.push(await save(client, packageId, version, replace, cause));
          }
          return outcomes;
        });
      } catch (error) {
        // A writer that does not take the package's lock first (none in Wharf): the same answer as
        // a loser that waited for the lock.
        if (isUniqueViolation(error)) {
          for (const version of versions) {
            if (await findVersionRow(version.feedId, version)) throw versionExists(version, error);
          }
          if (versions[0] !== undefined) throw versionExists(versions[0], error);
        }
        throw error;
      }
    },

    deleteVersion: async (feedId, id, cause, options) =>
      inTransaction(db, async (client) => {
        // FOR UPDATE, not FOR NO KEY UPDATE: the package row may be deleted below.
        const [pkg] = (
          await client.query<{ id: number }>(
            "SELECT id FROM upack_packages WHERE feed_id = $1 AND group_key = $2 AND name_key = $3 FOR UPDATE",
            [...keyOf(feedId, id)],
          )
        ).rows;
        if (pkg === undefined) return undefined;
        // Stable until COMMIT, its blob too: every writer of this package's versions waits for the lock above.
        const [row] = (await client.query<VersionRefRow>(VERSION_BY_KEY, [pkg.id, id.version.toLowerCase()])).rows;
        if (row === undefined || !isExpectedBlob(row.blob_sha256, options)) return undefined;
        await client.query("DELETE FROM upack_versions WHERE id = $1", [row.id]);
        const [left] = (
          await client.query<{ n: number }>("SELECT count(*) AS n FROM upack_versions WHERE package_id = $1", [pkg.id])
        ).rows;
        if ((left?.n ?? 0) === 0) await client.query("DELETE FROM upack_packages WHERE id = $1", [pkg.id]);
        else await client.query(REFRESH_PACKAGE, [pkg.id]);
        await raise(client, "deleted", feedId, { group: id.group, name: id.name, version: row.version }, cause);
        return refOf(row);
      }),
  };
}

function packageKey(feedId: number, id: VersionIdentity): string {
  return keyOf(feedId, id).join("\0");
}

function compareKeys(a: readonly [number, string, string], b: readonly [number, string, string]): number {
  if (a[0] !== b[0]) return a[0] - b[0];
  if (a[1] !== b[1]) return a[1] < b[1] ? -1 : 1;
  if (a[2] !== b[2]) return a[2] < b[2] ? -1 : 1;
  return 0;
}
