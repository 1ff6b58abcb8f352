import { createHash, randomBytes } from "node:crypto";
import path from "node:path";
import type { Readable } from "node:stream";
import { Client, type ClientChannel, type ConnectConfig, type SFTPWrapper, type Stats } from "ssh2";
import { eachConcurrently } from "../domain/concurrently.js";
import { type Executor, ExecutorError, type FileStat, type ProcessInfo } from "./executor.js";

/**
 * The `ssh` transport (issue 13 section 3): the Executor over SSH, files through SFTP, with the
 * server's host key pinned (a different key refuses the connection: it is either a reinstalled
 * machine or someone in the middle, and only an administrator can tell which). Item paths are
 * confined under `root` on the target exactly as the local executor confines them: `..` is
 * refused, and the target's own realpath (SFTP REALPATH, which resolves symbolic links) must stay
 * inside the root's. Every SFTP request times out after `timeoutMs` (a long hash is many requests,
 * each bounded), the connection and authentication too. Neither the private key nor the password
 * is ever part of an error or log text.
 */
export interface SshExecutorOptions {
  readonly host: string;
  readonly port: number;
  readonly userName: string;
  /** OpenSSH or PEM private key text (without passphrase). */
  readonly privateKey?: string;
  readonly password?: string;
  /** The pinned host key: SHA-256, base64 without padding (a `SHA256:` prefix is accepted). */
  readonly hostKeySha256: string;
  /** Absolute directory on the target; created when missing. */
  readonly root: string;
  readonly timeoutMs: number;
  readonly description?: string;
}

/** SFTP status codes (draft-ietf-secsh-filexfer-02) that the executor tells apart. */
const NO_SUCH_FILE = 2;
const PERMISSION_DENIED = 3;
/** OpenSSH's largest read and write; ssh2 splits bigger requests anyway. */
const CHUNK_BYTES = 255 * 1024;
/** Files from this size are hashed by `sha256sum` on the target when it has one (see hashByExec). */
const EXEC_HASH_MIN_BYTES = 8 * 1024 * 1024;
/** Requests in flight at once when streaming a file (reads of a hash, writes of a content). */
const WINDOW = 8;
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;

/** OpenSSH's form of a host key fingerprint: SHA-256 of the key blob, base64 without padding. */
export function hostKeyFingerprint(key: Buffer): string {
  return createHash("sha256").update(key).digest("base64").replace(/=+$/, "");
}

function normalisedPin(pin: string): string {
  return pin
    .trim()
    .replace(/^SHA256:/, "")
    .replace(/=+$/, "");
}

/** Connects, reads the host key, disconnects: the SHA-256 fingerprint (base64, no padding, no "SHA256:" prefix). */
export async function fetchHostKeySha256(host: string, port: number, timeoutMs: number): Promise<string> {
  const client = new Client();
  let seen: string | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      client.on("error", (error) => (seen === undefined ? reject(error) : resolve()));
      client.once("close", () => (seen === undefined ? reject(new Error("the connection closed")) : resolve()));
      client.connect({
        host,
        port,
        username: "wharf",
        readyTimeout: timeoutMs,
        // Refusing the key ends the handshake before any authentication: nothing is sent but the key exchange.
        hostVerifier: (key: Buffer) => {
          seen = hostKeyFingerprint(key);
          resolve();
          return false;
        },
      });
    });
  } catch (error) {
    throw unreachable(`${host}:${port}`, error, timeoutMs);
  } finally {
    client.end();
  }
  if (seen === undefined) throw new ExecutorError("UNREACHABLE", `${host}:${port} did not show a host key`);
  return seen;
}

export async function openSshExecutor(options: SshExecutorOptions): Promise<Executor> {
  const where = `${options.host}:${options.port}`;
  const description = options.description ?? `ssh ${options.userName}@${where}`;
  if (!path.posix.isAbsolute(options.root) || options.root.includes("\0")) {
    throw new ExecutorError("FAILED", `${description}: the root '${options.root}' is not an absolute path`);
  }
  const client = await connect(options, where);
  try {
    const session = await openSftp(client, options.timeoutMs, description);
    return await createExecutor(client, session, options, description);
  } catch (error) {
    client.end();
    throw error;
  }
}

