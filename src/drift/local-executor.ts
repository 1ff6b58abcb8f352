/**
 * The Executor on this machine's own filesystem (issue 13 section 3): `local` servers on the Wharf
 * host, and `wharf agent` on its target. Every item path is mapped under `root` and may not leave
 * it: `..` is refused outright, and symbolic links are allowed only where they resolve inside the
 * root, whether they are the entry itself or any directory on the way to it (each is resolved with
 * realpath and compared with the real root). Files are opened with O_NOFOLLOW once resolved, so a
 * link swapped in between the check and the open fails instead of being followed.
 *
 * Writes go to a temporary file beside the destination, are flushed and renamed over it: a reader
 * never sees half a file, and a link at the destination is replaced, never written through.
 */
import { createHash, randomUUID } from "node:crypto";
import { constants, type Stats } from "node:fs";
import {
  chmod,
  type FileHandle,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  rmdir,
  unlink,
} from "node:fs/promises";
import path from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { isInside } from "../storage/path-containment.js";
import { type Executor, ExecutorError, type FileStat, type ProcessInfo } from "./executor.js";

const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;
// A FIFO put where a file is expected must not hang the open; regular files ignore the flag.
const NON_BLOCKING = constants.O_NONBLOCK ?? 0;
const DEFAULT_FILE_MODE = 0o644;
const DEFAULT_DIRECTORY_MODE = 0o755;

export interface LocalExecutorOptions {
  /** For logs and error texts; default `local <root>`. */
  readonly description?: string;
  /** Where package items spool the .upack files they install; default the system's temporary directory. */
  readonly tempDir?: string;
}

/** Confined to `root` (absolute; created if missing). */
export async function createLocalExecutor(root: string, options: LocalExecutorOptions = {}): Promise<Executor> {
  if (!path.isAbsolute(root)) throw new ExecutorError("FAILED", `The root ${root} is not an absolute path.`);
  await mkdir(root, { recursive: true });
  const realRoot = await realpath(root);
  return new LocalExecutor(realRoot, options.description ?? `local ${root}`, options.tempDir);
}

/** An existing directory or entry, resolved: `real` is inside the root; `missing` are the names below it that do not exist. */
interface Resolved {
  readonly real: string;
  readonly missing: readonly string[];
}

class LocalExecutor implements Executor {
  constructor(
    private readonly root: string,
    readonly description: string,
    /** Read by package items (items/package.ts spoolDirectory) for their downloads. */
    readonly tempDir: string | undefined,
  ) {}

  async stat(itemPath: string): Promise<FileStat | undefined> {
    const entry = await this.#entryPath(itemPath);
    if (entry === undefined) return undefined;
    try {
      return toFileStat(await lstat(entry));
    } catch (error) {
      if (isMissing(error)) return undefined;
      throw this.#failure(itemPath, error);
    }
  }

  async readFile(itemPath: string, maxBytes: number): Promise<Buffer> {
    const handle = await this.#openFile(itemPath);
    try {
      const { size } = await handle.stat();
      if (size > maxBytes) throw new ExecutorError("TOO_LARGE", `${itemPath} is ${size} bytes, over ${maxBytes}.`);
      const bytes = await handle.readFile();
      if (bytes.length > maxBytes) throw new ExecutorError("TOO_LARGE", `${itemPath} grew past ${maxBytes} bytes.`);
      return bytes;
    } finally {
      await handle.close();
    }
  }

  async hashFile(itemPath: string): Promise<string> {
    const handle = await this.#openFile(itemPath);
    const hash = createHash("sha256");
    try {
      const { size } = await handle.stat();
      // Small files in one read: a check of 1,000 files is mostly this call.
      if (size <= 1024 * 1024) hash.update(await handle.readFile());
      else await pipeline(handle.createReadStream({ autoClose: false, start: 0 }), hash);
    } catch (error) {
      throw this.#failure(itemPath, error);
    } finally {
      await handle.close();
    }
    return hash.digest("hex");
  }

