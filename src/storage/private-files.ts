import fs from "node:fs";

/**
 * Data files are private to the service's user (docs/PRODUCT.md security baseline): the data directory
 * 0700, the database, its WAL and shared-memory files, and key files 0600. New files get these
 * modes from the start; files an older Wharf created readable by others are narrowed when opened.
 * Windows has no such modes: nothing is done there.
 */

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIRECTORY_MODE = 0o700;
const OTHERS = 0o077;
const POSIX = process.platform !== "win32";

/**
 * Creates the directory (and its parents) private, and takes group and other permissions off it
 * when it exists. Returns false when they could not be taken off (a directory owned by another
 * user): the caller warns, a start must not fail for it.
 */
export function ensurePrivateDirectory(dir: string): boolean {
  fs.mkdirSync(dir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  return narrow(dir, PRIVATE_DIRECTORY_MODE);
}

/**
 * Takes group and other permissions off each file that exists; the first is created empty and
 * private first when missing (so that SQLite, which gives its WAL and shared-memory files the
 * database file's mode, creates those private too). Returns the files that could not be changed.
 */
export function ensurePrivateFiles(files: readonly string[]): string[] {
  const [first] = files;
  if (first !== undefined) fs.closeSync(fs.openSync(first, "a", PRIVATE_FILE_MODE));
  return files.filter((file) => !narrow(file, PRIVATE_FILE_MODE));
}

/** Whether `file` is (now) private; a missing file is. */
function narrow(file: string, mode: number): boolean {
  if (!POSIX) return true;
  let current: number;
  try {
    current = fs.statSync(file).mode & 0o777;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw error;
  }
  if ((current & OTHERS) === 0) return true;
  try {
    fs.chmodSync(file, mode);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EPERM") return false;
    throw error;
  }
}

/** Whether a file can be read or written by anyone but its owner (always false on Windows). */
export function isOpenToOthers(stat: fs.Stats): boolean {
  return POSIX && (stat.mode & OTHERS) !== 0;
}
