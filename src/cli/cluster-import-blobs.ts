import type pg from "pg";
import { eachConcurrently } from "../domain/concurrently.js";
import type { BlobStore } from "../storage/blob-store.js";

/**
 * The blobs of the data directory's disk store, copied into the cluster's object store. Content
 * addressing makes the copy resumable for free: a blob already there with the right size is the
 * same bytes and is skipped; every other one is streamed and its SHA-256 checked by the store as
 * it goes in (PutOptions.expected), so a blob that changed on disk is refused, not published.
 */

/** Blobs in flight at once: enough to hide an object store's round trips, few enough for 2 cores. */
const PARALLEL_COPIES = 4;

export interface BlobTotals {
  readonly blobs: number;
  readonly bytes: number;
}

export interface BlobCopyProgress {
  readonly total: BlobTotals;
  readonly done: BlobTotals;
  /** Of `done`, those the object store already had. */
  readonly skipped: number;
}

export async function copyBlobs(
  disk: BlobStore,
  target: BlobStore,
  onProgress: (progress: BlobCopyProgress) => void,
): Promise<BlobCopyProgress> {
  const blobs: { sha256: string; size: number }[] = [];
  for await (const sha256 of disk.list()) {
    const found = await disk.stat(sha256);
    if (found !== undefined) blobs.push({ sha256, size: found.size });
  }
  const total = { blobs: blobs.length, bytes: blobs.reduce((sum, blob) => sum + blob.size, 0) };
  let done = { blobs: 0, bytes: 0 };
  let skipped = 0;
  const report = () => ({ total, done, skipped });
  onProgress(report());
  await eachConcurrently(blobs, PARALLEL_COPIES, async ({ sha256, size }) => {
    if ((await target.stat(sha256))?.size === size) skipped++;
    else await copyOne(disk, target, sha256, size);
    done = { blobs: done.blobs + 1, bytes: done.bytes + size };
    onProgress(report());
  });
  return report();
}

async function copyOne(disk: BlobStore, target: BlobStore, sha256: string, size: number): Promise<void> {
  const source = await disk.open(sha256);
  if (source === undefined) throw new Error(`blob ${sha256} disappeared from the data directory during the import`);
  const stored = await target.put(source, { expected: { sha256 }, declaredBytes: size });
  if (stored.size !== size) throw new Error(`blob ${sha256}: ${stored.size} bytes stored, ${size} expected`);
}

export interface BlobCheck {
  /** Distinct blobs the imported rows reference in feeds using the server default store. */
  readonly referenced: number;
  /** Of those, what is absent from the object store, or there with another size than on disk. */
  readonly problems: readonly string[];
  /** Referenced blobs of feeds with a store of their own: they stay there, not checked here. */
  readonly elsewhere: number;
}

/**
 * Every blob the imported rows reference (`blob_references`), present in the object store with
 * the size it has on disk. Feeds whose storage setting names an object store of their own keep
 * their blobs there (the nodes read them from it): those are counted apart.
 */
export async function verifyBlobs(client: pg.ClientBase, disk: BlobStore, target: BlobStore): Promise<BlobCheck> {
  const referenced = await client.query<{ blob_sha256: string }>("SELECT DISTINCT blob_sha256 FROM blob_references");
  const elsewhere = new Set(
    (await client.query<{ blob_sha256: string }>(OWN_STORE_BLOBS)).rows.map((row) => row.blob_sha256),
  );
  const problems: string[] = [];
  let checked = 0;
  for (const { blob_sha256: sha256 } of referenced.rows) {
    if (elsewhere.has(sha256)) continue;
    checked++;
    const [onDisk, stored] = await Promise.all([disk.stat(sha256), target.stat(sha256)]);
    if (stored === undefined)
      problems.push(`${sha256}: not in the object store${onDisk ? "" : " (nor in the data directory)"}`);
    else if (onDisk !== undefined && onDisk.size !== stored.size)
      problems.push(`${sha256}: ${stored.size} bytes in the object store, ${onDisk.size} on disk`);
  }
  return { referenced: checked, problems, elsewhere: referenced.rows.length - checked };
}

/** Blobs referenced only through feeds whose own storage setting is an object store. */
const OWN_STORE_BLOBS = `
  WITH own_store_feeds AS (
    SELECT id FROM feeds WHERE settings::json -> 'storage' ->> 'id' IN ('s3', 'azure')
  ), referenced (blob_sha256, own) AS (
    SELECT v.blob_sha256, p.feed_id IN (SELECT id FROM own_store_feeds)
      FROM upack_versions v JOIN upack_packages p ON p.id = v.package_id
    UNION ALL
    SELECT a.blob_sha256, p.feed_id IN (SELECT id FROM own_store_feeds)
      FROM upack_assembled a JOIN upack_versions v ON v.id = a.version_id JOIN upack_packages p ON p.id = v.package_id
    UNION ALL
    SELECT i.blob_sha256, i.feed_id IN (SELECT id FROM own_store_feeds)
      FROM asset_items i WHERE i.blob_sha256 IS NOT NULL
  )
  SELECT blob_sha256 FROM referenced GROUP BY blob_sha256 HAVING bool_and(own)`;
