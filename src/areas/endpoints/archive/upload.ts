import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import type { ArchiveLimits, SourceEntry } from "../../../storage/archives.js";
import { readTgz } from "../../../storage/tgz-read.js";
import { openZip } from "../../../storage/zip.js";
import type { ArchiveFormat } from "./service.js";

/**
 * A spooled upload that passed every check of the shared archive readers (names, links,
 * devices, encryption, entry count, sizes, ratio), so the caller can decide about all its entries
 * before acting on any.
 */
export interface UploadedArchive {
  /** Every file and directory, in archive order; names are safe and relative ("sub/" for directories). */
  entries(): readonly SourceEntry[];
  /**
   * Visits every entry once more, in the same order; `data` (files only) streams the entry's
   * bytes, exactly `size` of them, and need not be called: unread data costs nothing or is skipped.
   */
  extract(visit: (entry: SourceEntry, data: () => Readable | AsyncIterable<Buffer>) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}

/** Opens and checks the spooled archive; DomainError invalid/too_large when it is refused. */
export async function openUploadedArchive(
  file: string,
  format: ArchiveFormat,
  limits: ArchiveLimits,
): Promise<UploadedArchive> {
  return format === "zip" ? openUploadedZip(file, limits) : openUploadedTgz(file, limits);
}

async function openUploadedZip(file: string, limits: ArchiveLimits): Promise<UploadedArchive> {
  // Opening checks the central directory; we extract by it, but the local headers are compared
  // too, as for every uploaded ZIP (zip.ts): the archive must not mean one thing to us and
  // another to the next tool that extracts it.
  const reader = await openZip(file, limits);
  try {
    await reader.verifyLocalHeaders();
  } catch (error) {
    await reader.close();
    throw error;
  }
  return {
    entries: () => reader.entries(),
    async extract(visit) {
      for (const entry of reader.entries()) await visit(entry, () => reader.openEntry(entry.name));
    },
    close: () => reader.close(),
  };
}

async function openUploadedTgz(file: string, limits: ArchiveLimits): Promise<UploadedArchive> {
  // A tar announces nothing up front: a first pass reads it whole to check it and learn its
  // entries; extract is the second pass.
  const entries: SourceEntry[] = [];
  const archiveBytes = (await stat(file)).size;
  const collect = async (entry: SourceEntry) => void entries.push(entry);
  await readTgz(createReadStream(file), limits, collect, archiveBytes);
  // The archive passed its time bound in the first pass; the second one also stores what it holds,
  // which takes as long as the disk needs.
  const checked = { ...limits, maxSeconds: Number.POSITIVE_INFINITY };
  return {
    entries: () => entries,
    extract: (visit) => readTgz(createReadStream(file), checked, (entry, data) => visit(entry, () => data)),
    close: async () => undefined,
  };
}
