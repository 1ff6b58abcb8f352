/**
 * Reading ZIP archives (uploaded packages, stored .upack blobs) and writing ZIPs derived from them.
 * Everything is validated when the archive is opened, from the central directory alone, so a
 * refused archive costs no decompression: names (archives.ts checkEntryName), links, encryption,
 * compression methods, counts, sizes and ratios. Entry data is then held to its declared size.
 * Uploads also get their local file headers compared with the central directory
 * (ZipReader.verifyLocalHeaders), since some clients extract by those alone.
 */
import { close as closeFd, open as openFd } from "node:fs";
import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import yauzl from "yauzl";
import { invalid, notFound } from "../domain/errors.js";
import {
  addZipEntry,
  type ArchiveLimits,
  checkEntryName,
  checkEntrySize,
  checkRepackOptions,
  DEFAULT_ARCHIVE_LIMITS,
  EntryBudget,
  ExactSizeStream,
  malformed,
  type RepackOptions,
  tooLarge,
  writeZipFile,
} from "./archives.js";
import type { BlobStore } from "./blob-store.js";

export interface ArchiveEntry {
  /** Safe relative path with "/" separators; directories end with "/". */
  readonly name: string;
  /** Uncompressed bytes, as declared and enforced. */
  readonly size: number;
  readonly compressedSize: number;
  readonly isDirectory: boolean;
  readonly modified: Date;
  /** Unix permission bits (0o777 at most), when the archive recorded them. */
  readonly mode: number | undefined;
}

/**
 * An open, fully validated ZIP. Entries are known up front; entry data is streamed on demand and
 * fails with DomainError invalid if it does not match its declared size. Until `close()` the
 * underlying file stays open.
 */
export interface ZipReader {
  /** Every entry, in central-directory order. */
  entries(): readonly ArchiveEntry[];
  /** Exact name first; with ignoreCase, then the first case-insensitive match (docs/compat.md 1.1). */
  findEntry(name: string, options?: { ignoreCase?: boolean }): ArchiveEntry | undefined;
  /** UTF-8 text of a file entry (a BOM is dropped); too_large past maxBytes, not_found when absent. */
  readText(name: string, maxBytes: number): Promise<string>;
  /** A file entry's data; throws not_found when absent, invalid for a directory. */
  openEntry(name: string): Readable;
  /**
   * Compares every entry's local file header with its central-directory record, which is all that
   * opening checked: the name (raw bytes, and a Unicode path extra field if the local header has
   * one), encryption, compression method and, unless sizes follow the data (a data descriptor),
   * CRC-32 and sizes; entries may not overlap either. Streaming extractors (Java's ZipInputStream,
   * streaming unzip libraries) go by local headers only, so a local `../../x` behind a harmless
   * central name would slip past every other check. Throws invalid ARCHIVE_LOCAL_HEADER_MISMATCH.
   * One pass in file order; headers close together share one read.
   */
  verifyLocalHeaders(): Promise<void>;
  /** Destroys entry streams still open, then resolves once the file is closed. Idempotent. */
  close(): Promise<void>;
}

// decodeStrings off: names are decoded and checked here (archives.ts), with our messages; yauzl
// would otherwise turn backslashes into "/" silently and refuse the rest with its own wording.
const YAUZL_OPTIONS = { lazyEntries: true, autoClose: false, validateEntrySizes: true, decodeStrings: false };

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
/** Host "Unix" in the high byte of "version made by": only such entries keep a mode in the high half. */
const HOST_UNIX = 3;
/** Blob reads are one store round trip each; the central directory is read in slices this big. */
const READ_AHEAD_BYTES = 64 * 1024;
/** At most this much is read at once for a run of local headers (and the file data between them). */
const HEADER_BATCH_BYTES = 1024 * 1024;

const LOCAL_HEADER_BYTES = 30;
const FLAG_ENCRYPTED = 0x0001;
const FLAG_DATA_DESCRIPTOR = 0x0008;
const ZIP64_EXTRA_FIELD = 0x0001;
const UNICODE_PATH_EXTRA_FIELD = 0x7075;

/** Reads ahead of a batch of reads that are about to come: [start, end) into memory in one go. */
type Prefetch = (start: number, end: number) => Promise<void>;