  async writeFileAtomic(itemPath: string, content: Buffer | Readable, mode?: number): Promise<void> {
    const { parent, name } = await this.#existingParent(itemPath);
    const destination = path.join(parent, name);
    const keptMode = mode ?? (await existingFileMode(destination)) ?? DEFAULT_FILE_MODE;
    const temporary = path.join(parent, `.wharf-${randomUUID()}.tmp`);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NO_FOLLOW, 0o600);
      if (Buffer.isBuffer(content)) await handle.writeFile(content);
      else for await (const chunk of content) await handle.write(chunk as Buffer);
      await handle.chmod(keptMode & 0o7777);
      await handle.sync();
      await handle.close();
      handle = undefined;
      await rename(temporary, destination);
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temporary, { force: true });
      throw this.#failure(itemPath, error);
    }
  }

  async mkdir(itemPath: string, mode = DEFAULT_DIRECTORY_MODE): Promise<void> {
    // Walked one name at a time: each existing step is resolved (a link must stay inside), each
    // missing one created and given `mode` whatever the umask.
    let current = this.root;
    for (const name of this.#segments(itemPath)) {
      const next = path.join(current, name);
      try {
        await mkdir(next, { mode });
        await chmodNoFollow(next, mode);
        current = next;
        continue;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw this.#failure(itemPath, error);
      }
      const real = await this.#realInside(itemPath, next);
      const stats = await lstat(real);
      if (!stats.isDirectory()) throw new ExecutorError("NOT_A_DIRECTORY", `${itemPath}: ${name} is not a directory.`);
      current = real;
    }
  }

  async remove(itemPath: string, options: { readonly recursive?: boolean } = {}): Promise<void> {
    const entry = await this.#entryPath(itemPath);
    if (entry === undefined) return;
    if (entry === this.root) throw new ExecutorError("FAILED", `${itemPath}: the root itself cannot be removed.`);
    try {
      const stats = await lstat(entry);
      // A link is removed itself, never what it points to; rm does not follow links inside a tree.
      if (!stats.isDirectory()) await unlink(entry);
      else if (options.recursive) await rm(entry, { recursive: true, force: true });
      else await rmdir(entry);
    } catch (error) {
      if (isMissing(error)) return;
      throw this.#failure(itemPath, error);
    }
  }

  async chmod(itemPath: string, mode: number): Promise<void> {
    const real = await this.#existing(itemPath);
    try {
      await chmodNoFollow(real, mode);
    } catch (error) {
      throw this.#failure(itemPath, error);
    }
  }

  async list(itemPath: string): Promise<string[]> {
    const real = await this.#existing(itemPath);
    try {
      return (await readdir(real)).sort();
    } catch (error) {
      throw this.#failure(itemPath, error);
    }
  }

  async processes(): Promise<ProcessInfo[] | undefined> {
    return readProcesses();
  }

  async close(): Promise<void> {}

  /** The item path's names, checked: absolute, no NUL, no `..` (OUTSIDE_ROOT). */
  #segments(itemPath: string): string[] {
    if (typeof itemPath !== "string" || !itemPath.startsWith("/") || itemPath.includes("\0")) {
      throw new ExecutorError("OUTSIDE_ROOT", `${JSON.stringify(itemPath)} is not an absolute path.`);
    }
    const segments = itemPath.split("/").filter((segment) => segment !== "" && segment !== ".");
    if (segments.includes("..")) throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: '..' is not allowed.`);
    return segments;
  }

  /** The longest existing prefix of the path, resolved, with the names below it that are missing. */
  async #resolve(itemPath: string, segments: readonly string[]): Promise<Resolved> {
    for (let length = segments.length; length >= 0; length--) {
      const candidate = path.join(this.root, ...segments.slice(0, length));
      let real: string;
      try {
        real = await realpath(candidate);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR") continue;
        if (code === "ELOOP") throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: a symbolic link loops.`);
        throw this.#failure(itemPath, error);
      }
      if (!isInside(this.root, real)) {
        throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: a symbolic link on the path leads outside the root.`);
      }
      return { real, missing: segments.slice(length) };
    }
    throw new ExecutorError("FAILED", `${itemPath}: the root ${this.root} is gone.`);
  }

  /** The real path of an existing entry (links resolved, inside the root); NOT_FOUND when missing. */
  async #existing(itemPath: string): Promise<string> {
    const resolved = await this.#resolve(itemPath, this.#segments(itemPath));
    if (resolved.missing.length > 0) throw new ExecutorError("NOT_FOUND", `${itemPath} does not exist.`);
    return resolved.real;
  }

  async #realInside(itemPath: string, candidate: string): Promise<string> {
    let real: string;
    try {
      real = await realpath(candidate);
    } catch (error) {
      // A dangling link: where it points cannot be checked, so it is not followed.
      if (isMissing(error))
        throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: a symbolic link on the path dangles.`);
      throw this.#failure(itemPath, error);
    }
    if (!isInside(this.root, real)) {
      throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: a symbolic link on the path leads outside the root.`);
    }
    return real;
  }

  /** The entry itself (a final link not followed) under its resolved parent; undefined when the parent is missing. */
  async #entryPath(itemPath: string): Promise<string | undefined> {
    const segments = this.#segments(itemPath);
    if (segments.length === 0) return this.root;
    const parent = await this.#resolve(itemPath, segments.slice(0, -1));
    if (parent.missing.length > 0) return undefined;
    return path.join(parent.real, segments[segments.length - 1] ?? "");
  }

  async #existingParent(itemPath: string): Promise<{ parent: string; name: string }> {
    const segments = this.#segments(itemPath);
    const name = segments[segments.length - 1];
    if (name === undefined) throw new ExecutorError("FAILED", `${itemPath}: the root is not a file.`);
    const parent = await this.#resolve(itemPath, segments.slice(0, -1));
    if (parent.missing.length > 0) {
      throw new ExecutorError(
        "NOT_FOUND",
        `${itemPath}: the directory ${path.posix.dirname(itemPath)} does not exist.`,
      );
    }
    return { parent: parent.real, name };
  }

  /** A regular file opened for reading: links resolved and checked, then opened without following any. */
  async #openFile(itemPath: string): Promise<FileHandle> {
    const real = await this.#existing(itemPath);
    let handle: FileHandle;
    try {
      handle = await open(real, constants.O_RDONLY | NO_FOLLOW | NON_BLOCKING);
    } catch (error) {
      throw this.#failure(itemPath, error);
    }
    const stats = await handle.stat();
    if (!stats.isFile()) {
      await handle.close();
      throw new ExecutorError("FAILED", `${itemPath} is not a regular file.`);
    }
    return handle;
  }

  #failure(itemPath: string, error: unknown): ExecutorError {
    if (error instanceof ExecutorError) return error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return new ExecutorError("NOT_FOUND", `${itemPath} does not exist.`, { cause: error });
    if (code === "ENOTDIR") {
      return new ExecutorError("NOT_A_DIRECTORY", `${itemPath}: a part of the path is not a directory.`, {
        cause: error,
      });
    }
    if (code === "ELOOP") {
      return new ExecutorError("OUTSIDE_ROOT", `${itemPath}: a symbolic link appeared on the path.`, { cause: error });
    }
    if (code === "EISDIR") return new ExecutorError("FAILED", `${itemPath} is a directory.`, { cause: error });
    return new ExecutorError("FAILED", `${itemPath}: ${code ?? (error as Error).message}.`, { cause: error });
  }
}

/** chmod of a resolved path that must not be a link: through a descriptor opened with O_NOFOLLOW, else after lstat. */
async function chmodNoFollow(real: string, mode: number): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(real, constants.O_RDONLY | NO_FOLLOW | NON_BLOCKING);
  } catch (error) {
    // No read permission (mode 0000, a directory we may not list): chmod by path once lstat says no link.
    if ((error as NodeJS.ErrnoException).code !== "EACCES") throw error;
    const stats = await lstat(real);
    if (stats.isSymbolicLink()) throw new ExecutorError("OUTSIDE_ROOT", "a symbolic link appeared on the path.");
    await chmod(real, mode & 0o7777);
    return;
  }
  try {
    await handle.chmod(mode & 0o7777);
  } finally {
    await handle.close();
  }
}

async function existingFileMode(destination: string): Promise<number | undefined> {
  try {
    const stats = await lstat(destination);
    return stats.isFile() ? stats.mode & 0o7777 : undefined;
  } catch {
    return undefined;
  }
}

function toFileStat(stats: Stats): FileStat {
  const kind = stats.isFile()
    ? "file"
    : stats.isDirectory()
      ? "directory"
      : stats.isSymbolicLink()
        ? "symlink"
        : "other";
  return { kind, size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtimeMs };
}

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** Linux: every /proc/<pid>/cmdline (NUL-separated arguments); undefined where there is no /proc. */
export async function readProcesses(): Promise<ProcessInfo[] | undefined> {
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return undefined;
  }
  const processes: ProcessInfo[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const raw = await readFile(`/proc/${entry}/cmdline`);
      const command = raw.toString("utf8").replace(/\0+$/, "").split("\0").join(" ");
      if (command !== "") processes.push({ pid: Number(entry), command });
    } catch {
      // The process ended while we looked.
    }
  }
  return processes;
}
