/**
 * Bookkeeping for assembling a virtual package (virtual/assembly.ts): which paths are taken, and how
 * many entries and bytes the assembled archive has. Kept apart so the rules are testable and the
 * assembly reads as "plan, then stream".
 */
import { createHash, type Hash } from "node:crypto";
import { Transform, type TransformCallback } from "node:stream";
import { conflict, DomainError } from "../../../domain/errors.js";
import type { ArchiveLimits } from "../../../storage/archives.js";
import { settingOf, tooLarge } from "../../../storage/archives.js";

/**
 * Paths already in the assembled archive. The current doc's rule applies: a file that "already
 * exists" is ignored, so the first writer wins (the old spec's "overwrite" is not followed, see
 * docs/compat.md 1.6). Names compare ignoring case: ProGet assembles on a case-insensitive file system
 * as a rule, and a package holding both `a.txt` and `A.txt` would lose one of them on Windows.
 */
export class PathClaims {
  /** Lower-cased file names. */
  readonly #files = new Set<string>();
  /** Lower-cased directory names without the trailing '/', explicit or implied by a file in them. */
  readonly #dirs = new Set<string>();

  /** True when `name` (a file) is new and must be written; false when a file already has it. */
  claimFile(name: string): boolean {
    const key = name.toLowerCase();
    if (this.#files.has(key)) return false;
    if (this.#dirs.has(key)) throw pathConflict(name, "a directory of that name is already in the package");
    this.#claimParents(name);
    this.#files.add(key);
    return true;
  }

  /** `name` ends with '/'. True when the directory is new and an entry must be written for it. */
  claimDirectory(name: string): boolean {
    const bare = name.slice(0, -1);
    const key = bare.toLowerCase();
    if (this.#files.has(key)) throw pathConflict(name, "a file of that name is already in the package");
    if (this.#dirs.has(key)) return false;
    this.#claimParents(bare);
    this.#dirs.add(key);
    return true;
  }

  // A file cannot also be a folder on disk: "ignore if it exists" cannot resolve that, so it fails.
  #claimParents(name: string): void {
    const segments = name.toLowerCase().split("/");
    for (let depth = 1; depth < segments.length; depth++) {
      const parent = segments.slice(0, depth).join("/");
      if (this.#files.has(parent)) throw pathConflict(name, `'${parent}' is already a file in the package`);
      this.#dirs.add(parent);
    }
  }
}

function pathConflict(name: string, reason: string) {
  return conflict("VPACK_PATH_CONFLICT", `Cannot add ${JSON.stringify(name)} to the assembled package: ${reason}.`);
}

/**
 * The archive limits applied to the assembled package as a whole. Package entries are counted with
 * their declared sizes (the ZIP reader holds each entry to it); URL files are counted as they
 * stream, since their size is only known once read.
 */
export class AssemblyBudget {
  #entries = 0;
  #bytes = 0;

  constructor(private readonly limits: ArchiveLimits) {}

  addEntry(name: string, size: number): void {
    this.#entries += 1;
    if (this.#entries > this.limits.maxEntries) {
      throw tooLarge(
        "ARCHIVE_TOO_MANY_ENTRIES",
        `The assembled package would have more than ${this.limits.maxEntries} entries` +
          `${settingOf(this.limits, "WHARF_ARCHIVE_MAX_ENTRIES")}.`,
      );
    }
    this.addBytes(name, size, size);
  }

  /** `entryTotal`: the entry's bytes so far, checked against the per-entry limit. */
  addBytes(name: string, count: number, entryTotal: number): void {
    if (entryTotal > this.limits.maxEntryBytes) {
      throw tooLarge(
        "ARCHIVE_ENTRY_TOO_LARGE",
        `The file ${JSON.stringify(name)} is larger than ${this.limits.maxEntryBytes} bytes.`,
      );
    }
    this.#bytes += count;
    if (this.#bytes > this.limits.maxTotalBytes) {
      throw tooLarge(
        "ARCHIVE_TOO_LARGE",
        `The assembled package would be larger than ${this.limits.maxTotalBytes} bytes.`,
      );
    }
  }
}

/**
 * The file name a URL gives when the manifest names only a folder (a bare URL string in
 * `contents`): the last segment of its path, percent-decoded. Undefined when there is none or it
 * could name something other than one file ('/', '\', '.', '..', control characters).
 */
export function fileNameFromUrl(url: string): string | undefined {
  const last = new URL(url).pathname.split("/").pop() ?? "";
  let name: string;
  try {
    name = decodeURIComponent(last);
  } catch {
    return undefined;
  }
  if (name === "" || name === "." || name === ".." || /[/\\\p{Cc}]/u.test(name)) return undefined;
  return name;
}

/** Counts a URL file against the limits as it streams and checks its SHA-1 at the end. */
export class SourceMeter extends Transform {
  readonly #hash: Hash | undefined;
  #bytes = 0;

  constructor(
    private readonly entryName: string,
    private readonly sha1: string | undefined,
    private readonly budget: AssemblyBudget,
  ) {
    super();
    this.#hash = sha1 === undefined ? undefined : createHash("sha1");
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.#bytes += chunk.length;
    try {
      this.budget.addBytes(this.entryName, chunk.length, this.#bytes);
    } catch (error) {
      return done(error as Error);
    }
    this.#hash?.update(chunk);
    done(null, chunk);
  }

  override _flush(done: TransformCallback): void {
    const actual = this.#hash?.digest("hex");
    if (actual === undefined || actual === this.sha1) return done();
    done(new DomainError("bad_gateway", "VPACK_URL_HASH_MISMATCH", `The file has SHA-1 ${actual}, not ${this.sha1}.`));
  }
}