/** Opens a ZIP file on disk; file-system errors pass through, anything about the bytes is invalid. */
export async function openZip(file: string, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<ZipReader> {
  const fd = await promisify(openFd)(file, "r");
  let zipfile: yauzl.ZipFile;
  try {
    zipfile = await yauzl.fromFdPromise(fd, YAUZL_OPTIONS);
  } catch (error) {
    await promisify(closeFd)(fd).catch(() => undefined);
    throw malformed("ZIP", error);
  }
  return load(zipfile, limits);
}

/** Opens a stored ZIP blob by address through ranged reads, without copying it to disk. */
export async function openZipBlob(
  blobs: BlobStore,
  sha256: string,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<ZipReader> {
  const stat = await blobs.stat(sha256);
  if (stat === undefined) throw notFound("BLOB_NOT_FOUND", "The stored package file is missing.");
  const ranges = new BlobRangeReader(blobs, sha256, stat.size);
  let zipfile: yauzl.ZipFile;
  try {
    zipfile = await yauzl.fromRandomAccessReaderPromise(ranges, stat.size, YAUZL_OPTIONS);
  } catch (error) {
    throw malformed("ZIP", error);
  }
  return load(zipfile, limits, (start, end) => ranges.prefetch(start, end));
}

class BlobRangeReader extends yauzl.RandomAccessReader {
  #window: { start: number; bytes: Buffer } | undefined;

  constructor(
    private readonly blobs: BlobStore,
    private readonly sha256: string,
    private readonly size: number,
  ) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    // yauzl wants the stream now; the store opens it asynchronously.
    const out = new PassThrough();
    this.blobs.open(this.sha256, { start, end: end - 1 }).then(
      (source) => {
        if (source === undefined) out.destroy(new Error("the stored package file disappeared"));
        else pipeline(source, out).catch(() => undefined); // failures reach yauzl through `out`
      },
      (error: unknown) => out.destroy(error instanceof Error ? error : new Error(String(error))),
    );
    return out;
  }

  /** Reads [start, end) with one ranged read and keeps it as the window `read` serves from. */
  async prefetch(start: number, end: number): Promise<void> {
    const stop = Math.min(end, this.size);
    if (start >= stop) return; // past the end: the read itself will fail, with yauzl's message
    this.#window = { start, bytes: await collect(this._readStreamForRange(start, stop)) };
  }

  override read(buffer: Buffer, offset: number, length: number, position: number, done: (e: Error | null) => void) {
    const copyOut = (window: { start: number; bytes: Buffer }) => {
      const from = position - window.start;
      if (from < 0 || from + length > window.bytes.length) return false;
      window.bytes.copy(buffer, offset, from, from + length);
      return true;
    };
    // Async even on a hit: yauzl reads the next entry from inside this callback, 100k deep.
    if (this.#window !== undefined && copyOut(this.#window)) return void setImmediate(done, null);
    const end = Math.min(this.size, position + Math.max(length, READ_AHEAD_BYTES));
    collect(this._readStreamForRange(position, end)).then(
      (bytes) => {
        this.#window = { start: position, bytes };
        done(copyOut(this.#window) ? null : new Error("unexpected EOF"));
      },
      (error: Error) => done(error),
    );
  }
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

interface Loaded {
  readonly info: ArchiveEntry;
  readonly raw: yauzl.Entry;
}

async function load(zipfile: yauzl.ZipFile, limits: ArchiveLimits, prefetch?: Prefetch): Promise<ZipReader> {
  // Errors reach us through the iterator and entry streams; this keeps a late one (closing the
  // file) from being an unhandled 'error' event.
  zipfile.on("error", () => undefined);
  const closed = new Promise<void>((resolve) => zipfile.once("close", resolve));
  try {
    const budget = new EntryBudget(limits, zipfile.fileSize);
    return createReader(zipfile, await readCentralDirectory(zipfile, budget), budget, closed, prefetch);
  } catch (error) {
    zipfile.close();
    await closed;
    throw malformed("ZIP", error);
  }
}

async function readCentralDirectory(zipfile: yauzl.ZipFile, budget: EntryBudget): Promise<Map<string, Loaded>> {
  // The count comes from the end record: refuse before walking 65 535 (or 2^64) headers.
  budget.expectEntries(zipfile.entryCount);
  const byName = new Map<string, Loaded>();
  for await (const raw of zipfile.eachEntry()) {
    const info = describe(raw, budget.limits);
    budget.add(info.name, info.size);
    byName.set(info.name, { info, raw });
  }
  return byName;
}

function describe(raw: yauzl.Entry, limits: ArchiveLimits): ArchiveEntry {
  const decoded = yauzl.getFileNameLowLevel(raw.generalPurposeBitFlag, raw.fileNameRaw, raw.extraFields, true);
  const name = checkEntryName(decoded);
  const quoted = JSON.stringify(name);
  // Unix mode bits live in the high half; a link entry would make an extractor write elsewhere.
  const unixMode = raw.externalFileAttributes >>> 16;
  if ((unixMode & S_IFMT) === S_IFLNK) {
    throw invalid("ARCHIVE_LINK_ENTRY", `The archive entry ${quoted} is a symbolic link; links are refused.`);
  }
  const fileType = unixMode & S_IFMT;
  // As in a tar (tgz.ts): devices, fifos and sockets are not content; 0 is "not recorded".
  if (raw.versionMadeBy >>> 8 === HOST_UNIX && fileType !== 0 && fileType !== S_IFREG && fileType !== S_IFDIR) {
    throw invalid(
      "ARCHIVE_UNSUPPORTED_ENTRY",
      `The archive entry ${quoted} is a device, fifo or socket; only files and directories are accepted.`,
    );
  }
  if (raw.isEncrypted()) throw invalid("ARCHIVE_ENCRYPTED", `The archive entry ${quoted} is encrypted.`);
  if (!raw.canDecodeFileData()) {
    throw invalid("ARCHIVE_UNSUPPORTED", `The archive entry ${quoted} uses an unsupported compression method.`);
  }
  checkEntrySize(name, raw.uncompressedSize, raw.compressedSize, limits);
  return {
    name,
    size: raw.uncompressedSize,
    compressedSize: raw.compressedSize,
    isDirectory: name.endsWith("/"),
    modified: modifiedDate(raw),
    // Only archives made on Unix (host 3) keep a mode there; others leave 0 or DOS bits.
    mode: raw.versionMadeBy >>> 8 === HOST_UNIX && unixMode !== 0 ? unixMode & 0o777 : undefined,
  };
}

function modifiedDate(raw: yauzl.Entry): Date {
  let date: Date;
  try {
    date = raw.getLastModDate();
  } catch {
    date = raw.getLastModDate({ forceDosFormat: true }); // a malformed timestamp extra field
  }
  return Number.isNaN(date.getTime()) ? new Date(0) : date;
}

function createReader(
  zipfile: yauzl.ZipFile,
  byName: Map<string, Loaded>,
  /** The archive's budget from opening: verifying the local headers is part of checking it. */
  budget: EntryBudget,
  closed: Promise<void>,
  prefetch: Prefetch | undefined,
): ZipReader {
  const entries = [...byName.values()].map((loaded) => loaded.info);
  const streams = new Set<Readable>();
  let closing: Promise<void> | undefined;

  const get = (name: string): ArchiveEntry & { raw: yauzl.Entry } => {
    const loaded = byName.get(name);
    if (loaded === undefined) {
      throw notFound("ARCHIVE_ENTRY_NOT_FOUND", `The archive has no entry named ${JSON.stringify(name)}.`);
    }
    return { ...loaded.info, raw: loaded.raw };
  };

  const openEntry = (name: string): Readable => {
    const { size, isDirectory, raw } = get(name);
    if (isDirectory)
      throw invalid("ARCHIVE_ENTRY_IS_DIRECTORY", `The archive entry ${JSON.stringify(name)} is a directory.`);
    if (closing !== undefined) throw new Error("The archive reader is closed.");
    const out = new ExactSizeStream(size, name);
    streams.add(out);
    out.once("close", () => streams.delete(out));
    zipfile.openReadStream(raw, (error, source) => {
      if (error) return void out.destroy(malformed("ZIP", error));
      if (out.destroyed) return void source.destroy();
      source.on("error", (sourceError) => out.destroy(malformed("ZIP", sourceError)));
      // yauzl asks for unpipe before destroy; destroying releases the file for close().
      out.once("close", () => {
        source.unpipe(out);
        source.destroy();
      });
      source.pipe(out);
    });
    return out;
  };

  return {
    entries: () => entries,
    findEntry(name, options) {
      const exact = byName.get(name)?.info;
      if (exact !== undefined || options?.ignoreCase !== true) return exact;
      const lower = name.toLowerCase();
      return entries.find((entry) => entry.name.toLowerCase() === lower);
    },
    async readText(name, maxBytes) {
      if (get(name).size > maxBytes) {
        throw tooLarge("ARCHIVE_ENTRY_TOO_LARGE", `${name} is larger than ${maxBytes} bytes.`);
      }
      const bytes = await collect(openEntry(name));
      try {
        return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        throw invalid("ARCHIVE_TEXT_NOT_UTF8", `${name} is not valid UTF-8 text.`);
      }
    },
    openEntry,
    async verifyLocalHeaders() {
      if (closing !== undefined) throw new Error("The archive reader is closed.");
      try {
        await verifyLocalHeaders(zipfile, [...byName.values()], budget, prefetch);
      } catch (error) {
        throw malformed("ZIP", error);
      }
    },
    close() {
      if (closing === undefined) {
        for (const stream of streams) stream.destroy();
        zipfile.close();
        closing = closed;
      }
      return closing;
    },
  };
}

async function verifyLocalHeaders(
  zipfile: yauzl.ZipFile,
  loaded: readonly Loaded[],
  budget: EntryBudget,
  prefetch: Prefetch | undefined,
): Promise<void> {
  const offset = (entry: Loaded) => entry.raw.relativeOffsetOfLocalHeader;
  // The local header's length is only known once read; the central record's name and extra
  // field lengths are the usual answer (a longer local extra field costs one more read).
  const headerEnd = (entry: Loaded) =>
    offset(entry) + LOCAL_HEADER_BYTES + entry.raw.fileNameRaw.length + entry.raw.extraFieldRaw.length;
  const ordered = [...loaded].sort((a, b) => offset(a) - offset(b));
  // Where the previous entry's data ends: the next local header may not start before it.
  let dataEnd = 0;
  for (let first = 0; first < ordered.length;) {
    // One read for a run of headers at most READ_AHEAD_BYTES apart (small files: the data between
    // them comes along), a small one for a header alone between large files.
    const start = offset(ordered[first] as Loaded);
    let end = headerEnd(ordered[first] as Loaded);
    let last = first + 1;
    for (; last < ordered.length; last++) {
      const next = ordered[last] as Loaded;
      if (offset(next) - end > READ_AHEAD_BYTES || headerEnd(next) - start > HEADER_BATCH_BYTES) break;
      end = Math.max(end, headerEnd(next));
    }
    await prefetch?.(start, end);
    for (const entry of ordered.slice(first, last)) {
      budget.checkTime();
      if (offset(entry) < dataEnd) throw localHeaderMismatch(entry, "where it starts (inside another entry's data)");
      const local = await zipfile.readLocalFileHeaderPromise(entry.raw);
      const problem = localHeaderProblem(entry, local);
      if (problem !== undefined) throw localHeaderMismatch(entry, problem);
      dataEnd = local.fileDataStart + entry.raw.compressedSize;
    }
    first = last;
  }
}

function localHeaderMismatch(entry: Loaded, problem: string) {
  return invalid(
    "ARCHIVE_LOCAL_HEADER_MISMATCH",
    `The archive entry ${JSON.stringify(entry.info.name)} is refused: its local file header and the ` +
      `central directory disagree about ${problem}.`,
  );
}

/** What the local header says differently from the central record, or undefined when they agree. */
function localHeaderProblem({ info, raw }: Loaded, local: yauzl.LocalFileHeader): string | undefined {
  if (!local.fileName.equals(raw.fileNameRaw)) return "its name";
  const extraFields = yauzl.parseExtraFields(local.extraField);
  // A Unicode path field overrides the raw name for extractors that read it.
  if (
    extraFields.some((field) => field.id === UNICODE_PATH_EXTRA_FIELD) &&
    yauzl.getFileNameLowLevel(local.generalPurposeBitFlag, local.fileName, extraFields, true) !== info.name
  ) {
    return "its name";
  }
  if ((local.generalPurposeBitFlag ^ raw.generalPurposeBitFlag) & FLAG_ENCRYPTED) return "encryption";
  if (local.compressionMethod !== raw.compressionMethod) return "the compression method";
  // With a data descriptor the local CRC-32 and sizes are placeholders; the real ones follow the data.
  if (local.generalPurposeBitFlag & FLAG_DATA_DESCRIPTOR) return undefined;
  if (local.crc32 !== raw.crc32) return "the CRC-32";
  let { compressedSize, uncompressedSize } = local;
  if (compressedSize === 0xffffffff || uncompressedSize === 0xffffffff) {
    // Zip64: a local header's field holds both sizes, uncompressed first (APPNOTE 4.5.3).
    const zip64 = extraFields.find((field) => field.id === ZIP64_EXTRA_FIELD)?.data;
    if (zip64 === undefined || zip64.length < 16) return "the sizes";
    uncompressedSize = Number(zip64.readBigUInt64LE(0));
    compressedSize = Number(zip64.readBigUInt64LE(8));
  }
  if (compressedSize !== raw.compressedSize || uncompressedSize !== raw.uncompressedSize) return "the sizes";
  return undefined;
}

/**
 * Writes `destFile` (new) as a copy of the ZIP at `srcFile` with every entry moved under
 * `options.prefix` and `options.extraEntries` added at the root: a plain ZIP becomes a .upack.
 */
export async function zipFileRepack(
  srcFile: string,
  destFile: string,
  options: RepackOptions,
  limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
): Promise<void> {
  const reader = await openZip(srcFile, limits);
  try {
    const budget = new EntryBudget(limits);
    const prefix = checkRepackOptions(options, budget);
    const moved = reader.entries().map((entry) => ({ entry, path: checkEntryName(prefix + entry.name) }));
    for (const { entry, path } of moved) budget.add(path, entry.size);
    await writeZipFile(destFile, options.extraEntries ?? [], async (zip) => {
      const fail = (error: Error) => zip.emit("error", error);
      for (const { entry, path } of moved) addZipEntry(zip, reader, entry, path, fail);
    });
  } finally {
    await reader.close();
  }
}
