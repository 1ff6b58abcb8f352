import { type BlobStore, canOpenReader, canOpenSized } from "./blob-store.js";

/**
 * A blob store that also hands out small blobs whole, from memory: for a 10 KiB package the
 * stat, open, read and close of a file cost more than everything else a download does. Blobs are
 * content-addressed and never change, so a kept copy can never be stale; the cache is bounded in
 * total bytes and in the size of one blob, and the least recently used copies go first. Large
 * blobs are never kept: they keep streaming from the store in large chunks.
 *
 * Every BlobStore method is the wrapped store's own, unchanged (the contract holds as it is);
 * only `readSmall` uses the memory.
 */
export interface SmallBlobReader {
  /**
   * The whole blob as one buffer when it is at most `maxBlobBytes` long, from memory or read (and
   * kept) now. Undefined when it is larger, absent, or not `expectedSize` bytes long: the caller
   * then goes the streaming way, which reports a missing blob as it always has.
   */
  readSmall(sha256: string, expectedSize: number): Promise<Buffer | undefined>;
}

export interface SmallBlobCacheOptions {
  /** Bytes kept in total; default 64 MiB. */
  readonly maxBytes?: number;
  /** Largest blob kept; default 256 KiB. */
  readonly maxBlobBytes?: number;
}

export function withSmallBlobCache(store: BlobStore, options: SmallBlobCacheOptions = {}): BlobStore & SmallBlobReader {
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const maxBlobBytes = Math.min(options.maxBlobBytes ?? 256 * 1024, maxBytes);
  /** Map order is recency order: a hit is moved to the end, eviction takes from the front. */
  const kept = new Map<string, Buffer>();
  /** One read per blob at a time: concurrent first requests for the same blob share it. */
  const reading = new Map<string, Promise<Buffer | undefined>>();
  let keptBytes = 0;

  async function read(sha256: string, expectedSize: number): Promise<Buffer | undefined> {
    const stream = await store.open(sha256);
    if (stream === undefined) return undefined;
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      // A blob larger than its metadata says is an integrity fault: stop reading, stream path reports it.
      if (size > expectedSize) {
        stream.destroy();
        return undefined;
      }
      chunks.push(chunk);
    }
    if (size !== expectedSize) return undefined;
    const bytes = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
    keep(sha256, bytes);
    return bytes;
  }

  function keep(sha256: string, bytes: Buffer): void {
    if (kept.has(sha256)) return;
    kept.set(sha256, bytes);
    keptBytes += bytes.length;
    for (const [oldest, oldBytes] of kept) {
      if (keptBytes <= maxBytes) break;
      kept.delete(oldest);
      keptBytes -= oldBytes.length;
    }
  }

  return {
    put: (source, putOptions) => store.put(source, putOptions),
    stat: (sha256) => store.stat(sha256),
    open: (sha256, range) => store.open(sha256, range),
    async delete(sha256) {
      // Not needed for correctness (the bytes stay right for their address), but memory should follow the store.
      const bytes = kept.get(sha256);
      if (bytes !== undefined) {
        kept.delete(sha256);
        keptBytes -= bytes.length;
      }
      await store.delete(sha256);
    },
    list: () => store.list(),
    totalBytes: () => store.totalBytes(),
    clearStaleTemporaryFiles: () => store.clearStaleTemporaryFiles(),
    // Large downloads read positionally when the store can (http/recycling-stream.ts).
    ...(canOpenReader(store) ? { openReader: (sha256: string) => store.openReader(sha256) } : {}),
    // An object store's large downloads need no look-up before their read (blob-store.ts SizedReads).
    ...(canOpenSized(store)
      ? { openSized: (sha256: string, range?: { start: number; end: number }) => store.openSized(sha256, range) }
      : {}),

    async readSmall(sha256, expectedSize) {
      if (expectedSize > maxBlobBytes) return undefined;
      const hit = kept.get(sha256);
      if (hit !== undefined) {
        if (hit.length !== expectedSize) return undefined;
        kept.delete(sha256);
        kept.set(sha256, hit);
        return hit;
      }
      let pending = reading.get(sha256);
      if (pending === undefined) {
        // A failed read is left to the streaming path, which reports it as it always has.
        pending = read(sha256, expectedSize)
          .catch(() => undefined)
          .finally(() => reading.delete(sha256));
        reading.set(sha256, pending);
      }
      const bytes = await pending;
      return bytes?.length === expectedSize ? bytes : undefined;
    },
  };
}

/** Whether a store passed as a plain BlobStore can also hand out small blobs whole. */
export function canReadSmall(store: BlobStore): store is BlobStore & SmallBlobReader {
  return typeof (store as Partial<SmallBlobReader>).readSmall === "function";
}
