import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import type { AssetPath } from "../../../domain/asset-path.js";
import type { Feed } from "../../management/index.js";
import type { PlannedEntry } from "./plan.js";
import type { WriteMode } from "../repository.js";
import type { AssetService, HeldContent } from "../service.js";

/** Files stored at once: their writes and fsyncs overlap instead of queueing one after the other. */
const CONCURRENT_STORES = 8;
/**
 * Files up to this size are read into memory (at most CONCURRENT_STORES of them at a time) so
 * that they can be stored concurrently, and stored once per content: an archive of many identical
 * (say, empty) files stores one blob.
 */
const SMALL_FILE_BYTES = 256 * 1024;
/** Items per transaction: a transaction per file made imports of tens of thousands cost minutes. */
const ITEMS_PER_BATCH = 1000;

/**
 * Writes the items of an archive import (archive/service.ts) in archive order: files are stored a
 * few at a time, then recorded with the folders in batched transactions. Should storing fail
 * midway, the batches written stay (no file is ever half-written: rows point only at complete
 * blobs) and the error is the import's.
 */
export interface ImportWriter {
  folder(path: AssetPath): Promise<void>;
  /** Stores a file entry; `data` is read here, before the next entry is asked for. */
  file(entry: PlannedEntry, data: Readable | AsyncIterable<Buffer>): Promise<void>;
  /** Records what is left; returns the files stored, and those kept because one appeared at their path. */
  finish(): Promise<{ files: number; kept: number }>;
  /** Lets go of every stored blob (deleting those no item uses); call once, after finish or a failure. */
  close(): Promise<void>;
}

export function createImportWriter(
  assets: AssetService,
  directory: Feed,
  options: { mode: WriteMode; mayReplace: boolean },
): ImportWriter {
  const contents = assets.importContents(directory);
  /** By SHA-256, for small files: one store per content. */
  const stores = new Map<string, Promise<HeldContent>>();
  /** Every store started, held until close(). */
  const started: Array<Promise<HeldContent>> = [];
  let folders: AssetPath[] = [];
  let files: Array<{ path: AssetPath; held: Promise<HeldContent> }> = [];
  let storing = 0;
  const waiting: Array<() => void> = [];
  const counts = { files: 0, kept: 0 };

  /** Waits until fewer than CONCURRENT_STORES stores run: the archive is read no faster than stored. */
  async function turn(): Promise<void> {
    while (storing >= CONCURRENT_STORES) await new Promise<void>((resolve) => waiting.push(resolve));
    storing += 1;
  }

  function start(store: Promise<HeldContent>): Promise<HeldContent> {
    const done = () => {
      storing -= 1;
      waiting.shift()?.();
    };
    // Handled here, awaited by the batch that records it: a failure waiting for it is not unhandled.
    store.then(done, done);
    started.push(store);
    return store;
  }

  async function flush(): Promise<void> {
    if (folders.length === 0 && files.length === 0) return;
    const batch = {
      folders,
      files: await Promise.all(files.map(async ({ path, held }) => ({ path, content: (await held).content }))),
    };
    folders = [];
    files = [];
    const written = await assets.writeStoredFiles(directory, batch, options);
    counts.files += written.stored;
    counts.kept += written.kept;
  }

  async function added(): Promise<void> {
    if (folders.length + files.length >= ITEMS_PER_BATCH) await flush();
  }

  return {
    async folder(path) {
      folders.push(path);
      await added();
    },

    async file(entry, data) {
      let held: Promise<HeldContent>;
      if (entry.size <= SMALL_FILE_BYTES) {
        const bytes = await readAll(data);
        const key = createHash("sha256").update(bytes).digest("hex");
        const same = stores.get(key);
        if (same !== undefined) held = same;
        else {
          await turn();
          held = start(contents.store(Readable.from([bytes]), { maxBytes: entry.size }));
          stores.set(key, held);
        }
      } else {
        await turn();
        held = start(contents.store(data, { maxBytes: entry.size }));
        // Streamed from the archive: it must be read whole before the next entry can be.
        await held;
      }
      files.push({ path: entry.path, held });
      await added();
    },

    async finish() {
      await flush();
      return counts;
    },

    async close() {
      const settled = await Promise.allSettled(started);
      await contents.release(settled.flatMap((result) => (result.status === "fulfilled" ? [result.value] : [])));
    },
  };
}

async function readAll(data: Readable | AsyncIterable<Buffer>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of data as AsyncIterable<Buffer>) chunks.push(chunk);
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}
