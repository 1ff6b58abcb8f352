import type { BlobStore } from "../../src/storage/blob-store.js";

/** A stored blob's whole content; throws when the store has no such blob. */
export async function bytesOf(blobs: BlobStore, sha256: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = await blobs.open(sha256);
  if (stream === undefined) throw new Error(`blob ${sha256} is not stored`);
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
