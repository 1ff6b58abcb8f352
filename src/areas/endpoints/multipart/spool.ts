import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, readdir, rm, stat } from "node:fs/promises";
import nodePath from "node:path";
import { Readable } from "node:stream";
import type { MultipartPart } from "./repository.js";
import { partTooLong, partTooShort, uploadRemoved } from "./rules.js";

const SPOOL_NAME = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.spool$/;
/** Large reads for throughput when assembling, as the file blob store reads. */
const READ_CHUNK_BYTES = 512 * 1024;

/**
 * The spool files of multipart uploads, one per upload, in one directory: each part's bytes are
 * written at their offset, so the spool becomes the whole file once every part is in.
 */
export interface MultipartSpool {
  /** A fresh name for a spool file; no file has it yet. */
  newName(): string;
  /** Creates the empty spool file and makes its name durable before returning. */
  create(name: string): Promise<void>;
  /**
   * Writes the body at the part's offset and fsyncs it; refuses a body longer or shorter than
   * partSize, and a spool that is gone (404, the upload was removed).
   */
  writePart(name: string, part: MultipartPart, body: (() => Readable) | undefined): Promise<void>;
  /** The first `size` bytes of the spool; throws when the spool holds fewer. */
  read(name: string, size: number): Promise<Readable>;
  /** Removes the spool file; a missing one is not an error. */
  remove(name: string): Promise<void>;
  /**
   * Removes the spool files last modified before `before` whose names the predicate from `knownNames`
   * rejects; `knownNames` is called after the directory is listed. Says how many files (and bytes)
   * it removed.
   */
  removeOrphans(
    before: Date,
    knownNames: () => Promise<(name: string) => boolean>,
  ): Promise<{ files: number; bytes: number }>;
}

const isMissingFile = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";

async function writeAt(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += (await handle.write(bytes, written, bytes.length - written, position + written)).bytesWritten;
  }
}

/** fsyncs a directory so that a new file's name is durable; best effort where the platform cannot. */
async function syncDirectory(dir: string): Promise<void> {
  try {
    const handle = await open(dir, "r");
    await handle.sync().finally(() => handle.close());
  } catch {
    // Windows cannot open a directory; durability there is best effort.
  }
}

export function createMultipartSpool(spoolDir: string): MultipartSpool {
  const fileOf = (name: string) => nodePath.join(spoolDir, name);
  const remove = (name: string) => rm(fileOf(name), { force: true });

  return {
    newName: () => `${randomUUID()}.spool`,

    async create(name) {
      await mkdir(spoolDir, { recursive: true });
      await (await open(fileOf(name), "wx")).close();
      await syncDirectory(spoolDir);
    },

    async writePart(name, part, body) {
      const handle = await open(fileOf(name), "r+").catch((error: unknown) => {
        throw isMissingFile(error) ? uploadRemoved() : error;
      });
      try {
        let received = 0;
        for await (const chunk of (body?.() ?? []) as AsyncIterable<Uint8Array | string>) {
          const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
          // Refused before writing: a part never touches bytes beyond its range.
          if (received + bytes.length > part.size) throw partTooLong(part);
          await writeAt(handle, bytes, part.offset + received);
          received += bytes.length;
        }
        if (received !== part.size) throw partTooShort(part, received);
        // Durable before acknowledged: the part's row is written only after this.
        await handle.sync();
      } finally {
        await handle.close();
      }
    },

    async read(name, size) {
      const spool = await stat(fileOf(name));
      if (spool.size < size) throw new Error(`spool ${name} is shorter than its recorded parts`);
      if (size === 0) return Readable.from([]);
      return createReadStream(fileOf(name), { end: size - 1, highWaterMark: Math.min(READ_CHUNK_BYTES, size) });
    },

    remove,

    async removeOrphans(before, knownNames) {
      const names = await readdir(spoolDir).catch((error: unknown) => {
        if (isMissingFile(error)) return [];
        throw error;
      });
      const isKnown = await knownNames();
      const removed = { files: 0, bytes: 0 };
      for (const name of names) {
        // Files of other origin are left alone.
        if (!SPOOL_NAME.test(name) || isKnown(name)) continue;
        const info = await stat(fileOf(name)).catch(() => undefined);
        if (info === undefined || info.mtimeMs >= before.getTime()) continue;
        await remove(name);
        removed.files++;
        removed.bytes += info.size;
      }
      return removed;
    },
  };
}
