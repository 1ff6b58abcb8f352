import fs from "node:fs";
import path from "node:path";
import { dataPaths } from "./data-paths.js";

/**
 * Refusals an operator fixes, not bugs: the message says what is wrong with the data directory,
 * as which user, and what to do, on one line (main.ts and the CLI print it without a stack trace).
 */
export class DataDirUnwritableError extends Error {
  override readonly name = "DataDirUnwritableError";
}

/**
 * Creates the data directory when it is missing and proves that this process can create files in
 * it and write its database, before anything else touches it; throws DataDirUnwritableError
 * otherwise. Without it, a directory owned by another user (a Docker volume created by root, a
 * directory left by a server run with sudo) surfaces as "SQLITE_CANTOPEN: unable to open database
 * file" with a stack trace, naming neither the directory nor the user.
 */
export function assertWritableDataDir(dataDir: string): void {
  const dir = path.resolve(dataDir);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const probe = path.join(dir, `.write-test-${process.pid}`);
    fs.closeSync(fs.openSync(probe, "wx"));
    fs.unlinkSync(probe);
    // The database, with SQLite's companions, must be writable when it exists.
    for (const file of dataPaths(dir).databaseFiles) {
      if (fs.existsSync(file)) fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK);
    }
  } catch (error) {
    const refusal = dataDirRefusal(error, dir);
    if (refusal === undefined) throw error;
    throw new DataDirUnwritableError(refusal, { cause: error });
  }
}

/** Who this process is, as `chown` and `ls -ln` show it; undefined where there are no user ids (Windows). */
function processOwner(): { readonly uid: number; readonly gid: number } | undefined {
  if (process.getuid === undefined || process.getgid === undefined) return undefined;
  return { uid: process.getuid(), gid: process.getgid() };
}

/** The operator's message for an error of the file system on `dir`; undefined for errors that are not about access. */
export function dataDirRefusal(error: unknown, dir: string): string | undefined {
  const { code, path: culprit } = error as NodeJS.ErrnoException;
  const owner = processOwner();
  const as = owner === undefined ? "" : ` as user id ${owner.uid}, group id ${owner.gid}`;
  const elsewhere = "or set WHARF_DATA_DIR to a directory this user can write";
  switch (code) {
    case "EACCES":
    case "EPERM": {
      // The probe file's name would only confuse; a database file owned by someone else is worth naming.
      const file = culprit !== undefined && dataPaths(dir).databaseFiles.includes(culprit) ? ` on ${culprit}` : "";
      const chown = owner === undefined ? "" : ` (sudo chown -R ${owner.uid}:${owner.gid} ${dir})`;
      return `Cannot write to the data directory ${dir}${as}: permission denied${file}. Give that user the directory${chown}, ${elsewhere}.`;
    }
    case "EROFS":
      return `Cannot write to the data directory ${dir}${as}: it is on a read-only file system. Mount it read-write, ${elsewhere}.`;
    case "ENOTDIR":
    case "EEXIST":
      return `Cannot use ${dir} as the data directory${as}: it, or a folder on its path, is a file. Move the file away, ${elsewhere}.`;
    default:
      return undefined;
  }
}
