import type { Readable } from "node:stream";

/** What the store knows about one stored blob. */
export interface BlobInfo {
  /** Lowercase hex SHA-256 of the content: the blob's address. */
  readonly sha256: string;
  /** Lowercase hex SHA-1 of the content. */
  readonly sha1: string;
  /** Lowercase hex MD5 and SHA-512, present only when the put asked for them. */
  readonly md5?: string;
  readonly sha512?: string;
  readonly size: number;
}

export interface PutOptions {
  /** Largest accepted content in bytes; the put fails with DomainError kind `too_large` past it. */
  readonly maxBytes?: number;
  /** Also compute MD5 and/or SHA-512 while streaming. */
  readonly extraDigests?: ReadonlyArray<"md5" | "sha512">;
  /** Digests the client claims (lowercase or uppercase hex); a mismatch fails the put with kind `invalid`. */
  readonly expected?: Partial<Record<"sha1" | "sha256" | "md5" | "sha512", string>>;
  /**
   * The content's length as its sender declared it (an upload's Content-Length), when known: a
   * hint a store may plan with, never trusted (the S3 store skips the MD5 of a single PUT for
   * content that will go up in parts, and computes it afterwards if the content proves smaller).
   */
  readonly declaredBytes?: number;
  /** Aborting fails the put and leaves nothing behind. */
  readonly signal?: AbortSignal;
  /**
   * Called once with the content's SHA-256 when every byte is written and checked, before the
   * store looks for an existing blob at that address or publishes its own; the put waits for it,
   * and a rejection fails the put (leaving nothing). A blob keeper claims the address here, so that
   * no deletion of the same bytes can come between the put and its caller (blob-keeper.ts).
   */
  readonly beforePublish?: (sha256: string) => Promise<void>;
}

/**
 * Content-addressed, immutable blob storage. This doc comment is the contract that every
 * implementation must honour, and test/contract/blob-store.contract.ts proves it for each.
 *
 * - `put` streams the content once, hashing it on the way (SHA-256 and SHA-1 always), and makes
 *   it visible under its SHA-256 only after all bytes are durably written (temp file, fsync,
 *   rename). Putting content that already exists stores nothing new and returns the same info.
 *   The store may hold a chunk after asking for the next one: a source must not change a chunk
 *   once it has yielded it (as a Readable's consumer may also assume).
 * - A put that fails (source error, size limit, digest mismatch, abort, a full disk) rejects and
 *   leaves no blob and no temporary file behind; a blob is either wholly present or absent. A put
 *   that finds no room left rejects with DomainError kind `insufficient_storage`.
 * - Blobs never change after they are written. `delete` of a missing blob is not an error.
 * - `open` returns a stream of the stored bytes, optionally a byte range (inclusive `start`..`end`),
 *   or undefined when the blob is absent.
 * - Addresses given to `stat`, `open` and `delete` that are not 64 lowercase hex characters are
 *   treated as absent: the address never reaches the filesystem as a path of the caller's choosing.
 */
export interface BlobStore {
  put(source: Readable | AsyncIterable<Uint8Array>, options?: PutOptions): Promise<BlobInfo>;
  stat(sha256: string): Promise<{ size: number } | undefined>;
  open(sha256: string, range?: { start: number; end: number }): Promise<Readable | undefined>;
  delete(sha256: string): Promise<void>;
  /** Every stored address, for garbage collection. */
  list(): AsyncIterable<string>;
  /** Total bytes stored (for /metrics). */
  totalBytes(): Promise<number>;
  /**
   * Removes temporary files left by a crashed process and says what it removed; called once at
   * start-up, before anything is written.
   */
  clearStaleTemporaryFiles(): Promise<TemporaryFiles>;
}

/** What `clearStaleTemporaryFiles` removed. */
export interface TemporaryFiles {
  readonly files: number;
  readonly bytes: number;
}

/** Positional reads of one stored blob, for callers that manage their own buffers. */
export interface BlobReader {
  /** Bytes of the blob as stored. */
  readonly size: number;
  /** Reads up to `target.length` bytes at `position` into `target`; resolves with the count (0 past the end). */
  read(target: Buffer, position: number): Promise<number>;
  close(): Promise<void>;
}

/**
 * A store that can also open a blob for positional reads (the file store can, an object store
 * might not). `openReader` follows `open`'s rules: undefined for an absent blob or an invalid
 * address, and the bytes stay readable even if the blob is deleted while the reader is open. A
 * store made of several (blob-stores.ts) also answers undefined when the store holding the blob
 * has no positional reads: a caller that gets undefined falls back to `open`.
 */
export interface RandomAccessBlobs {
  openReader(sha256: string): Promise<BlobReader | undefined>;
}

export function canOpenReader(store: BlobStore): store is BlobStore & RandomAccessBlobs {
  return typeof (store as Partial<RandomAccessBlobs>).openReader === "function";
}

/** A blob's bytes (or a range of them) with the size of the whole blob as stored. */
export interface SizedBlobStream {
  readonly stream: Readable;
  readonly size: number;
}

/**
 * A store whose reads learn the blob's size from the read itself (an object store's GET answers
 * with it), so that a download needs one request to the store, not a look-up and then a read.
 * `openSized` follows `open`'s rules; `size` is the whole blob's, also when a range is read.
 */
export interface SizedReads {
  openSized(sha256: string, range?: { start: number; end: number }): Promise<SizedBlobStream | undefined>;
}

export function canOpenSized(store: BlobStore): store is BlobStore & SizedReads {
  return typeof (store as Partial<SizedReads>).openSized === "function";
}

/** The whole size in a ranged answer's Content-Range (`bytes 0-99/1234`), when it gives one. */
export function contentRangeTotal(contentRange: string | undefined): number | undefined {
  const total = /\/(\d+)$/.exec(contentRange ?? "")?.[1];
  return total === undefined ? undefined : Number(total);
}

/** The blob's stream and size: in one read where the store allows it, else a look-up and a read. */
export async function openWithSize(
  store: BlobStore,
  sha256: string,
  range?: { start: number; end: number },
): Promise<SizedBlobStream | undefined> {
  if (canOpenSized(store)) return store.openSized(sha256, range);
  const found = await store.stat(sha256);
  if (found === undefined) return undefined;
  const stream = await store.open(sha256, range);
  return stream === undefined ? undefined : { stream, size: found.size };
}

/**
 * A store whose unfinished uploads live on a server (an S3 multipart upload): those begun at least
 * `olderThanMs` ago are aborted, safely while uploads run (none takes that long between its first
 * and last part), so garbage collection calls it on every run. Says what it removed.
 */
export interface AbandonedUploads {
  abortAbandonedUploads(olderThanMs: number): Promise<TemporaryFiles>;
}

export function canAbortAbandonedUploads(store: BlobStore): store is BlobStore & AbandonedUploads {
  return typeof (store as Partial<AbandonedUploads>).abortAbandonedUploads === "function";
}