async function connect(options: SshExecutorOptions, where: string): Promise<Client> {
  const pinned = normalisedPin(options.hostKeySha256);
  const client = new Client();
  let seen: string | undefined;
  const config: ConnectConfig = {
    host: options.host,
    port: options.port,
    username: options.userName,
    readyTimeout: options.timeoutMs,
    hostVerifier: (key: Buffer) => {
      seen = hostKeyFingerprint(key);
      return seen === pinned;
    },
    ...(options.privateKey !== undefined && { privateKey: options.privateKey }),
    ...(options.password !== undefined && { password: options.password, tryKeyboard: true }),
  };
  if (options.password !== undefined) {
    // Servers that take passwords through PAM ask for them as keyboard-interactive prompts.
    const password = options.password;
    client.on("keyboard-interactive", (_name, _instructions, _language, prompts, finish) =>
      finish(prompts.map(() => password)),
    );
  }
  await new Promise<void>((resolve, reject) => {
    // Requests and answers are small packets: Nagle's algorithm against the server's delayed
    // acknowledgements made every round trip (handshake and SFTP) take 40 ms.
    client.once("connect", () => client.setNoDelay(true));
    client.once("ready", () => resolve());
    /** Why the login failed: the pinned key first (whatever ssh2 reports after refusing it). */
    const refusal = (error: unknown): ExecutorError => {
      if (seen !== undefined && seen !== pinned) {
        return new ExecutorError(
          "UNREACHABLE",
          `the host key of ${where} changed: it is now SHA256:${seen}, but SHA256:${pinned} is pinned for this server ` +
            "(a reinstalled machine, or someone in the middle: if the change is expected, pin the new key)",
        );
      }
      if ((error as { level?: string } | undefined)?.level === "client-authentication") {
        return new ExecutorError("UNREACHABLE", `${where} refused the credential of user '${options.userName}'`);
      }
      if (error === undefined) {
        return new ExecutorError("UNREACHABLE", `${where} closed the connection before the login completed`);
      }
      return unreachable(where, error, options.timeoutMs);
    };
    // `on`: an error after this promise settled (a reset connection) must not be an unhandled event.
    client.on("error", (error) => reject(refusal(error)));
    // A server that hangs up during the handshake may do so without an error (a no-op once settled).
    client.once("close", () => reject(refusal(undefined)));
    try {
      client.connect(config);
    } catch (error) {
      // ssh2 parses the key when connecting; its message names the problem, never the key.
      const reason = error instanceof Error ? error.message : String(error);
      reject(new ExecutorError("FAILED", `the private key for ${where} cannot be used: ${reason}`));
    }
  });
  return client;
}

function unreachable(where: string, error: unknown, timeoutMs: number): ExecutorError {
  const message = error instanceof Error ? error.message : String(error);
  if (/timed out/i.test(message)) {
    return new ExecutorError("UNREACHABLE", `${where} did not complete an SSH handshake within ${seconds(timeoutMs)}`, {
      cause: error,
    });
  }
  return new ExecutorError("UNREACHABLE", `cannot reach ${where} over SSH: ${message}`, { cause: error });
}

function seconds(ms: number): string {
  return `${Math.round(ms / 100) / 10} s`;
}

function openSftp(client: Client, timeoutMs: number, description: string): Promise<SFTPWrapper> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new ExecutorError("UNREACHABLE", `${description}: no SFTP session within ${seconds(timeoutMs)}`)),
      timeoutMs,
    );
    client.sftp((error, sftp) => {
      clearTimeout(timer);
      if (error)
        reject(
          new ExecutorError("UNREACHABLE", `${description}: the SFTP subsystem is not available: ${error.message}`),
        );
      else resolve(sftp);
    });
  });
}

