import { createHash, randomUUID } from "node:crypto";
import type { Dirent } from "node:fs";
import { type FileHandle, lstat, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { invalid } from "../domain/errors.js";
import { uploadTooLarge } from "../domain/upload-limit.js";
import { BatchedWriter } from "./batched-writer.js";
import type { BlobInfo, BlobReader, BlobStore, PutOptions, RandomAccessBlobs, TemporaryFiles } from "./blob-store.js";
import { dataPaths } from "./data-paths.js";
import { diskFull, isDiskFull } from "./disk-full.js";

type Algorithm = "sha256" | "sha1" | "md5" | "sha512";
type Digests = Partial<Record<Algorithm, string>> & Record<"sha256" | "sha1", string>;

const ADDRESS = /^[0-9a-f]{64}$/;
/**
 * Large reads for throughput (8 times a stream's default), but not 1 MiB: serving 100 MiB packages
 * with a fresh 1 MiB buffer per chunk, the server spent 19% of its time collecting garbage (4% with
 * 512 KiB) and about 1.5 CPU seconds per GiB sent, against 0.5-0.9 with 512 KiB (bench/, 2 vCPUs).
 */
const READ_CHUNK_BYTES = 512 * 1024;
const FAN_OUT_DIR = /^[0-9a-f]{2}$/;
/** Fan-out directories `list` reads at once (the thread pool has 4 threads unless UV_THREADPOOL_SIZE says otherwise). */
const LIST_READ_AHEAD = 3;
const ALGORITHM_NAMES: Record<Algorithm, string> = {
  sha256: "SHA-256",
  sha1: "SHA-1",
  md5: "MD5",
  sha512: "SHA-512",
};

/**
 * Blobs live at `<root>/blobs/ab/cd/<sha256>`; the two fan-out levels keep directories small
 * enough for every filesystem. Puts are written under `<root>/tmp/` first: it sits on the same
 * filesystem, so the final rename is atomic and a reader never sees a partial blob.
 */
export function createFileBlobStore(rootDir: string): BlobStore & RandomAccessBlobs {
  const { blobs: blobsDir, tmp: tmpDir } = dataPaths(rootDir);

  const blobPath = (sha256: string) => path.join(blobsDir, sha256.slice(0, 2), sha256.slice(2, 4), sha256);

  async function put(source: Readable | AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<BlobInfo> {
    const { signal } = options;
    // The store owns the source from this call on: whatever happens, it is either read to its end
    // or disposed of before this call settles, and nothing here ever waits on the source without
    // also listening for the signal (see SourceReader).
    const reader = new SourceReader(source, signal);
    const tempPath = path.join(tmpDir, `put-${randomUUID()}`);
    // Renamed away on success; on every other path it must not outlive this call.
    let tempLeft = true;
    try {
      signal?.throwIfAborted();
      await mkdir(tmpDir, { recursive: true });
      const { digests, size } = await writeHashed(reader, tempPath, options);
      signal?.throwIfAborted();
      await options.beforePublish?.(digests.sha256);

      const info: BlobInfo = { ...digests, size };
      const target = blobPath(info.sha256);
      if (await exists(target)) {
        // Same address means same bytes: the existing blob already is this content.
        return info;
      }
      const dir = path.dirname(target);
      const firstCreated = await mkdir(dir, { recursive: true });
      await rename(tempPath, target);
      tempLeft = false;
      // The rename is only durable once the directory entry is; new fan-out dirs need the same.
      await syncDirectory(dir);
      if (firstCreated !== undefined) {
        await syncDirectory(path.dirname(dir));
        await syncDirectory(blobsDir);
      }
      return info;
    } catch (error) {
      reader.dispose(error);
      // The caller's abort reason is more useful than whatever the abort caused downstream.
      if (signal?.aborted) throw signal.reason;
      if (isDiskFull(error)) throw diskFull("the upload was not stored", error);
      throw error;
    } finally {
      reader.release();
      if (tempLeft) await rm(tempPath, { force: true });
    }
  }

  async function statBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return undefined;
    try {
      const s = await stat(blobPath(sha256));
      return s.isFile() ? { size: s.size } : undefined;
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
  }

  /**
   * Opens the blob's file and runs `use` on it; undefined when the blob is absent. Opening first
   * turns "absent" into undefined instead of a later stream error, and keeps the bytes readable
   * even if the blob is deleted meanwhile. If `use` throws, the handle is closed.
   */
  async function withOpenBlob<T>(sha256: string, use: (handle: FileHandle) => Promise<T>): Promise<T | undefined> {
    if (!ADDRESS.test(sha256)) return undefined;
    let handle: FileHandle;
    try {
      handle = await open(blobPath(sha256), "r");
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      return await use(handle);
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  function openBlob(sha256: string, range?: { start: number; end: number }) {
    return withOpenBlob(sha256, async (handle) => {
      // Large reads for throughput; an explicit end keeps a small blob's read buffer small too.
      const end = range ? range.end : (await handle.stat()).size - 1;
      const start = range ? range.start : 0;
      if (end < start) return handle.createReadStream(); // an empty blob: nothing to read
      // An impossible range throws here, before the stream owns (and would close) the handle.
      return handle.createReadStream({ start, end, highWaterMark: Math.min(READ_CHUNK_BYTES, end - start + 1) });
    });
  }

  function openReader(sha256: string): Promise<BlobReader | undefined> {
    return withOpenBlob(sha256, async (handle) => ({
      size: (await handle.stat()).size,
      read: async (target, position) => (await handle.read(target, 0, target.length, position)).bytesRead,
      close: () => handle.close(),
    }));
  }

  async function deleteBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return;
    // Empty fan-out dirs are left in place: removing them would race with a put's mkdir+rename.
    await rm(blobPath(sha256), { force: true });
  }

  async function* list(): AsyncIterable<string> {
    for (const first of await subdirectories(blobsDir)) {
      const firstDir = path.join(blobsDir, first);
      const seconds = await subdirectories(firstDir);
      // A store of 100,000 blobs has some 65,000 of these small directories, and each read is a
      // round trip to the thread pool: a few are read ahead (not all, so that uploads beside a
      // collection still find free threads for their own file operations).
      const reads = seconds.map(() => undefined as Promise<Dirent[]> | undefined);
      const readAhead = (index: number) => {
        const second = seconds[index];
        if (second === undefined || reads[index] !== undefined) return;
        const read = entries(path.join(firstDir, second));
        // Awaited (and its failure thrown) in turn below; until then a failure is not unhandled.
        read.catch(() => {});
        reads[index] = read;
      };
      for (let index = 0; index < seconds.length; index++) {
        for (let ahead = index; ahead < index + LIST_READ_AHEAD; ahead++) readAhead(ahead);
        const prefix = first + seconds[index];
        const found = await (reads[index] as Promise<Dirent[]>);
        reads[index] = undefined;
        for (const entry of found) {
          // Only names that could have been written here count; strays are not blobs.
          if (entry.isFile() && ADDRESS.test(entry.name) && entry.name.startsWith(prefix)) {
            yield entry.name;
          }
        }
      }
    }
  }

  async function totalBytes() {
    let total = 0;
    for await (const sha256 of list()) total += (await statBlob(sha256))?.size ?? 0;
    return total;
  }

  async function clearStaleTemporaryFiles(): Promise<TemporaryFiles> {
    // Only safe while no put is running, which is why it is called once at start-up. Other writers
    // spool under tmp/ too (archives, deployments, in folders of their own): all of it goes.
    const cleared = { files: 0, bytes: 0 };
    for (const entry of await entries(tmpDir)) {
      const entryPath = path.join(tmpDir, entry.name);
      const sizes = entry.isDirectory() ? await fileSizesUnder(entryPath) : [(await lstat(entryPath)).size];
      await rm(entryPath, { recursive: true, force: true });
      cleared.files += sizes.length;
      cleared.bytes += sizes.reduce((sum, size) => sum + size, 0);
    }
    return cleared;
  }

  return {
    put,
    stat: statBlob,
    open: openBlob,
    openReader,
    delete: deleteBlob,
    list,
    totalBytes,
    clearStaleTemporaryFiles,
  };
}

/**
 * Streams the source into a new file at `tempPath`, hashing and counting on the way, checks the
 * claimed digests and fsyncs the file (unless `durable` is false: an object store's spool, read
 * back at once and never kept). The caller removes the file if this throws; the file handle is
 * closed before this settles, whichever way.
 *
 * Every await here is either a local file operation, which always completes, or
 * `SourceReader.next`, which gives up as soon as the signal aborts. A chunk is written before the
 * next one is asked for, so a slow disk slows the source down instead of filling memory.
 */
export async function writeHashed(
  reader: SourceReader,
  tempPath: string,
  options: PutOptions,
  { durable = true }: { readonly durable?: boolean } = {},
): Promise<{ digests: Digests; size: number }> {
  const algorithms = new Set<Algorithm>(["sha256", "sha1", ...(options.extraDigests ?? [])]);
  // A claimed digest can only be checked if it is computed.
  for (const [algorithm, value] of Object.entries(options.expected ?? {})) {
    if (value !== undefined) algorithms.add(algorithm as Algorithm);
  }
  const hashes = [...algorithms].map((algorithm) => [algorithm, createHash(algorithm)] as const);
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;

  // "wx": a random name that already exists means something is wrong; never write into it.
  const handle = await open(tempPath, "wx");
  const writer = new BatchedWriter(handle);
  let failed = true;
  try {
    let size = 0;
    for (let chunk = await reader.next(); chunk !== undefined; chunk = await reader.next()) {
      size += chunk.length;
      // Failing here, before the chunk is written, stops an oversized upload at once.
      if (size > maxBytes) {
        throw uploadTooLarge(maxBytes);
      }
      for (const [, hash] of hashes) hash.update(chunk);
      await writer.add(chunk);
    }
    await writer.flush();
    const digests = Object.fromEntries(hashes.map(([algorithm, hash]) => [algorithm, hash.digest("hex")]));
    // Checked before the fsync, so a rejected upload costs no disk flush.
    checkExpected(digests, options.expected);
    if (durable) await handle.sync();
    failed = false;
    return { digests: digests as Digests, size };
  } finally {
    // Nothing else uses the handle (no stream was made from it); a write still under way must end
    // before it closes, or the write could land in whatever file reuses the descriptor.
    await writer.settled();
    // A close error only matters if all else went well.
    await handle.close().catch((error: unknown) => {
      if (!failed) throw error;
    });
  }
}

/**
 * The store's side of a put's source. `next` waits for the next chunk but gives up at once when
 * the signal aborts or a Readable source emits 'error', however long the source itself takes to
 * notice: an async generator suspended on an await, or a Readable that never answers a read,
 * must not hold the put open. `dispose` lets go of a source that was not read to its end without
 * waiting for it either.
 */
export class SourceReader {
  private readonly iterator: AsyncIterator<unknown>;
  /** Set once the put must stop reading: the signal aborted or the source emitted 'error'. */
  private stopped: { error: unknown } | undefined;
  /** Rejects the pending `next`, if any. */
  private interrupt: ((error: unknown) => void) | undefined;
  private finished = false;
  private readonly onAbort = () => this.stop(this.signal?.reason);

  constructor(
    private readonly source: Readable | AsyncIterable<Uint8Array>,
    private readonly signal: AbortSignal | undefined,
  ) {
    // First: if the source is not iterable at all, nothing below has been attached yet.
    this.iterator = source[Symbol.asyncIterator]();
    if (source instanceof Readable) {
      // An 'error' emitted before reading starts, or emitted without destroying the stream, would
      // otherwise find no listener (crashing the process) or be missed (leaving the put waiting for
      // data that never comes). Left attached so that late errors from the source's destruction
      // are harmless too.
      source.on("error", (error) => this.stop(error));
    }
    signal?.addEventListener("abort", this.onAbort, { once: true });
  }

  /** The next chunk, or undefined once the source has ended. */
  async next(): Promise<Uint8Array | undefined> {
    if (this.stopped) throw this.stopped.error;
    // Not Promise.race: that would leave one reaction per chunk on a promise that may never settle.
    const result = await new Promise<IteratorResult<unknown>>((resolve, reject) => {
      this.interrupt = reject;
      Promise.resolve(this.iterator.next()).then(resolve, reject);
    });
    this.interrupt = undefined;
    if (result.done) {
      this.finished = true;
      return undefined;
    }
    return toBytes(result.value);
  }

  /** Lets go of a source that was not read to its end; never waits for it. */
  dispose(error: unknown) {
    if (this.finished) return;
    this.finished = true;
    this.stop(error);
    if (this.source instanceof Readable) {
      this.source.destroy(error instanceof Error ? error : undefined);
    }
    // For an async generator suspended on an await this only queues the return; it runs (and its
    // finally blocks with it) whenever the generator gets that far, without the put waiting.
    try {
      Promise.resolve(this.iterator.return?.()).catch(() => {});
    } catch {
      // a hand-written iterator may throw here; the source is abandoned either way
    }
  }

  /** Stops listening for the signal; call when the put settles. */
  release() {
    this.signal?.removeEventListener("abort", this.onAbort);
  }

  private stop(error: unknown) {
    if (this.stopped) return;
    this.stopped = { error };
    this.interrupt?.(error);
  }
}

function toBytes(chunk: unknown): Uint8Array {
  if (chunk instanceof Uint8Array) return chunk;
  // A Readable with an encoding set yields strings.
  if (typeof chunk === "string") return Buffer.from(chunk);
  throw new TypeError(`A put source must yield Uint8Array chunks, not ${typeof chunk}.`);
}

function checkExpected(actual: Partial<Record<Algorithm, string>>, expected: PutOptions["expected"]) {
  for (const [algorithm, claimed] of Object.entries(expected ?? {}) as [Algorithm, string | undefined][]) {
    if (claimed === undefined) continue;
    const computed = actual[algorithm];
    if (claimed.toLowerCase() !== computed) {
      throw invalid(
        "DIGEST_MISMATCH",
        `${ALGORITHM_NAMES[algorithm]} mismatch: expected ${claimed} but the content hashes to ${computed}.`,
      );
    }
  }
}

async function syncDirectory(dir: string) {
  // Not every platform can open or fsync a directory (Windows cannot); durability there is
  // best effort, which is what "where possible" means.
  try {
    const handle = await open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // ignored on purpose, see above
  }
}

async function exists(file: string) {
  try {
    await stat(file);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

async function entries(dir: string) {
  try {
    return await readdir(dir, { withFileTypes: true });
  } catch (error) {
    if (isMissing(error)) return [];
    throw error;
  }
}

/** Sizes of the regular files anywhere under `dir` (links are not followed). */
async function fileSizesUnder(dir: string): Promise<number[]> {
  const found = await readdir(dir, { withFileTypes: true, recursive: true });
  const files = found.filter((entry) => entry.isFile());
  return Promise.all(files.map(async (entry) => (await lstat(path.join(entry.parentPath, entry.name))).size));
}

async function subdirectories(dir: string) {
  return (await entries(dir)).filter((e) => e.isDirectory() && FAN_OUT_DIR.test(e.name)).map((e) => e.name);
}

function isMissing(error: unknown) {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
