import { SIGNATURE_BYTES } from "../domain/compressed-content.js";
import type { BlobStore } from "./blob-store.js";

/**
 * The first bytes of a stored blob of `size` bytes, enough to tell a compressed format by its
 * signature (domain/compressed-content.ts); undefined when the store does not have it.
 */
export async function readBlobStart(blobs: BlobStore, sha256: string, size: number): Promise<Buffer | undefined> {
  if (size <= 0) return Buffer.alloc(0);
  const source = await blobs.open(sha256, { start: 0, end: Math.min(size, SIGNATURE_BYTES) - 1 });
  if (source === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of source) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
