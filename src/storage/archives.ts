/**
 * Archive helpers shared by every area (docs/PRODUCT.md "Security baseline": no zip-slip, bounded
 * entry count, bounded total and per-entry size, bounded ratio). This file holds the limits,
 * entry-name safety, error mapping, size-enforcing streams and ZIP writing; zip.ts reads ZIPs
 * (openZip, openZipBlob, zipFileRepack) and tgz.ts converts to and from gzipped TAR.
 */
import { open, rm } from "node:fs/promises";
import { PassThrough, type Readable, Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import yazl from "yazl";
import { isCompressedContent } from "../domain/compressed-content.js";
import { DomainError, invalid } from "../domain/errors.js";
import { literalPathProblem } from "../domain/relative-path.js";
import type { ArchiveEntry } from "./zip.js";

export interface ArchiveLimits {
  /** Entries of any kind, directories included. */
  readonly maxEntries: number;
  /** Sum of the uncompressed sizes of all entries. */
  readonly maxTotalBytes: number;
  /** Uncompressed size of any one entry. */
  readonly maxEntryBytes: number;
  /**
   * Uncompressed : compressed, per zip entry, over a whole archive whose size is known (declared
   * sizes, checked as each entry is announced) and over a whole gzip stream as it expands (see
   * RATIO_EXEMPT_BYTES).
   */
  readonly maxRatio: number;
  /**
   * Wall-clock seconds that reading and checking one archive may take, plus as many again for
   * every MiB the archive is long (when its size is known): a small archive that costs minutes is
   * refused within seconds, a large honest one gets time in proportion. Checked between entries
   * and as expanded data streams. Infinity for archives accepted before (stored packages).
   */
  readonly maxSeconds: number;
  /**
   * Whether maxEntries, maxRatio and maxSeconds are the administrator's WHARF_ARCHIVE_* settings
   * (uploadArchiveLimits), which refusals then name; not for stored packages' fixed bounds.
   */
  readonly configured?: boolean;
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * What archives accepted before (stored packages) are read with: at least as permissive as any
 * upload may be configured (config.ts bounds WHARF_ARCHIVE_*), so that whatever was accepted stays
 * readable. Packages can legitimately hold multi-GiB files, so the sizes are generous; deflate
 * tops out near 1032:1, so 1000:1 only trips on near-perfectly compressible data.
 */
export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = Object.freeze({
  maxEntries: 100_000,
  maxTotalBytes: 10 * GiB,
  maxEntryBytes: 10 * GiB,
  maxRatio: 1000,
  maxSeconds: Number.POSITIVE_INFINITY,
});

/**
 * What uploaded archives are held to (package uploads and imports, asset directory imports), from
 * the administrator's WHARF_ARCHIVE_* settings: the entry count, ratio and time bound the work a
 * hostile archive can cause. 10,000 entries keep a conversion (yazl rescans its entries once per
 * entry) well under a second; 100:1 is far above what real content compresses to (text: 3-10:1)
 * and is the ratio Apache POI calls a zip bomb; 2 s per archive (plus 2 s per MiB) is far more
 * than an honest archive within those bounds needs.
 */
export function uploadArchiveLimits(settings: {
  readonly archiveMaxEntries: number;
  readonly archiveMaxRatio: number;
  readonly archiveMaxSeconds: number;
}): ArchiveLimits {
  return Object.freeze({
    ...DEFAULT_ARCHIVE_LIMITS,
    maxEntries: settings.archiveMaxEntries,
    maxRatio: settings.archiveMaxRatio,
    maxSeconds: settings.archiveMaxSeconds,
    configured: true,
  });
}

type ArchiveSetting = "WHARF_ARCHIVE_MAX_ENTRIES" | "WHARF_ARCHIVE_MAX_RATIO" | "WHARF_ARCHIVE_MAX_SECONDS";

/** ` (WHARF_...)` when the bound is the administrator's setting: a refusal says what would change it. */
export function settingOf(limits: ArchiveLimits, setting: ArchiveSetting): string {
  return limits.configured === true ? ` (${setting})` : "";
}

/** uploadArchiveLimits with the defaults of config.ts, for callers and tests without a configuration. */
export const UPLOAD_ARCHIVE_LIMITS: ArchiveLimits = uploadArchiveLimits({
  archiveMaxEntries: 10_000,
  archiveMaxRatio: 100,
  archiveMaxSeconds: 2,
});

/** Data this small is never refused for its ratio: a run of zeros or a sparse file is normal and harmless. */
export const RATIO_EXEMPT_BYTES = 1 * MiB;

/** Longer names are refused: no real package needs them, and they end up in headers and logs. */
const MAX_NAME_LENGTH = 4096;

export type ArchiveFormat = "ZIP" | "gzipped TAR";

/** Wraps whatever a zip/tar/zlib library threw; DomainErrors (our own checks) pass through. */
export function malformed(format: ArchiveFormat, error: unknown): DomainError {
  if (error instanceof DomainError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return invalid("ARCHIVE_INVALID", `The archive is not a valid ${format} file: ${detail}`);
}

export const tooLarge = (code: string, message: string) => new DomainError("too_large", code, message);

function unsafeReason(name: string): string | undefined {
  if (name === "") return "it is empty";
  if (name.length > MAX_NAME_LENGTH) return `it is longer than ${MAX_NAME_LENGTH} characters`;
  return literalPathProblem(name);
}

/** Returns `name` when it is a safe relative path ("dir/" for directories); else throws invalid. */
export function checkEntryName(name: string): string {
  const reason = unsafeReason(name);
  if (reason !== undefined) {
    throw invalid("ARCHIVE_UNSAFE_PATH", `The archive entry ${JSON.stringify(name)} is refused: ${reason}.`);
  }
  return name;
}

/** Refuses an entry that is bigger, or (when its compressed size is known) compressed better, than allowed. */
export function checkEntrySize(
  name: string,
  size: number,
  compressedSize: number | undefined,
  limits: ArchiveLimits,
): void {
  if (size > limits.maxEntryBytes) {
    throw tooLarge(
      "ARCHIVE_ENTRY_TOO_LARGE",
      `The archive entry ${JSON.stringify(name)} is larger than ${limits.maxEntryBytes} bytes.`,
    );
  }
  if (compressedSize !== undefined && size > RATIO_EXEMPT_BYTES && size > compressedSize * limits.maxRatio) {
    throw tooLarge(
      "ARCHIVE_RATIO_EXCEEDED",
      `The archive entry ${JSON.stringify(name)} expands more than ${limits.maxRatio} times` +
        `${settingOf(limits, "WHARF_ARCHIVE_MAX_RATIO")}; it looks like a zip bomb.`,
    );
  }
}

/**
 * Counts entries and their declared sizes against the archive-wide limits, and the time spent on
 * the archive against its time bound (one budget per archive read, created when reading starts).
 */
export class EntryBudget {
  #entries = 0;
  #bytes = 0;
  readonly #names = new Set<string>();
  readonly #deadline: number;
  readonly #allowedSeconds: number;

  /** `archiveBytes`: the archive's size, when known; the ratio is then checked as entries are added. */
  constructor(
    readonly limits: ArchiveLimits,
    private readonly archiveBytes?: number,
  ) {
    this.#allowedSeconds = limits.maxSeconds * (1 + (archiveBytes ?? 0) / MiB);
    this.#deadline = performance.now() + this.#allowedSeconds * 1000;
  }

  /** Refuses up front an archive that announces more entries than allowed. */
  expectEntries(count: number): void {
    if (count > this.limits.maxEntries) {
      const setting = settingOf(this.limits, "WHARF_ARCHIVE_MAX_ENTRIES");
      throw tooLarge(
        "ARCHIVE_TOO_MANY_ENTRIES",
        `The archive has more than ${this.limits.maxEntries} entries${setting}.`,
      );
    }
  }

  /**
   * Refuses an archive whose entries together expand too well, as soon as their declared sizes
   * say so (before their data is read). Per-entry checks alone would let many small exempt
   * entries, or entries sharing overlapping data, multiply a small upload.
   */
  #expectRatio(archiveBytes: number): void {
    if (this.#bytes > RATIO_EXEMPT_BYTES && this.#bytes > archiveBytes * this.limits.maxRatio) {
      throw tooLarge(
        "ARCHIVE_RATIO_EXCEEDED",
        `The archive expands more than ${this.limits.maxRatio} times${settingOf(this.limits, "WHARF_ARCHIVE_MAX_RATIO")} ` +
          "(by the sizes it declares); it looks like a bomb.",
      );
    }
  }

  /**
   * Refuses an archive that has taken longer than its time bound: called between entries and as
   * data expands, so a hostile archive stops costing at once (a performance.now() is ~30 ns).
   */
  checkTime(): void {
    if (performance.now() > this.#deadline) {
      throw tooLarge(
        "ARCHIVE_TOO_SLOW",
        `The archive could not be read and checked within the ${this.#allowedSeconds.toFixed(1)} seconds allowed ` +
          `for an archive of its size${settingOf(this.limits, "WHARF_ARCHIVE_MAX_SECONDS")}: it has too many ` +
          "entries or expands too much.",
      );
    }
  }

  /** Accounts for one more entry; refuses too many, too much, too well compressed, too slow, or a name seen before. */
  add(name: string, size: number): void {
    this.#entries += 1;
    this.expectEntries(this.#entries);
    this.#bytes += size;
    if (this.#bytes > this.limits.maxTotalBytes) {
      throw tooLarge("ARCHIVE_TOO_LARGE", `The archive expands to more than ${this.limits.maxTotalBytes} bytes.`);
    }
    if (this.archiveBytes !== undefined) this.#expectRatio(this.archiveBytes);
    this.checkTime();
    // Two entries with one name make "which upack.json?" depend on the reader: refuse the ambiguity.
    if (this.#names.has(name)) {
      throw invalid("ARCHIVE_DUPLICATE_ENTRY", `The archive has more than one entry named ${JSON.stringify(name)}.`);
    }
    this.#names.add(name);
  }
}

/**
 * Passes exactly `expected` bytes through, failing with invalid on more or fewer: a header that
 * lies about its size cannot make a reader hand out more data than the limits were checked against.
 */
export class ExactSizeStream extends Transform {
  #seen = 0;

  constructor(
    private readonly expected: number,
    private readonly entryName: string,
  ) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.expected) return done(this.#mismatch("more"));
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    done(this.#seen < this.expected ? this.#mismatch("less") : null);
  }

  #mismatch(moreOrLess: string): DomainError {
    return invalid(
      "ARCHIVE_ENTRY_SIZE_MISMATCH",
      `The archive entry ${JSON.stringify(this.entryName)} holds ${moreOrLess} data than its header declares (${this.expected} bytes).`,
    );
  }
}

/** A buffer stored at the archive root, e.g. a generated upack.json. */
export interface ExtraEntry {
  readonly name: string;
  readonly content: Buffer;
}

export interface RepackOptions {
  /** Where the source's entries go: "package/", or "" to keep them where they are. */
  readonly prefix: string;
  /** Written first, at the root; their names must not clash with the moved entries. */
  readonly extraEntries?: readonly ExtraEntry[];
}

/** Checks the prefix and extra entries up front, and returns the prefix. */
export function checkRepackOptions(options: RepackOptions, budget: EntryBudget): string {
  const { prefix, extraEntries = [] } = options;
  // A caller's mistake, not the client's: a plain Error becomes a 500 and a log line.
  if (prefix !== "" && !prefix.endsWith("/"))
    throw new TypeError(`The prefix ${JSON.stringify(prefix)} must end with "/".`);
  if (prefix !== "") checkEntryName(prefix);
  for (const extra of extraEntries) budget.add(checkEntryName(extra.name), extra.content.length);
  return prefix;
}

/**
 * Writes a new zip at `destFile` (which must not exist yet) from what `fill` adds, and removes
 * it again if anything fails: callers never see a partial file.
 */
export async function writeZipFile(
  destFile: string,
  extraEntries: readonly ExtraEntry[],
  fill: (zip: yazl.ZipFile) => Promise<void>,
): Promise<void> {
  // Opened before anything else: if it already exists, that failure must not remove it below.
  const file = (await open(destFile, "wx")).createWriteStream();
  const zip = new yazl.ZipFile();
  const broken = new Promise<never>((_resolve, reject) => zip.on("error", reject));
  const written = pipeline(zip.outputStream, file);
  // Both are raced below; these no-ops keep a rejection nobody awaits any more from being fatal.
  broken.catch(() => undefined);
  written.catch(() => undefined);
  try {
    // upack.json first: readers that stream the file find the manifest without seeking.
    for (const extra of extraEntries) zip.addBuffer(extra.content, extra.name);
    await Promise.race([fill(zip), broken, written]);
    zip.end();
    await Promise.race([written, broken]);
  } catch (error) {
    file.destroy();
    await written.catch(() => undefined);
    await rm(destFile, { force: true });
    throw error;
  }
}

/** An entry as the archive writers below need it; a ZipReader's entries are such entries. */
export type SourceEntry = Pick<ArchiveEntry, "name" | "size" | "isDirectory" | "modified" | "mode">;

/**
 * Entries with their data on demand: what zipSubtreeToZip and zipSubtreeToTgz (tgz.ts) write from.
 * A ZipReader is one; so is a listing of stored files (asset directory exports). Names follow
 * ArchiveEntry's rules (safe, relative, directories end with "/").
 */
export interface EntrySource<E extends SourceEntry = SourceEntry> {
  entries(): readonly E[];
  /** A file entry's data, exactly `size` bytes. */
  openEntry(name: string): Readable;
  /** Ends every entry stream still open. */
  close(): Promise<void>;
  /**
   * A file entry's first bytes (domain/compressed-content.ts SIGNATURE_BYTES), where reading them
   * is cheap: they show compressed content that its name does not (a `.bin` that is gzip).
   */
  firstBytes?(name: string): Promise<Uint8Array | undefined>;
}

/**
 * Files at least this big whose name says nothing are looked at (EntrySource.firstBytes) before
 * they are written: deflating a smaller file for nothing costs less than the look.
 */
const LOOKED_AT_BYTES = 64 * 1024;

/** The entries under `prefix` (matched case-insensitively, docs/compat.md 1.1), with the prefix cut off. */
export function selectSubtree<E extends SourceEntry>(
  reader: Pick<EntrySource<E>, "entries">,
  prefix: string,
): Array<{ entry: E; path: string }> {
  const lower = prefix.toLowerCase();
  const paths = new Set<string>();
  const selected: Array<{ entry: E; path: string }> = [];
  for (const entry of reader.entries()) {
    const path = entry.name.slice(prefix.length);
    if (path === "" || entry.name.slice(0, prefix.length).toLowerCase() !== lower) continue;
    // "package/a" and "PACKAGE/a" would become one name; refuse rather than pick one.
    if (paths.has(path)) {
      throw invalid("ARCHIVE_DUPLICATE_ENTRY", `The archive has more than one entry for ${JSON.stringify(path)}.`);
    }
    paths.add(path);
    selected.push({ entry, path });
  }
  return selected;
}

/**
 * Streams a new ZIP of the entries under `prefix`, prefix removed (docs/compat.md 2.4 contentOnly=zip).
 * Refuses a clash up front (before any byte is sent); the returned stream then owns `reader`
 * and closes it when it ends, fails or is destroyed.
 */
export function zipSubtreeToZip(reader: EntrySource, prefix: string): Readable {
  const selected = selectSubtree(reader, prefix);
  const zip = new yazl.ZipFile();
  const out = new PassThrough();
  const fail = (error: Error) => out.destroy(error);
  zip.on("error", fail);
  // Already-compressed files are stored, not deflated again: deflating them costs most of an
  // export's time (a 256 MiB folder of packages took 15 s) and saves nothing.
  void (async () => {
    for (const { entry, path } of selected) {
      const compress = entry.isDirectory || !(await isCompressedEntry(reader, entry, path));
      addZipEntry(zip, reader, entry, path, fail, compress);
    }
    zip.end();
  })().catch(fail);
  pipeline(zip.outputStream, out).catch(() => undefined); // a failure is already `out`'s error
  out.once("close", () => void reader.close());
  return out;
}

/** Zip mode bits for an entry: its permissions (never setuid/setgid/sticky) plus its type. */
export function zipMode(isDirectory: boolean, permissions: number | undefined): { mode?: number } {
  return permissions === undefined ? {} : { mode: (isDirectory ? 0o040000 : 0o100000) | (permissions & 0o777) };
}

/** Whether a file is already compressed (domain/compressed-content.ts): by its name, else its first bytes. */
export async function isCompressedEntry(
  reader: Pick<EntrySource, "firstBytes">,
  entry: SourceEntry,
  path: string,
): Promise<boolean> {
  if (isCompressedContent({ name: path })) return true;
  if (reader.firstBytes === undefined || entry.size < LOOKED_AT_BYTES) return false;
  const firstBytes = await reader.firstBytes(entry.name);
  return firstBytes !== undefined && isCompressedContent({ firstBytes });
}

/**
 * Adds a directory, or a file read lazily (one entry open at a time), deflated unless `compress`
 * is false (stored), reporting failures to `fail`.
 */
export function addZipEntry(
  zip: yazl.ZipFile,
  reader: Pick<EntrySource, "openEntry">,
  entry: SourceEntry,
  path: string,
  fail: (e: Error) => void,
  compress = true,
): void {
  const options = { mtime: entry.modified, ...zipMode(entry.isDirectory, entry.mode) };
  if (entry.isDirectory) return zip.addEmptyDirectory(path, options);
  zip.addReadStreamLazy(path, { ...options, size: entry.size, compress }, (ready) => {
    const source = reader.openEntry(entry.name);
    source.on("error", fail); // yazl itself does not listen for errors on the streams it reads
    ready(null, source);
  });
}
