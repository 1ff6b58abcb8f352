/**
 * Reading a gzipped TAR entry by entry, with the checks of tgz.ts (names, links, devices, sizes,
 * count, total and ratio), for callers that consume the entries themselves rather than convert
 * the archive (asset directory imports). A tar has no central directory: a caller that must
 * refuse a bad archive before acting on any entry reads it twice, once to check, once to act.
 */
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import tar from "tar-stream";
import { type ArchiveLimits, checkEntrySize, EntryBudget, malformed, type SourceEntry } from "./archives.js";
import { asNodeWritable, boundedGunzip, checkTarEntry } from "./tgz.js";

/** A file entry's bytes; the reader drains whatever the visitor leaves unread. */
export type TarEntryData = AsyncIterable<Buffer>;

/**
 * Reads the gzipped TAR in `source` to its end and calls `visit` for every file and directory, in
 * archive order, after that entry passed its checks (the archive's "./" root is left out). Names
 * follow ArchiveEntry's rules ("dir/" for directories); `mode` is never set: permissions of
 * uploads are not kept. Failures of the checks or the format are DomainError invalid/too_large;
 * on any failure `source` is destroyed. A visitor's own error ends the reading and is rethrown.
 * `archiveBytes`, the size of the gzipped TAR when known, lets an entry that declares too much be
 * refused before it is expanded (the ratio), and gives a large archive time in proportion.
 */
export async function readTgz(
  source: Readable,
  limits: ArchiveLimits,
  visit: (entry: SourceEntry, data: TarEntryData) => Promise<void>,
  archiveBytes?: number,
): Promise<void> {
  const budget = new EntryBudget(limits, archiveBytes);
  const extract = tar.extract();
  // Listen before feeding, as tgzToZipFile does: an early entry or error is not missed.
  const entries = extract[Symbol.asyncIterator]();
  const feeding = pipeline(source, ...boundedGunzip(budget), asNodeWritable(extract));
  feeding.catch(() => undefined); // awaited below, or moot once reading has failed
  let visitorFailed = false;
  try {
    for await (const entry of { [Symbol.asyncIterator]: () => entries }) {
      const chunks = entry[Symbol.asyncIterator]();
      const checked = checkTarEntry(entry.header);
      if (checked !== undefined) {
        const size = checked.isDirectory ? 0 : (entry.header.size ?? 0);
        checkEntrySize(checked.name, size, undefined, limits);
        budget.add(checked.name, size);
        const info = { ...checked, size, modified: entry.header.mtime ?? new Date(0), mode: undefined };
        // No `return` on this iterable: a visitor that stops early leaves the rest to the drain below.
        // A failure reading the data is still the archive's, whichever way it reaches us.
        const next = () => chunks.next().catch((error: unknown) => Promise.reject(malformed("gzipped TAR", error)));
        const data = { [Symbol.asyncIterator]: () => ({ next }) } as TarEntryData;
        await visit(info, data).catch((error: unknown) => {
          visitorFailed = true;
          throw error;
        });
      }
      // The next entry only comes once this one is read to its end.
      while ((await chunks.next()).done !== true);
    }
    await feeding;
  } catch (error) {
    extract.destroy();
    source.destroy();
    // The visitor's errors (a failed store, say) are its own, not a verdict on the archive.
    throw visitorFailed ? error : malformed("gzipped TAR", error);
  }
}
