import { type Clock, systemClock } from "../../domain/clock.js";
import { conflict } from "../../domain/errors.js";
import { withBusyRetries } from "../../storage/busy.js";
import type { Db } from "../../storage/database.js";
import { runDeletion } from "../../storage/space-reserve.js";
import { isUniqueViolation } from "../../storage/sqlite-errors.js";
import { type ChangeCause, packageEventType, packageEventWriter } from "../../lifecycle/events.js";

/**
 * The write side's SQL for `upack_packages` and `upack_versions` (migration 0004). Every method is
 * one transaction and returns a Promise, so that another database can implement the interface.
 * Whenever a version is inserted, replaced or deleted, the package's denormalised columns
 * (latest_version_id, versions_desc, downloads) are rewritten in the same transaction, from the
 * versions as they then are, so they can never drift from the rows.
 */
export interface UpackWriteRepository {
  /** The version row matching group, name and version case-insensitively, if any. */
  findVersion(feedId: number, id: VersionIdentity): Promise<StoredVersionRef | undefined>;
  /**
   * Inserts each version, or replaces the existing one with the same identity when `replace` is
   * true (keeping its id and download count), all in one transaction: all are saved or none (a
   * form of several packages). Throws conflict (VERSION_EXISTS) when one exists and `replace` is
   * false, also when a concurrent writer inserted it first. Outcomes in the order of `versions`.
   * Each version's event (lifecycle/events.ts) is written in the same transaction.
   */
  saveVersions(
    versions: readonly NewVersion[],
    options: { replace: boolean; cause: ChangeCause },
  ): Promise<SaveOutcome[]>;
  /**
   * Deletes the version (and the package once it has none left), with its event in the same
   * transaction; undefined when there was none. With `expectedBlob`, only while the version is still
   * that blob's (checked in the delete's transaction): undefined, deleting nothing, when it was
   * replaced by other bytes, so that a caller deletes exactly the version it looked at.
   */
  deleteVersion(
    feedId: number,
    id: VersionIdentity,
    cause: ChangeCause,
    options?: DeleteOptions,
  ): Promise<StoredVersionRef | undefined>;
}

export interface DeleteOptions {
  /** The blob the version must still have for the delete to go ahead. */
  readonly expectedBlob?: string;
}

/** Whether a version with this blob may be deleted under `options` (both databases). */
export const isExpectedBlob = (blobSha256: string, options: DeleteOptions | undefined) =>
  options?.expectedBlob === undefined || options.expectedBlob === blobSha256;

