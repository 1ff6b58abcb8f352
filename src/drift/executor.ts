import type { Readable } from "node:stream";

/**
 * Everything an item type may do to a target machine (issue 13 section 3): one interface, three
 * transports (local-executor.ts on the Wharf host, the same local executor run by `wharf agent` on
 * the target, ssh-executor.ts over SFTP), so that each item type is written once.
 *
 * Paths are the item's own: absolute POSIX paths as the target sees them *inside its root*
 * (`/etc/app.conf` on a server rooted at /srv/web1 is /srv/web1/etc/app.conf). Every
 * implementation maps them under its root and refuses, with ExecutorError OUTSIDE_ROOT, any path
 * that would leave it: `..` segments, and symbolic links (anywhere on the path) that resolve
 * outside the root. Item paths are validated before they get here; the executor checks again.
 */
export interface Executor {
  /** For logs and error texts: `local /srv/web1`, `agent web-3`, `ssh deploy@10.0.0.5:22`. */
  readonly description: string;
  /** The entry at `path` without following a final symbolic link; undefined when there is none. */
  stat(path: string): Promise<FileStat | undefined>;
  /** The file's bytes; ExecutorError TOO_LARGE beyond `maxBytes`. */
  readFile(path: string, maxBytes: number): Promise<Buffer>;
  /** SHA-256 of the file's bytes, lowercase hex; streamed, any size. */
  hashFile(path: string): Promise<string>;
  /**
   * Writes the file whole or not at all: to a temporary file in the same directory, flushed, then
   * renamed over `path` (a symbolic link at `path` is replaced, never followed). The parent
   * directory must exist. `mode` (permission bits) is applied before the rename.
   */
  writeFileAtomic(path: string, content: Buffer | Readable, mode?: number): Promise<void>;
  /** Creates the directory and any missing parents (like mkdir -p); `mode` applies to those it creates. */
  mkdir(path: string, mode?: number): Promise<void>;
  /** Removes a file, link or (with recursive) a directory tree; nothing there is not an error. */
  remove(path: string, options?: { readonly recursive?: boolean }): Promise<void>;
  chmod(path: string, mode: number): Promise<void>;
  /** Names of the entries of a directory (not recursive), sorted. */
  list(path: string): Promise<string[]>;
  /** Running processes, or undefined where the transport cannot tell (then `process` items are unknown). */
  processes(): Promise<ProcessInfo[] | undefined>;
  /** Releases connections; the executor is not used afterwards. */
  close(): Promise<void>;
}

export interface FileStat {
  readonly kind: "file" | "directory" | "symlink" | "other";
  readonly size: number;
  /** Permission bits only (mode & 0o7777). */
  readonly mode: number;
  readonly mtimeMs: number;
}

export interface ProcessInfo {
  readonly pid: number;
  /** The command line, arguments joined by single spaces. */
  readonly command: string;
}

export type ExecutorErrorCode =
  "OUTSIDE_ROOT" | "NOT_FOUND" | "NOT_A_DIRECTORY" | "TOO_LARGE" | "UNREACHABLE" | "FAILED";

/** What an executor throws; `message` names the item path (never content) and says what went wrong. */
export class ExecutorError extends Error {
  override readonly name = "ExecutorError";
  constructor(
    readonly code: ExecutorErrorCode,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
