import type { Clock } from "../../../domain/clock.js";
import { systemClock } from "../../../domain/clock.js";
import type { BlobInfo } from "../../../storage/blob-store.js";
import type { Db } from "../../../storage/database.js";

/** A virtual version's assembled package, as cached in `upack_assembled` (migration 0005). */
export interface AssembledPackage {
  readonly versionId: number;
  readonly blobSha256: string;
  readonly sha1: string;
  readonly size: number;
  readonly assembledAt: string;
}

/**
 * The cache of assembled virtual packages (docs/compat.md 1.6: ProGet assembles once and serves the
 * `.constructed` file afterwards). Assembly is deterministic for unchanged sources, so two
 * downloads racing to fill the cache store the same blob and the later `save` changes nothing
 * that matters.
 */
export interface AssembledCache {
  find(versionId: number): Promise<AssembledPackage | undefined>;
  /**
   * Throws a foreign key violation (sqlite-errors.ts) when the version is gone. On SQLite the row
   * is written before the call returns (the Promise only reports it), as every method here.
   */
  save(versionId: number, info: BlobInfo): Promise<AssembledPackage>;
  /** Forgets one version's assembly (its manifest was replaced). */
  forget(versionId: number): Promise<void>;
  /**
   * Forgets every assembly of a feed: a package version was overwritten or deleted, and any
   * virtual package of the same feed may have been built from it (sources are looked up in the
   * same feed, docs/compat.md 1.6). Returns how many were forgotten.
   */
  forgetFeed(feedId: number): Promise<number>;
}

/** A row of upack_assembled (both databases). */
export interface AssembledRow {
  version_id: number;
  blob_sha256: string;
  sha1: string;
  size: number;
  assembled_at: string;
}

/** A row as the cache answers it (both databases). */
export const toPackage = (row: AssembledRow): AssembledPackage => ({
  versionId: row.version_id,
  blobSha256: row.blob_sha256,
  sha1: row.sha1,
  size: row.size,
  assembledAt: row.assembled_at,
});

export function createAssembledCache(db: Db, clock: Clock = systemClock): AssembledCache {
  const select = db.prepare<[number], AssembledRow>(
    "SELECT version_id, blob_sha256, sha1, size, assembled_at FROM upack_assembled WHERE version_id = ?",
  );
  const upsert = db.prepare(
    `INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (version_id) DO UPDATE SET blob_sha256 = excluded.blob_sha256, sha1 = excluded.sha1,
       size = excluded.size, assembled_at = excluded.assembled_at`,
  );
  const remove = db.prepare("DELETE FROM upack_assembled WHERE version_id = ?");
  // Driven by upack_assembled (a few assembled packages), not by the feed's versions: a feed of
  // 100,000 versions made every delete in it scan them all (bench/retention.ts).
  const removeFeed = db.prepare(
    `DELETE FROM upack_assembled WHERE EXISTS (
       SELECT 1 FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
        WHERE v.id = upack_assembled.version_id AND p.feed_id = ?)`,
  );

  return {
    async find(versionId) {
      const row = select.get(versionId);
      return row === undefined ? undefined : toPackage(row);
    },
    async save(versionId, info) {
      const assembledAt = clock.now().toISOString();
      upsert.run(versionId, info.sha256, info.sha1, info.size, assembledAt);
      return { versionId, blobSha256: info.sha256, sha1: info.sha1, size: info.size, assembledAt };
    },
    async forget(versionId) {
      remove.run(versionId);
    },
    async forgetFeed(feedId) {
      return removeFeed.run(feedId).changes;
    },
  };
}
