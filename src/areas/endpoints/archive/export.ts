import { PassThrough, Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { AssetPath } from "../../../domain/asset-path.js";
import { type EntrySource, type SourceEntry, zipSubtreeToZip } from "../../../storage/archives.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import { readBlobStart } from "../../../storage/blob-start.js";
import { zipSubtreeToTgz } from "../../../storage/tgz.js";
import type { ArchiveFormat } from "./service.js";
import type { AssetItem } from "../repository.js";

/**
 * The archive of a folder's items (docs/compat.md 4.5 export), written by the shared archive writers
 * (storage/archives.ts, tgz.ts) one blob at a time, so memory stays flat whatever the folder
 * holds. Nothing is opened until the stream is first read: a HEAD request, which never reads it,
 * costs no blob reads and leaves nothing open.
 */
export function folderArchive(
  blobs: BlobStore,
  folder: AssetPath,
  items: readonly AssetItem[],
  format: ArchiveFormat,
): Readable {
  return deferUntilRead(() => {
    const source = storedEntries(blobs, folder, items);
    return format === "zip" ? zipSubtreeToZip(source, "") : zipSubtreeToTgz(source, "");
  });
}

/**
 * Items below `folder` as archive entries named relative to it ("sub/" for folders), dated by the
 * items' modification times, their blobs opened only when the writer reaches them.
 */
function storedEntries(blobs: BlobStore, folder: AssetPath, items: readonly AssetItem[]): EntrySource {
  // By segments, not characters: the caller may spell the folder in another case than it is
  // stored, and lowercasing can change a string's length.
  const depth = folder.path === "" ? 0 : folder.path.split("/").length;
  const blobOf = new Map<string, string>();
  const sizeOf = new Map<string, number>();
  const entries: SourceEntry[] = items.map((item) => {
    const relative = item.path.split("/").slice(depth).join("/");
    const name = item.isFolder ? `${relative}/` : relative;
    if (item.file !== undefined) {
      blobOf.set(name, item.file.sha256);
      sizeOf.set(name, item.file.size);
    }
    const modified = new Date(item.modifiedAt);
    return { name, size: item.file?.size ?? 0, isDirectory: item.isFolder, modified, mode: undefined };
  });
  const open = new Set<Readable>();
  return {
    entries: () => entries,
    openEntry(name) {
      // The writers want the stream now; the store opens it asynchronously.
      const out = new PassThrough();
      open.add(out);
      out.once("close", () => open.delete(out));
      const sha256 = blobOf.get(name);
      const missing = () => out.destroy(new Error(`the stored content of ${JSON.stringify(name)} is missing`));
      if (sha256 === undefined) {
        missing();
        return out;
      }
      blobs.open(sha256).then(
        (source) => (source === undefined ? missing() : void pipeline(source, out).catch(() => undefined)),
        (error: unknown) => out.destroy(error instanceof Error ? error : new Error(String(error))),
      );
      return out;
    },
    async close() {
      for (const stream of open) stream.destroy();
    },
    // Lets the zip writer store already-compressed files whatever their names (storage/archives.ts).
    async firstBytes(name) {
      const sha256 = blobOf.get(name);
      return sha256 === undefined ? undefined : readBlobStart(blobs, sha256, sizeOf.get(name) ?? 0);
    },
  };
}

/**
 * A stream that calls `start` only when first read. Destroying it before then never starts
 * anything; destroying it later destroys what `start` returned (the generator's `yield*` hands the
 * iterator's return on to the source).
 */
function deferUntilRead(start: () => Readable): Readable {
  return Readable.from(
    (async function* () {
      yield* start();
    })(),
    { objectMode: false },
  );
}