type Callback<T> = (error: Error | null | undefined, value: T) => void;

async function createExecutor(
  client: Client,
  sftp: SFTPWrapper,
  options: SshExecutorOptions,
  description: string,
): Promise<Executor> {
  const { timeoutMs } = options;
  let closed = false;
  client.on("close", () => {
    closed = true;
  });
  // An 'error' event nobody listens to would end the whole process: the pending requests fail
  // (or time out) on their own, and the connection is done for.
  sftp.on("error", () => {
    closed = true;
    client.end();
  });

  /** One SFTP request, bounded: a request with no answer in time ends the connection (it is wedged). */
  function call<T>(doing: string, start: (callback: Callback<T>) => void): Promise<T> {
    if (closed) return Promise.reject(new ExecutorError("UNREACHABLE", `${description}: the connection is closed`));
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new ExecutorError("UNREACHABLE", `${description}: no answer within ${seconds(timeoutMs)} to ${doing}`));
        client.end();
      }, timeoutMs);
      try {
        start((error, value) => {
          clearTimeout(timer);
          if (error) reject(error);
          else resolve(value);
        });
      } catch (error) {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    });
  }

  /** An SFTP failure as an ExecutorError naming the item path (never content). */
  function failure(error: unknown, itemPath: string, doing: string): ExecutorError {
    if (error instanceof ExecutorError) return error;
    const code = (error as { code?: unknown }).code;
    if (code === NO_SUCH_FILE) return new ExecutorError("NOT_FOUND", `${itemPath}: no such file or directory`);
    if (closed)
      return new ExecutorError("UNREACHABLE", `${description}: the connection was lost while ${doing} ${itemPath}`);
    const reason =
      code === PERMISSION_DENIED ? "permission denied" : error instanceof Error ? error.message : String(error);
    return new ExecutorError("FAILED", `${doing} ${itemPath} failed on ${description}: ${reason}`, { cause: error });
  }

  const lstatRaw = (target: string) => call<Stats>(`lstat ${target}`, (cb) => sftp.lstat(target, cb));
  async function lstatOrUndefined(target: string): Promise<Stats | undefined> {
    try {
      return await lstatRaw(target);
    } catch (error) {
      if ((error as { code?: unknown }).code === NO_SUCH_FILE) return undefined;
      throw error;
    }
  }
  const realpathRaw = (target: string) => call<string>(`realpath ${target}`, (cb) => sftp.realpath(target, cb));

  // The root itself: created when missing (mkdir -p, no confinement: it is the boundary), then
  // resolved once, so that a root reached through a symbolic link compares as the target sees it.
  const root = path.posix.normalize(options.root).replace(/(.)\/$/, "$1");
  let realRoot = ""; // until resolved, just below
  await mkdirChain(root, undefined, "/");
  realRoot = await realpathRaw(root);
  const inside = (resolved: string) =>
    resolved === realRoot || resolved.startsWith(realRoot === "/" ? "/" : `${realRoot}/`);

  /** The target path of an item path, or OUTSIDE_ROOT for one that is not an absolute path without `..`. */
  function targetOf(itemPath: string): string {
    if (typeof itemPath !== "string" || !itemPath.startsWith("/") || itemPath.includes("\0")) {
      throw new ExecutorError("OUTSIDE_ROOT", `${String(itemPath)}: not an absolute path`);
    }
    if (itemPath.split("/").includes("..")) {
      throw new ExecutorError("OUTSIDE_ROOT", `${itemPath}: '..' is not allowed in a path`);
    }
    const relative = path.posix.normalize(itemPath).replace(/^\/+/, "");
    return relative === "" ? realRoot : path.posix.join(realRoot, relative);
  }

  /**
   * Where `target` really is, symbolic links resolved by the target itself; OUTSIDE_ROOT when that
   * leaves the root. A missing part ends the resolution at its closest existing ancestor (nothing
   * missing can be a link).
   */
  async function confined(itemPath: string, target: string): Promise<string> {
    let current = target;
    let rest = "";
    for (;;) {
      let resolved: string | undefined;
      try {
        resolved = await realpathRaw(current);
      } catch (error) {
        if ((error as { code?: unknown }).code !== NO_SUCH_FILE || current === realRoot)
          throw failure(error, itemPath, "resolving");
      }
      if (resolved !== undefined) {
        if (!inside(resolved)) {
          throw new ExecutorError(
            "OUTSIDE_ROOT",
            `${itemPath}: a symbolic link on this path leads outside the server's root`,
          );
        }
        return rest === "" ? resolved : path.posix.join(resolved, rest);
      }
      rest = rest === "" ? path.posix.basename(current) : path.posix.join(path.posix.basename(current), rest);
      current = path.posix.dirname(current);
    }
  }

  /** The entry's parent resolved inside the root, joined with the entry's own name (never followed). */
  async function confinedEntry(itemPath: string, target: string): Promise<string> {
    if (target === realRoot) return realRoot;
    const parent = await confined(itemPath, path.posix.dirname(target));
    return path.posix.join(parent, path.posix.basename(target));
  }

  /**
   * mkdir -p of `target` (symbolic links already resolved) below `base`, an existing directory;
   * `mode` applies to the directories it creates.
   */
  async function mkdirChain(target: string, mode: number | undefined, base: string, itemPath = target): Promise<void> {
    const missing: string[] = [];
    // From the deepest: usually the directory or its parent already exists.
    let existing = target;
    let stats: Stats | undefined;
    while (existing !== base && existing !== "/") {
      stats = await lstatOrUndefined(existing).catch((error: unknown) => {
        throw failure(error, itemPath, "reading");
      });
      if (stats !== undefined) break;
      missing.unshift(existing);
      existing = path.posix.dirname(existing);
    }
    if (stats !== undefined && (stats.mode & S_IFMT) !== S_IFDIR) {
      throw new ExecutorError("NOT_A_DIRECTORY", `${itemPath}: ${displayOf(existing)} is not a directory`);
    }
    for (const directory of missing) {
      try {
        await call<void>(`mkdir ${directory}`, (cb) =>
          sftp.mkdir(directory, mode === undefined ? {} : { mode }, (error) => cb(error, undefined)),
        );
      } catch (error) {
        // Made meanwhile by someone else: fine when it is a directory.
        const made = await lstatOrUndefined(directory).catch(() => undefined);
        if (made === undefined || (made.mode & S_IFMT) !== S_IFDIR)
          throw failure(error, itemPath, "creating the directory");
        continue;
      }
      // The server's umask narrowed the mode given to mkdir.
      if (mode !== undefined) await chmodRaw(directory, mode, itemPath);
    }
  }

  /** The item path of a target path inside the root, for messages. */
  function displayOf(target: string): string {
    if (realRoot === "") return target;
    return target === realRoot ? "/" : target.startsWith(`${realRoot}/`) ? target.slice(realRoot.length) : target;
  }

  async function chmodRaw(target: string, mode: number, itemPath: string): Promise<void> {
    await call<void>(`chmod ${target}`, (cb) =>
      sftp.chmod(target, mode & 0o7777, (error) => cb(error, undefined)),
    ).catch((error: unknown) => {
      throw failure(error, itemPath, "changing the mode of");
    });
  }

  const open = (target: string, flags: "r" | "wx", mode?: number) =>
    call<Buffer>(`open ${target}`, (cb) =>
      mode === undefined ? sftp.open(target, flags, cb) : sftp.open(target, flags, { mode }, cb),
    );
  const closeHandle = (handle: Buffer) =>
    call<void>("close", (cb) => sftp.close(handle, (error) => cb(error, undefined)));
  const readAt = (handle: Buffer, position: number, length: number) =>
    call<Buffer>("read", (cb) =>
      sftp.read(handle, Buffer.allocUnsafe(length), 0, length, position, (error, bytes, buffer) =>
        cb(error, buffer.subarray(0, bytes ?? 0)),
      ),
    );
  const writeAt = (handle: Buffer, data: Buffer, position: number) =>
    call<void>("write", (cb) => sftp.write(handle, data, 0, data.length, position, (error) => cb(error, undefined)));

  /**
   * The bytes of an open file in order, WINDOW reads in flight over the size it had when opened,
   * with one more read past that size sent along (no extra round trip): when it finds more (a file
   * that grew, or /proc's, whose size is 0), reading goes on to the end.
   */
  async function* chunksOf(handle: Buffer, size: number): AsyncGenerator<Buffer> {
    const queue: { position: number; length: number; probe: boolean; read: Promise<Buffer> }[] = [];
    let next = 0;
    let probeSent = false;
    const request = (position: number, length: number, probe = false) => {
      const read = readAt(handle, position, length);
      // Awaited in order; one that fails while an earlier one is awaited is not "unhandled".
      read.catch(() => undefined);
      return { position, length, probe, read };
    };
    try {
      for (;;) {
        while (queue.length < WINDOW && (next < size || !probeSent)) {
          if (next < size) {
            const length = Math.min(CHUNK_BYTES, size - next);
            queue.push(request(next, length));
            next += length;
          } else {
            queue.push(request(next, CHUNK_BYTES, true));
            probeSent = true;
          }
        }
        const head = queue.shift();
        if (head === undefined) return;
        const data = await head.read;
        if (data.length === 0) return; // the end: where expected (the probe), or it shrank
        yield data;
        if (head.probe) {
          next = head.position + data.length;
          break;
        }
        // A short read: ask for the rest before anything after it.
        if (data.length < head.length) queue.unshift(request(head.position + data.length, head.length - data.length));
      }
      for (;;) {
        const data = await readAt(handle, next, CHUNK_BYTES);
        if (data.length === 0) return;
        next += data.length;
        yield data;
      }
    } finally {
      // Requests still in flight when the reader stopped early: their results are dropped.
      await Promise.allSettled(queue.map((pending) => pending.read));
    }
  }

  async function withOpenFile<T>(
    itemPath: string,
    target: string,
    use: (handle: Buffer, size: number, resolved: string) => Promise<T>,
  ): Promise<T> {
    const resolved = await confined(itemPath, target);
    let handle: Buffer;
    try {
      handle = await open(resolved, "r");
    } catch (error) {
      throw failure(error, itemPath, "opening");
    }
    try {
      const stats = await call<Stats>("fstat", (cb) => sftp.fstat(handle, cb));
      if (stats.isDirectory()) throw new ExecutorError("FAILED", `${itemPath} is a directory, not a file`);
      return await use(handle, stats.size, resolved);
    } catch (error) {
      throw failure(error, itemPath, "reading");
    } finally {
      // Not awaited: nothing depends on it, and the next item's requests go out meanwhile.
      closeHandle(handle).catch(() => undefined);
    }
  }

  async function writeContent(handle: Buffer, content: Buffer | Readable): Promise<void> {
    const pending: Promise<void>[] = [];
    let position = 0;
    const send = async (data: Buffer) => {
      for (let offset = 0; offset < data.length; offset += CHUNK_BYTES) {
        const piece = data.subarray(offset, offset + CHUNK_BYTES);
        const written = writeAt(handle, piece, position);
        written.catch(() => undefined); // awaited below, in order
        pending.push(written);
        position += piece.length;
        if (pending.length >= WINDOW) await pending.shift();
      }
    };
    try {
      if (Buffer.isBuffer(content)) await send(content);
      else for await (const chunk of content) await send(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
      await Promise.all(pending);
    } finally {
      await Promise.allSettled(pending);
    }
  }

  async function removeTree(target: string, itemPath: string): Promise<void> {
    const entries = await call<{ filename: string; attrs: { mode: number } }[]>(`readdir ${target}`, (cb) =>
      sftp.readdir(target, cb),
    );
    for (const entry of entries) {
      if (entry.filename === "." || entry.filename === "..") continue;
      const child = path.posix.join(target, entry.filename);
      // readdir's attributes are lstat's: a link to a directory is removed, never followed.
      if ((entry.attrs.mode & S_IFMT) === S_IFDIR) await removeTree(child, itemPath);
      else await call<void>(`remove ${child}`, (cb) => sftp.unlink(child, (error) => cb(error, undefined)));
    }
    await call<void>(`rmdir ${target}`, (cb) => sftp.rmdir(target, (error) => cb(error, undefined)));
  }

  async function processesFromProc(): Promise<ProcessInfo[]> {
    const entries = await call<{ filename: string }[]>("readdir /proc", (cb) => sftp.readdir("/proc", cb));
    const pids = entries.map((entry) => entry.filename).filter((name) => /^\d+$/.test(name));
    const found: ProcessInfo[] = [];
    await eachConcurrently(pids, 16, async (pid) => {
      const command = await readProcFile(`/proc/${pid}/cmdline`).catch(() => undefined);
      // Kernel threads have no command line; a process that ended meanwhile has no file.
      if (command === undefined) return;
      const text = command.toString("utf8").replace(/\0+$/, "").replaceAll("\0", " ");
      if (text !== "") found.push({ pid: Number(pid), command: text });
    });
    return found.sort((a, b) => a.pid - b.pid);
  }

  async function readProcFile(file: string): Promise<Buffer> {
    const handle = await open(file, "r");
    try {
      const parts: Buffer[] = [];
      for await (const chunk of chunksOf(handle, 0)) parts.push(chunk);
      return Buffer.concat(parts);
    } finally {
      await closeHandle(handle).catch(() => undefined);
    }
  }

  /**
   * `sha256sum` run on the target: for big files about 3 times faster than streaming them over
   * SFTP (50 MiB: 0.34 s against 1.1 s), for small ones much slower (an exec costs 25 to 170 ms).
   * undefined when it cannot (no such command, another shell, too slow): SFTP then.
   */
  function hashByExec(resolved: string, size: number): Promise<string | undefined> {
    if (closed) return Promise.resolve(undefined);
    // The usual timeout, plus the time of reading the file at a slow 20 MB/s.
    const limitMs = timeoutMs + size / 20_000;
    return new Promise((resolve) => {
      let channel: ClientChannel | undefined;
      const done = (value: string | undefined) => {
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        channel?.close();
        done(undefined);
      }, limitMs);
      try {
        client.exec(`sha256sum -- ${shellQuoted(resolved)}`, (error, opened) => {
          if (error) return done(undefined);
          channel = opened;
          let output = "";
          opened.on("data", (chunk: Buffer) => {
            if (output.length < 4096) output += chunk.toString("utf8");
          });
          opened.stderr.resume();
          opened.on("close", (code: number | null) => {
            // A name with a backslash or newline makes sha256sum start the line with `\`.
            const match = /^\\?([0-9a-f]{64}) /m.exec(output);
            done(code === 0 && match ? match[1] : undefined);
          });
        });
      } catch {
        done(undefined);
      }
    });
  }

  async function processesFromPs(): Promise<ProcessInfo[]> {
    const output = await call<string>("ps", (cb) =>
      client.exec("ps -eo pid=,args=", (error, channel: ClientChannel) => {
        if (error) return cb(error, "");
        let text = "";
        channel.on("data", (chunk: Buffer) => {
          text += chunk.toString("utf8");
        });
        channel.stderr.resume();
        channel.on("close", (code: number | null) =>
          cb(code === 0 ? undefined : new Error(`ps exited with ${code}`), text),
        );
      }),
    );
    const found: ProcessInfo[] = [];
    for (const line of output.split("\n")) {
      const match = /^\s*(\d+)\s+(.*)$/.exec(line);
      // ps shows kernel threads as [name]: no command line, as /proc says.
      if (match && !/^\[.*\]$/.test(match[2] as string))
        found.push({ pid: Number(match[1]), command: match[2] as string });
    }
    return found;
  }

  return {
    description,

    async stat(itemPath) {
      const target = targetOf(itemPath);
      // Sent along with the parent's resolution (one round trip less per item): an lstat follows
      // no final link and changes nothing, and its answer is used only once the parent is known
      // to be inside the root.
      const looked = lstatOrUndefined(target);
      looked.catch(() => undefined);
      await confinedEntry(itemPath, target);
      const stats = await looked.catch((error: unknown) => {
        throw failure(error, itemPath, "reading");
      });
      return stats === undefined ? undefined : fileStatOf(stats);
    },

    async readFile(itemPath, maxBytes) {
      return withOpenFile(itemPath, targetOf(itemPath), async (handle, size) => {
        const tooLarge = () => new ExecutorError("TOO_LARGE", `${itemPath} is larger than ${maxBytes} bytes`);
        if (size > maxBytes) throw tooLarge();
        const parts: Buffer[] = [];
        let total = 0;
        for await (const chunk of chunksOf(handle, size)) {
          total += chunk.length;
          if (total > maxBytes) throw tooLarge();
          parts.push(chunk);
        }
        return Buffer.concat(parts, total);
      });
    },

    async hashFile(itemPath) {
      return withOpenFile(itemPath, targetOf(itemPath), async (handle, size, resolved) => {
        if (size >= EXEC_HASH_MIN_BYTES) {
          const hashed = await hashByExec(resolved, size);
          if (hashed !== undefined) return hashed;
        }
        const hash = createHash("sha256");
        for await (const chunk of chunksOf(handle, size)) hash.update(chunk);
        return hash.digest("hex");
      });
    },

    async writeFileAtomic(itemPath, content, mode) {
      const target = await confinedEntry(itemPath, targetOf(itemPath));
      if (target === realRoot) throw new ExecutorError("FAILED", `${itemPath}: the root is a directory`);
      const directory = path.posix.dirname(target);
      const existing = await lstatOrUndefined(target).catch((error: unknown) => {
        throw failure(error, itemPath, "reading");
      });
      if (existing !== undefined && (existing.mode & S_IFMT) === S_IFDIR) {
        throw new ExecutorError("FAILED", `${itemPath} is a directory, not a file`);
      }
      // Without a mode, a replaced file keeps its own; a new one gets the usual 0644.
      const finalMode =
        mode ?? (existing !== undefined && (existing.mode & S_IFMT) === S_IFREG ? existing.mode & 0o7777 : 0o644);
      const temporary = path.posix.join(
        directory,
        `.${path.posix.basename(target)}.wharf-${randomBytes(6).toString("hex")}.tmp`,
      );
      let handle: Buffer;
      try {
        handle = await open(temporary, "wx", 0o600);
      } catch (error) {
        if ((error as { code?: unknown }).code === NO_SUCH_FILE) {
          throw new ExecutorError("NOT_FOUND", `${itemPath}: the directory ${displayOf(directory)} does not exist`);
        }
        throw failure(error, itemPath, "writing");
      }
      let renamed = false;
      try {
        try {
          await writeContent(handle, content);
          await syncHandle(handle);
          await call<void>("fchmod", (cb) => sftp.fchmod(handle, finalMode, (error) => cb(error, undefined)));
        } finally {
          await closeHandle(handle);
        }
        await rename(temporary, target, existing !== undefined);
        renamed = true;
      } catch (error) {
        throw failure(error, itemPath, "writing");
      } finally {
        if (!renamed) {
          await call<void>("remove", (cb) => sftp.unlink(temporary, (error) => cb(error, undefined))).catch(
            () => undefined,
          );
        }
      }
    },

    async mkdir(itemPath, mode) {
      const resolved = await confined(itemPath, targetOf(itemPath));
      await mkdirChain(resolved, mode, realRoot, itemPath);
    },

    async remove(itemPath, removeOptions) {
      const target = await confinedEntry(itemPath, targetOf(itemPath));
      if (target === realRoot)
        throw new ExecutorError("FAILED", `${itemPath}: the server's root itself is never removed`);
      try {
        const stats = await lstatOrUndefined(target);
        if (stats === undefined) return;
        if ((stats.mode & S_IFMT) !== S_IFDIR) {
          await call<void>(`remove ${target}`, (cb) => sftp.unlink(target, (error) => cb(error, undefined)));
        } else if (removeOptions?.recursive === true) {
          await removeTree(target, itemPath);
        } else {
          await call<void>(`rmdir ${target}`, (cb) => sftp.rmdir(target, (error) => cb(error, undefined)));
        }
      } catch (error) {
        throw failure(error, itemPath, "removing");
      }
    },

    async chmod(itemPath, mode) {
      const resolved = await confined(itemPath, targetOf(itemPath));
      await chmodRaw(resolved, mode, itemPath);
    },

    async list(itemPath) {
      const resolved = await confined(itemPath, targetOf(itemPath));
      try {
        const stats = await call<Stats>(`stat ${resolved}`, (cb) => sftp.stat(resolved, cb));
        if (!stats.isDirectory()) throw new ExecutorError("NOT_A_DIRECTORY", `${itemPath} is not a directory`);
        const entries = await call<{ filename: string }[]>(`readdir ${resolved}`, (cb) => sftp.readdir(resolved, cb));
        return entries
          .map((entry) => entry.filename)
          .filter((name) => name !== "." && name !== "..")
          .sort();
      } catch (error) {
        throw failure(error, itemPath, "listing");
      }
    },

    async processes() {
      if (closed) throw new ExecutorError("UNREACHABLE", `${description}: the connection is closed`);
      // One `ps` is one round trip (~25 ms); /proc over SFTP is four per process. Either may be
      // missing (busybox's ps, a chrooted SFTP), hence both.
      for (const source of [processesFromPs, processesFromProc]) {
        try {
          return await source();
        } catch {
          if (closed) throw new ExecutorError("UNREACHABLE", `${description}: the connection was lost`);
        }
      }
      return undefined;
    },

    async close() {
      if (closed) return;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(timeoutMs, 2000));
        client.once("close", () => {
          clearTimeout(timer);
          resolve();
        });
        sftp.end();
        client.end();
      });
    },
  };

  /** fsync@openssh.com when the server has it: the bytes are on disk before the rename makes them the file. */
  async function syncHandle(handle: Buffer): Promise<void> {
    try {
      await call<void>("fsync", (cb) => sftp.ext_openssh_fsync(handle, (error) => cb(error, undefined)));
    } catch (error) {
      if (!/does not support/i.test(String(error))) throw error;
    }
  }

  /** posix-rename@openssh.com replaces the target in one step; plain SFTP rename refuses an existing one. */
  async function rename(from: string, to: string, replaces: boolean): Promise<void> {
    try {
      await call<void>("rename", (cb) => sftp.ext_openssh_rename(from, to, (error) => cb(error, undefined)));
      return;
    } catch (error) {
      if (!/does not support/i.test(String(error))) throw error;
    }
    if (replaces) await call<void>("remove", (cb) => sftp.unlink(to, (error) => cb(error, undefined)));
    await call<void>("rename", (cb) => sftp.rename(from, to, (error) => cb(error, undefined)));
  }
}

/** One argument for a POSIX shell, whatever it contains. */
function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

function fileStatOf(stats: Stats): FileStat {
  const type = stats.mode & S_IFMT;
  const kind = type === S_IFREG ? "file" : type === S_IFDIR ? "directory" : type === S_IFLNK ? "symlink" : "other";
  return { kind, size: stats.size, mode: stats.mode & 0o7777, mtimeMs: stats.mtime * 1000 };
}