/** Group ("" for none), name and canonical version text, spelled as the caller wrote them. */
export interface VersionIdentity {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

export interface StoredVersionRef {
  readonly id: number;
  readonly version: string;
  readonly blobSha256: string;
}

export interface NewVersion extends VersionIdentity {
  readonly feedId: number;
  readonly sortKey: string;
  /** JSON text of the validated manifest. */
  readonly manifest: string;
  readonly blobSha256: string;
  readonly sha1: string;
  readonly md5?: string;
  readonly sha512?: string;
  readonly size: number;
  /** JSON text: [{ name, size, date }]. */
  readonly fileList: string;
  readonly isVirtual: boolean;
  readonly publishedAt: string;
  readonly publishedBy: string | undefined;
  /** Pulled from a connector and kept (migration 0004 `is_cached`); uploads and imports are not. */
  readonly isCached?: boolean;
}

export interface SaveOutcome {
  readonly versionId: number;
  /** The blob the replaced version pointed at; undefined for a new version. */
  readonly replacedBlob?: string;
  readonly replaced: boolean;
}

export function createUpackWriteRepository(db: Db, clock: Clock = systemClock): UpackWriteRepository {
  const packageByKey = db.prepare<[number, string, string], { id: number }>(
    "SELECT id FROM upack_packages WHERE feed_id = ? AND group_key = ? AND name_key = ?",
  );
  const insertPackage = db.prepare<[number, string, string, string, string], { id: number }>(
    `INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, ?, ?, ?, ?) RETURNING id`,
  );
  // "Spelling as in the most recently uploaded version" (migration 0004).
  const respellPackage = db.prepare<[string, string, number]>(
    "UPDATE upack_packages SET group_name = ?, name = ? WHERE id = ?",
  );
  const versionByKey = db.prepare<[number, string], { id: number; version: string; blob_sha256: string }>(
    "SELECT id, version, blob_sha256 FROM upack_versions WHERE package_id = ? AND version_key = ?",
  );
  const insertVersion = db.prepare<VersionColumns, { id: number }>(
    `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, md5, sha512,
                                 size, file_list, is_virtual, published_at, published_by, is_cached)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
  );
  const replaceVersion = db.prepare<[...VersionColumns, number]>(
    `UPDATE upack_versions SET package_id = ?, version = ?, version_key = ?, sort_key = ?, manifest = ?,
            blob_sha256 = ?, sha1 = ?, md5 = ?, sha512 = ?, size = ?, file_list = ?, is_virtual = ?,
            published_at = ?, published_by = ?, is_cached = ?
      WHERE id = ?`,
  );
  const deleteVersionRow = db.prepare<[number]>("DELETE FROM upack_versions WHERE id = ?");
  const countVersions = db.prepare<[number], { n: number }>(
    "SELECT count(*) AS n FROM upack_versions WHERE package_id = ?",
  );
  const deletePackage = db.prepare<[number]>("DELETE FROM upack_packages WHERE id = ?");
  // The aggregate's own ORDER BY (SQLite 3.44+) guarantees the JSON order; the index serves it.
  const refreshPackage = db.prepare<{ id: number }>(
    `UPDATE upack_packages SET
       latest_version_id = (SELECT id FROM upack_versions WHERE package_id = :id ORDER BY sort_key DESC LIMIT 1),
       versions_desc = (SELECT json_group_array(version ORDER BY sort_key DESC) FROM upack_versions WHERE package_id = :id),
       downloads = (SELECT coalesce(sum(downloads), 0) FROM upack_versions WHERE package_id = :id)
     WHERE id = :id`,
  );

  const appendEvent = packageEventWriter(db);
  const raise = (
    change: "saved" | "replaced" | "deleted",
    feedId: number,
    id: VersionIdentity,
    cause: ChangeCause,
    pulled?: boolean,
  ) => {
    const type = packageEventType(change, cause, pulled);
    if (type === undefined) return;
    const { group, name, version } = id;
    appendEvent({
      type,
      feedId,
      package: { group, name, version },
      actor: cause.actor,
      data: cause.data,
      occurredAt: clock.now(),
    });
  };

  const findPackageId = (feedId: number, id: VersionIdentity) =>
    packageByKey.get(feedId, id.group.toLowerCase(), id.name.toLowerCase())?.id;

  const findVersionRow = (feedId: number, id: VersionIdentity): StoredVersionRef | undefined => {
    const packageId = findPackageId(feedId, id);
    if (packageId === undefined) return undefined;
    const row = versionByKey.get(packageId, id.version.toLowerCase());
    return row && { id: row.id, version: row.version, blobSha256: row.blob_sha256 };
  };

  const save = db.transaction((version: NewVersion, replace: boolean, cause: ChangeCause): SaveOutcome => {
    let packageId = findPackageId(version.feedId, version);
    if (packageId === undefined) {
      const { feedId, group, name } = version;
      packageId = (insertPackage.get(feedId, group, name, group.toLowerCase(), name.toLowerCase()) as { id: number })
        .id;
    } else {
      respellPackage.run(version.group, version.name, packageId);
    }
    const columns = versionColumns(packageId, version);
    const existing = versionByKey.get(packageId, version.version.toLowerCase());
    let outcome: SaveOutcome;
    if (existing === undefined) {
      outcome = { versionId: (insertVersion.get(...columns) as { id: number }).id, replaced: false };
    } else if (replace) {
      replaceVersion.run(...columns, existing.id);
      outcome = { versionId: existing.id, replaced: true, replacedBlob: existing.blob_sha256 };
    } else {
      throw versionExists(version);
    }
    refreshPackage.run({ id: packageId });
    raise(outcome.replaced ? "replaced" : "saved", version.feedId, version, cause, version.isCached);
    return outcome;
  });

  // Nested calls of `save` run as savepoints of this one transaction.
  const saveAll = db.transaction(
    (versions: readonly NewVersion[], replace: boolean, cause: ChangeCause): SaveOutcome[] =>
      versions.map((version) => save(version, replace, cause)),
  );

  const remove = db.transaction(
    (
      feedId: number,
      id: VersionIdentity,
      cause: ChangeCause,
      options: DeleteOptions | undefined,
    ): StoredVersionRef | undefined => {
      const packageId = findPackageId(feedId, id);
      if (packageId === undefined) return undefined;
      const row = versionByKey.get(packageId, id.version.toLowerCase());
      if (row === undefined || !isExpectedBlob(row.blob_sha256, options)) return undefined;
      deleteVersionRow.run(row.id);
      if ((countVersions.get(packageId) as { n: number }).n === 0) deletePackage.run(packageId);
      else refreshPackage.run({ id: packageId });
      raise("deleted", feedId, { group: id.group, name: id.name, version: row.version }, cause);
      return { id: row.id, version: row.version, blobSha256: row.blob_sha256 };
    },
  );

  return withBusyRetries(db, {
    findVersion: async (feedId, id) => findVersionRow(feedId, id),

    async saveVersions(versions, { replace, cause }) {
      try {
        // IMMEDIATE: take the write lock before reading, so that another process (the CLI, a
        // second server on the same file) cannot insert the same version between read and write.
        return saveAll.immediate(versions, replace, cause);
      } catch (error) {
        // Still possible across processes sharing the database; the loser gets the same answer as
        // an in-process loser.
        if (isUniqueViolation(error)) {
          const taken = versions.find((version) => findVersionRow(version.feedId, version)) ?? versions[0];
          if (taken !== undefined) throw versionExists(taken, error);
        }
        throw error;
      }
    },

    deleteVersion: async (feedId, id, cause, options) =>
      runDeletion(db, () => remove.immediate(feedId, id, cause, options)),
  });
}

/** The columns of an inserted or replaced version, in the statements' order (both databases). */
export type VersionColumns = [
  number,
  string,
  string,
  string,
  string,
  string,
  string,
  string | null,
  string | null,
  number,
  string,
  number,
  string,
  string | null,
  number,
];

export function versionColumns(packageId: number, v: NewVersion): VersionColumns {
  return [
    packageId,
    v.version,
    v.version.toLowerCase(),
    v.sortKey,
    v.manifest,
    v.blobSha256,
    v.sha1,
    v.md5 ?? null,
    v.sha512 ?? null,
    v.size,
    v.fileList,
    v.isVirtual ? 1 : 0,
    v.publishedAt,
    v.publishedBy ?? null,
    v.isCached ? 1 : 0,
  ];
}

/** docs/PRODUCT.md: a re-upload without the overwrite/delete permission is a 409 that says so. */
export function versionExists(id: VersionIdentity, cause?: unknown): Error {
  const pkg = id.group === "" ? id.name : `${id.group}/${id.name}`;
  return conflict(
    "VERSION_EXISTS",
    `Version ${id.version} of package ${pkg} already exists; overwriting it needs the overwrite/delete ` +
      `permission (Feeds_OverwritePackage).`,
    { cause },
  );
}
