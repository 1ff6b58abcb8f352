import Database from "better-sqlite3";
import { isBusy } from "./busy.js";
import { dataPaths } from "./data-paths.js";

export class DataDirInUseError extends Error {
  override readonly name = "DataDirInUseError";
}

/**
 * Makes sure this is the only server on the data directory, until the returned function is called
 * or the process ends. A second server would remove the first one's uploads under way as crash
 * leftovers (startup-sweep.ts), so it must not start. SQLite's exclusive lock is an operating
 * system file lock: the system releases it when the process dies, even by SIGKILL, so a crash
 * never leaves the directory locked. The CLI does not take it: it may run beside the server.
 */
export function lockDataDir(dataDir: string): () => void {
  // timeout 0: a held lock is an answer, not something to wait for.
  const lock = new Database(dataPaths(dataDir).serverLock, { timeout: 0 });
  try {
    lock.pragma("locking_mode = EXCLUSIVE");
    lock.exec("BEGIN EXCLUSIVE");
  } catch (error) {
    lock.close();
    if (isBusy(error)) {
      throw new DataDirInUseError(`Another Wharf server is already running on the data directory ${dataDir}.`);
    }
    throw error;
  }
  return () => lock.close();
}

/**
 * The lock when no server holds it, else undefined: a command that may run beside the server
 * (`wharf gc`, `wharf storage`) works on the data directory itself only when none runs.
 */
export function lockDataDirIfFree(dataDir: string): (() => void) | undefined {
  try {
    return lockDataDir(dataDir);
  } catch (error) {
    if (error instanceof DataDirInUseError) return undefined;
    throw error;
  }
}
