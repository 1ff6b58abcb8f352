/**
 * Gzipped TAR in and out: package content served as .tgz (docs/compat.md 2.4 contentOnly=tgz) and
 * .tgz uploads turned into ZIPs. A tar has no central directory, so uploads are checked entry by
 * entry while every entry is drained, and the whole gzip stream is held to the ratio limit.
 */
import { once } from "node:events";
import { Transform, type Readable, type TransformCallback } from "node:stream";
import { finished, pipeline } from "node:stream/promises";
import { constants, createGunzip, createGzip } from "node:zlib";
import tar from "tar-stream";
import type yazl from "yazl";
import { hasCompressedExtension } from "../domain/compressed-content.js";
import { invalid } from "../domain/errors.js";
import {
  type ArchiveLimits,
  checkEntryName,
  checkEntrySize,
  checkRepackOptions,
  EntryBudget,
  type EntrySource,
  ExactSizeStream,
  malformed,
  RATIO_EXEMPT_BYTES,
  type RepackOptions,
  selectSubtree,
  type SourceEntry,
  tooLarge,
  writeZipFile,
  zipMode,
  settingOf,
} from "./archives.js";

const EMPTY = Buffer.alloc(0);

/** Headers, padding and long-name records a tar may add per entry on top of the data. */
const TAR_OVERHEAD_PER_ENTRY = 10 * 1024;

// tar-stream's streams are streamx streams: Node EventEmitters with write/end/drain that Node's
// pipe and pipeline drive correctly, but typed without NodeJS.WritableStream's overloads.
export const asNodeWritable = (stream: tar.Extract | ReturnType<tar.Pack["entry"]>) =>
  stream as unknown as NodeJS.WritableStream;

/**
 * Streams a gzipped TAR of the entries under `prefix`, prefix removed, with sizes from the
 * central directory and modification times preserved. Like zipSubtreeToZip, it refuses a name
 * clash up front, then owns `reader` and closes it when it ends, fails or is destroyed.
 */
export function zipSubtreeToTgz(reader: EntrySource, prefix: string): Readable {
  const selected = selectSubtree(reader, prefix);
  const pack = tar.pack();
  const gzip = createGzip({ level: gzipLevelFor(selected.map(({ entry }) => entry)) });
  const fail = (error: unknown) => gzip.destroy(error instanceof Error ? error : new Error(String(error)));
  pack.on("error", fail);
  pack.pipe(gzip);
  gzip.once("close", () => {
    pack.destroy();
    void reader.close();
  });
  void (async () => {
    for (const { entry, path } of selected) {
      const header = {
        name: path,
        mtime: entry.modified,
        size: entry.isDirectory ? 0 : entry.size,
        ...(entry.mode === undefined ? {} : { mode: entry.mode }),
      };
      await new Promise<void>((resolve, reject) => {
        const done = (error?: Error | null) => (error ? reject(error) : resolve());
        const sink = entry.isDirectory
          ? pack.entry({ ...header, type: "directory" }, Buffer.alloc(0), done)
          : pack.entry({ ...header, type: "file" }, done);
        sink.on("error", reject); // also reported through `done`; unheard, it would be uncaught
        if (entry.isDirectory) return;
        const source = reader.openEntry(entry.name);
        source.on("error", (error) => sink.destroy(error));
        source.pipe(asNodeWritable(sink));
      });
    }
    pack.finalize();
  })().catch(fail);
  return gzip;
}

/**
 * The gzip level of a tgz of `entries`. One level holds for the whole stream (gzip cannot tell
 * files apart), so it is chosen by what the files are, by name (domain/compressed-content.ts):
 * when nine tenths of the bytes are already compressed, deflating them again only burns CPU
 * (zlib's fastest level is as slow on such bytes as its default, level 0 twenty times faster), so
 * the tar is stored in gzip as it is, and the rest loses little; otherwise the fastest level,
 * about three times faster than the default on text for a fifth more bytes. A zip export stores
 * each compressed file and deflates the others: for mixed folders it is the better choice.
 */
export function gzipLevelFor(entries: readonly SourceEntry[]): number {
  let compressed = 0;
  let total = 0;
  for (const entry of entries) {
    total += entry.size;
    if (!entry.isDirectory && hasCompressedExtension(entry.name)) compressed += entry.size;
  }
  return total > 0 && compressed >= total * 0.9 ? constants.Z_NO_COMPRESSION : constants.Z_BEST_SPEED;
}

/**
 * Reads a gzipped TAR from `source` to its end and writes a new ZIP at `destFile` holding its
 * files and directories under `options.prefix`, plus `options.extraEntries` at the root. Links,
 * devices, unsafe names and anything past `limits` fail with DomainError invalid/too_large; on
 * failure `source` is destroyed and `destFile` does not exist. `archiveBytes`, the size of the
 * gzipped TAR when known, lets an entry that declares too much be refused before it is expanded.
 */
