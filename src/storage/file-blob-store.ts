import { createHash, randomUUID } from "node:crypto";
import { type FileHandle, mkdir, open, readdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable, Transform, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { DomainError, invalid } from "../domain/errors.js";
import type { BlobInfo, BlobStore, PutOptions } from "./blob-store.js";

type Algorithm = "sha256" | "sha1" | "md5" | "sha512";
type Digests = Partial<Record<Algorithm, string>> & Record<"sha256" | "sha1", string>;

const ADDRESS = /^[0-9a-f]{64}$/;
const FAN_OUT_DIR = /^[0-9a-f]{2}$/;
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
export function createFileBlobStore(rootDir: string): BlobStore {
  const blobsDir = path.join(rootDir, "blobs");
  const tmpDir = path.join(rootDir, "tmp");

  const blobPath = (sha256: string) => path.join(blobsDir, sha256.slice(0, 2), sha256.slice(2, 4), sha256);

  async function put(source: Readable | AsyncIterable<Uint8Array>, options: PutOptions = {}): Promise<BlobInfo> {
    const { signal } = options;
    signal?.throwIfAborted();
    // The store owns the source from this call on. Until the pipeline listens (once the temp file
    // exists) an 'error' event would find no listener and crash the process; the pipeline still
    // sees such an error through the stream's state. Left attached so that late errors from the
    // source's destruction are harmless too.
    if (source instanceof Readable) source.on("error", () => {});

    const tempPath = path.join(tmpDir, `put-${randomUUID()}`);
    // Renamed away on success; on every other path it must not outlive this call.
    let tempLeft = true;
    try {
      await mkdir(tmpDir, { recursive: true });
      const { digests, size } = await writeHashed(source, tempPath, options);
      signal?.throwIfAborted();

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
      // pipeline reports an abort as a generic AbortError; the caller's reason is more useful.
      if (signal?.aborted) throw signal.reason;
      throw error;
    } finally {
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

  async function openBlob(sha256: string, range?: { start: number; end: number }) {
    if (!ADDRESS.test(sha256)) return undefined;
    // Opening before creating the stream turns "absent" into undefined instead of a later
    // stream error, and keeps the bytes readable even if the blob is deleted meanwhile.
    let handle: FileHandle;
    try {
      handle = await open(blobPath(sha256), "r");
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw error;
    }
    try {
      return handle.createReadStream(range ? { start: range.start, end: range.end } : {});
    } catch (error) {
      // An impossible range throws here, before the stream owns (and would close) the handle.
      await handle.close();
      throw error;
    }
  }

  async function deleteBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return;
    // Empty fan-out dirs are left in place: removing them would race with a put's mkdir+rename.
    await rm(blobPath(sha256), { force: true });
  }

  async function* list(): AsyncIterable<string> {
    for (const first of await subdirectories(blobsDir)) {
      const firstDir = path.join(blobsDir, first);
      for (const second of await subdirectories(firstDir)) {
        const prefix = first + second;
        for (const entry of await entries(path.join(firstDir, second))) {
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

  async function clearStaleTemporaryFiles() {
    // Only safe while no put is running, which is why it is called once at start-up.
    const stale = await entries(tmpDir);
    for (const entry of stale) {
      await rm(path.join(tmpDir, entry.name), { recursive: true, force: true });
    }
    return stale.length;
  }

  return {
    put,
    stat: statBlob,
    open: openBlob,
    delete: deleteBlob,
    list,
    totalBytes,
    clearStaleTemporaryFiles,
  };
}

/**
 * Streams `source` into a new file at `tempPath`, hashing and counting on the way, checks the
 * claimed digests and fsyncs the file. The caller removes the file if this throws.
 */
async function writeHashed(
  source: Readable | AsyncIterable<Uint8Array>,
  tempPath: string,
  options: PutOptions,
): Promise<{ digests: Digests; size: number }> {
  const algorithms = new Set<Algorithm>(["sha256", "sha1", ...(options.extraDigests ?? [])]);
  // A claimed digest can only be checked if it is computed.
  for (const [algorithm, value] of Object.entries(options.expected ?? {})) {
    if (value !== undefined) algorithms.add(algorithm as Algorithm);
  }
  const hashes = [...algorithms].map((algorithm) => [algorithm, createHash(algorithm)] as const);
  const maxBytes = options.maxBytes ?? Number.POSITIVE_INFINITY;

  let size = 0;
  const hashAndCount = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      // Failing here, before the chunk is written, stops an oversized upload at once.
      if (size > maxBytes) {
        callback(
          new DomainError("too_large", "UPLOAD_TOO_LARGE", `The upload exceeds the limit of ${maxBytes} bytes.`),
        );
        return;
      }
      for (const [, hash] of hashes) hash.update(chunk);
      callback(null, chunk);
    },
  });

  // "wx": a random name that already exists means something is wrong; never write into it.
  const handle = await open(tempPath, "wx");
  try {
    await pipeline(source, hashAndCount, writeTo(handle), { signal: options.signal });
    const digests = Object.fromEntries(hashes.map(([algorithm, hash]) => [algorithm, hash.digest("hex")]));
    // Checked before the fsync, so a rejected upload costs no disk flush.
    checkExpected(digests, options.expected);
    await handle.sync();
    return { digests: digests as Digests, size };
  } finally {
    // FileHandle.close waits for writes still in flight after a failed pipeline.
    await handle.close();
  }
}

/**
 * A sink that writes to `handle` but never closes it, so the owner can fsync the very descriptor
 * that wrote. (FileHandle.createWriteStream with autoClose off keeps a reference on the handle
 * that makes FileHandle.close wait forever.)
 */
function writeTo(handle: FileHandle): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      writeFully(handle, chunk).then(() => callback(), callback);
    },
  });
}

async function writeFully(handle: FileHandle, chunk: Buffer) {
  // A write may be partial; the rest must follow or the blob would be truncated.
  for (let offset = 0; offset < chunk.length;) {
    const { bytesWritten } = await handle.write(chunk, offset);
    offset += bytesWritten;
  }
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

async function subdirectories(dir: string) {
  return (await entries(dir)).filter((e) => e.isDirectory() && FAN_OUT_DIR.test(e.name)).map((e) => e.name);
}

function isMissing(error: unknown) {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
