import type { BlobReferenceCheck } from "./blob-keeper.js";
import { type PostgresDb, readRows } from "./postgres/database.js";

/**
 * blobReferenceCheck on PostgreSQL (cluster mode): whether a row of the `blob_references` view
 * (the same view in both schemas) keeps a blob alive; a batch is one query over an array of
 * addresses (SQLite's json_each of a JSON list becomes unnest of a text[] parameter).
 *
 * Where the cluster path differs (docs/cluster-mode.md, Blobs): this check is right for garbage
 * collection on the leader, which deletes a blob only when it is unreferenced AND older than a
 * grace period longer than any upload. It must not drive BlobKeeper.discardIfUnused's eager
 * deletes in cluster mode: the keeper's holds are in one process and cannot see another node's
 * upload of the same bytes in flight, so there a failed or replaced upload leaves its blob to GC.
 */
export function postgresBlobReferenceCheck(db: PostgresDb): BlobReferenceCheck {
  return Object.assign(
    async (sha256: string) =>
      (await readRows(db, "SELECT 1 AS one FROM blob_references WHERE blob_sha256 = $1 LIMIT 1", [sha256])).length > 0,
    {
      unreferencedAmong: async (addresses: readonly string[]) =>
        addresses.length === 0
          ? []
          : (
              await readRows<{ value: string }>(
                db,
                `SELECT DISTINCT value FROM unnest($1::text[]) AS a(value)
                  WHERE NOT EXISTS (SELECT 1 FROM blob_references WHERE blob_sha256 = a.value)`,
                [addresses],
              )
            ).map((row) => row.value),
    },
  );
}
