import { type Clock, systemClock } from "../../../domain/clock.js";
import { type PostgresDb, readRows, writeRows } from "../../../storage/postgres/database.js";
import { type AssembledCache, type AssembledRow, toPackage } from "./cache.js";

const SELECT = "SELECT version_id, blob_sha256, sha1, size, assembled_at FROM upack_assembled WHERE version_id = $1";
// Two downloads saving one version at once both succeed, the later one's row staying, as on SQLite.
const UPSERT = `
  INSERT INTO upack_assembled (version_id, blob_sha256, sha1, size, assembled_at) VALUES ($1, $2, $3, $4, $5)
  ON CONFLICT (version_id) DO UPDATE SET blob_sha256 = EXCLUDED.blob_sha256, sha1 = EXCLUDED.sha1,
    size = EXCLUDED.size, assembled_at = EXCLUDED.assembled_at`;
// Driven by upack_assembled (a few assembled packages), as on SQLite.
const REMOVE_FEED = `
  DELETE FROM upack_assembled a USING upack_versions v JOIN upack_packages p ON p.id = v.package_id
   WHERE v.id = a.version_id AND p.feed_id = $1`;

/**
 * AssembledCache on PostgreSQL (cluster mode): the same rows and answers as on SQLite. A save for a
 * version deleted meanwhile fails with the foreign key violation SQLite gives (isForeignKeyViolation
 * recognises both), which virtual/download.ts serves uncached. Each method is one statement.
 */
export function createPostgresAssembledCache(db: PostgresDb, clock: Clock = systemClock): AssembledCache {
  return {
    async find(versionId) {
      const [row] = await readRows<AssembledRow>(db, SELECT, [versionId]);
      return row === undefined ? undefined : toPackage(row);
    },
    async save(versionId, info) {
      const assembledAt = clock.now().toISOString();
      await writeRows(db, UPSERT, [versionId, info.sha256, info.sha1, info.size, assembledAt]);
      return { versionId, blobSha256: info.sha256, sha1: info.sha1, size: info.size, assembledAt };
    },
    async forget(versionId) {
      await writeRows(db, "DELETE FROM upack_assembled WHERE version_id = $1", [versionId]);
    },
    async forgetFeed(feedId) {
      return (await writeRows(db, REMOVE_FEED, [feedId])).rowCount ?? 0;
    },
  };
}
