import type { BlobStore } from "./blob-store.js";

/** What a crashed process had left behind, as the start-up sweep removed it. */
export interface Leftovers {
  readonly tempFiles: number;
  readonly tempBytes: number;
  readonly blobs: number;
  readonly blobBytes: number;
}

/**
 * Removes what a process killed mid-upload (SIGKILL, a power cut) left behind: every temporary
 * file, and every blob no row references (stored, but its row never committed). No grace period
 * is needed, as nothing is in flight: main.ts runs this before the app is built, holding the data
 * directory's lock (data-dir-lock.ts), so no other server's uploads are under way either. Blobs
 * orphaned while the server runs (a failed best-effort deletion) are garbage collection's.
 */
export async function removeCrashLeftovers(
  blobs: BlobStore,
  isReferenced: (sha256: string) => Promise<boolean>,
): Promise<Leftovers> {
  const temp = await blobs.clearStaleTemporaryFiles();
  let count = 0;
  let bytes = 0;
  for await (const sha256 of blobs.list()) {
    if (await isReferenced(sha256)) continue;
    bytes += (await blobs.stat(sha256))?.size ?? 0;
    await blobs.delete(sha256);
    count++;
  }
  return { tempFiles: temp.files, tempBytes: temp.bytes, blobs: count, blobBytes: bytes };
}