export async function tgzToZipFile(
  source: Readable,
  destFile: string,
  limits: ArchiveLimits,
  options: RepackOptions,
  archiveBytes?: number,
): Promise<void> {
  const budget = new EntryBudget(limits, archiveBytes);
  const prefix = checkRepackOptions(options, budget);
  const extract = tar.extract();
  // Listen before feeding: an entry or error emitted while the destination is being opened
  // would otherwise be missed, leaving the extractor waiting for us forever.
  const entries = extract[Symbol.asyncIterator]();
  const feeding = pipeline(source, ...boundedGunzip(budget), asNodeWritable(extract));
  feeding.catch(() => undefined); // awaited below, or moot once the conversion has failed
  const stop = new AbortController();
  try {
    await writeZipFile(destFile, options.extraEntries ?? [], async (zip) => {
      try {
        for await (const entry of { [Symbol.asyncIterator]: () => entries })
          await addTarEntry(zip, entry, prefix, budget, limits, stop.signal);
        await feeding;
      } catch (error) {
        throw malformed("gzipped TAR", error);
      }
    });
  } catch (error) {
    stop.abort();
    extract.destroy();
    source.destroy();
    throw error;
  }
}

/**
 * The gunzip stages for reading an uploaded gzipped TAR: `pipeline(source, ...boundedGunzip(budget), extract)`.
 * The expanded bytes are held, as they stream, to the total size (plus tar overhead), to the
 * ratio over the compressed bytes read so far and to the budget's time bound: a bomb stops being
 * expanded as soon as it passes a bound, it is not drained.
 */
export function boundedGunzip(budget: EntryBudget): [Transform, Transform, Transform] {
  const { limits } = budget;
  const compressed = new ByteCounter(() => undefined);
  const maxTarBytes = limits.maxTotalBytes + limits.maxEntries * TAR_OVERHEAD_PER_ENTRY;
  const expanded = new ByteCounter((bytes) => {
    budget.checkTime();
    if (bytes > maxTarBytes)
      throw tooLarge("ARCHIVE_TOO_LARGE", `The archive expands to more than ${maxTarBytes} bytes.`);
    if (bytes > RATIO_EXEMPT_BYTES && bytes > compressed.bytes * limits.maxRatio) {
      throw tooLarge(
        "ARCHIVE_RATIO_EXCEEDED",
        `The archive expands more than ${limits.maxRatio} times${settingOf(limits, "WHARF_ARCHIVE_MAX_RATIO")}; ` +
          "it looks like a bomb.",
      );
    }
  });
  return [compressed, createGunzip(), expanded];
}

/**
 * A tar entry's safe name ("dir/" for directories, archives.ts checkEntryName), or undefined for
 * the archive's own root ("./"). Links, devices, fifos and unsafe names throw DomainError invalid.
 */
export function checkTarEntry(header: tar.Header): { name: string; isDirectory: boolean } | undefined {
  // "./" prefixes are what `tar -C dir .` writes; they name the same paths without it.
  let name = header.name;
  while (name.startsWith("./")) name = name.slice(2);
  if (name === "" || name === ".") return undefined;
  if (header.type === "directory")
    return { name: checkEntryName(name.endsWith("/") ? name : `${name}/`), isDirectory: true };
  if (header.type !== "file" && header.type !== "contiguous-file") {
    // A link is how an extractor gets tricked into writing outside its directory; devices and
    // fifos have no business in a package.
    const isLink = header.type === "symlink" || header.type === "link";
    const message = `The archive entry ${JSON.stringify(name)} is a ${header.type}; only files and directories are accepted.`;
    throw invalid(isLink ? "ARCHIVE_LINK_ENTRY" : "ARCHIVE_UNSUPPORTED_ENTRY", message);
  }
  checkEntryName(name);
  if (name.endsWith("/"))
    throw invalid("ARCHIVE_UNSAFE_PATH", `The archive file entry ${JSON.stringify(name)} ends with "/".`);
  return { name, isDirectory: false };
}

async function addTarEntry(
  zip: yazl.ZipFile,
  entry: tar.ExtractEvents["entry"][1],
  prefix: string,
  budget: EntryBudget,
  limits: ArchiveLimits,
  signal: AbortSignal,
): Promise<void> {
  const { header } = entry;
  const checked = checkTarEntry(header);
  if (checked?.isDirectory === true) {
    const path = checkEntryName(prefix + checked.name);
    budget.add(path, 0);
    zip.addEmptyDirectory(path, { mtime: header.mtime, ...zipMode(true, header.mode) });
  }
  if (checked === undefined || checked.isDirectory) {
    entry.resume();
    return;
  }
  const { name } = checked;
  const path = checkEntryName(prefix + name);
  checkEntrySize(name, header.size, undefined, limits);
  budget.add(path, header.size);
  if (header.size === 0) {
    // No data to wait for: a stream, a deflater and a wait for each would make many cost seconds.
    zip.addBuffer(EMPTY, path, { mtime: header.mtime, compress: false, ...zipMode(false, header.mode) });
    entry.resume();
    return;
  }
  const counted = new ExactSizeStream(header.size, name);
  const options = { size: header.size, mtime: header.mtime, compress: true, ...zipMode(false, header.mode) };
  zip.addReadStream(counted, path, options);
  for await (const chunk of entry) {
    if (!Buffer.isBuffer(chunk)) throw new TypeError("tar-stream yielded a non-Buffer chunk");
    if (!counted.write(chunk)) await once(counted, "drain", { signal });
  }
  counted.end();
  // The next tar entry only comes after this one, so wait until yazl has read all of it.
  await finished(counted, { signal });
}

/** Passes bytes through, counting them and letting `check` refuse the running total. */
export class ByteCounter extends Transform {
  bytes = 0;

  constructor(private readonly check: (bytes: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    try {
      this.check(this.bytes);
    } catch (error) {
      return done(error instanceof Error ? error : new Error(String(error)));
    }
    done(null, chunk);
  }
}
