import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.js";

/**
 * A real OpenSSH server for the SSH transport's tests (issue 13 section 5): Debian's sshd on
 * 127.0.0.1 and a free port, with its own throwaway host key, client key and config, running as an
 * unprivileged user (then only that user can log in, which is all a test needs). Tests run as
 * root here and in CI: sshd then runs as the dedicated user `wharf-ssh` (created here when
 * missing, and by .ci/run), which has no shell rc files, so that an `exec` does not pay for a
 * login profile (research next-areas.md 1.5.7: root's profile made each exec take seconds).
 * Start-up is ~50 ms of sshd plus two ssh-keygen runs.
 */
export const SSHD = "/usr/sbin/sshd";
const SSH_KEYGEN = "/usr/bin/ssh-keygen";
const TEST_USER = "wharf-ssh";
const run = promisify(execFile);

export interface SshServer {
  readonly host: string;
  readonly port: number;
  /** The only user that can log in. */
  readonly userName: string;
  /** OpenSSH private key text of the authorised client key. */
  readonly privateKey: string;
  /** The server's host key: SHA-256, base64 without padding or `SHA256:` prefix. */
  readonly hostKeySha256: string;
  /** An empty directory owned by `userName`: the target root for executors. */
  readonly root: string;
  /** The user's uid and gid, for files a test creates in `root` from outside. */
  readonly uid: number;
  readonly gid: number;
  stop(): Promise<void>;
}

/** Why sshd cannot run here, or undefined when it can. */
export function sshdUnavailableReason(): string | undefined {
  if (!existsSync(SSHD)) return `${SSHD} is missing: install Debian's openssh-server (.ci/run does)`;
  if (!existsSync(SSH_KEYGEN)) return `${SSH_KEYGEN} is missing: install Debian's openssh-client`;
  return undefined;
}

/**
 * The SSH tests run unless sshd is missing outside CI (a developer machine without
 * openssh-server); in CI (CI=true) they always run, and fail in startSshd with the reason.
 */
export const skipSshTests = sshdUnavailableReason() !== undefined && process.env.CI !== "true";

export interface SshdOptions {
  /**
   * Also log in with this password. Only sshd run as root can check passwords (it reads the
   * shadow file), so then sshd runs as root (still only `wharf-ssh` may log in), and the user's
   * password is set for the run and locked again ('*') by stop(). Needs root.
   */
  readonly password?: string;
}

export async function startSshd(options: SshdOptions = {}): Promise<SshServer> {
  const unavailable = sshdUnavailableReason();
  if (unavailable !== undefined) throw new Error(`The SSH tests need a real OpenSSH server: ${unavailable}`);
  const account = await runAccount();
  if (options.password !== undefined) await setPassword(account, options.password);
  const base = await mkdtemp(path.join(os.tmpdir(), "wharf-sshd-"));
  try {
    await chmod(base, 0o755);
    const root = path.join(base, "root");
    await mkdir(root);
    const hostKey = path.join(base, "host_ed25519");
    const clientKey = path.join(base, "client_ed25519");
    await Promise.all([keygen(hostKey), keygen(clientKey)]);
    const [hostPublic, clientPublic, privateKey] = await Promise.all([
      readFile(`${hostKey}.pub`, "utf8"),
      readFile(`${clientKey}.pub`, "utf8"),
      readFile(clientKey, "utf8"),
    ]);
    const authorizedKeys = path.join(base, "authorized_keys");
    await writeFile(authorizedKeys, clientPublic, { mode: 0o600 });
    if (account.uid !== process.getuid?.()) {
      for (const file of [base, root, hostKey, `${hostKey}.pub`, authorizedKeys]) {
        await chown(file, account.uid, account.gid);
      }
    }
    const { child, port } = await listen(base, account, { hostKey, authorizedKeys }, options);
    return {
      host: "127.0.0.1",
      port,
      userName: account.name,
      privateKey,
      hostKeySha256: fingerprintOf(hostPublic),
      root,
      uid: account.uid,
      gid: account.gid,
      async stop() {
        await stopChild(child);
        if (options.password !== undefined) await run("usermod", ["-p", "*", account.name]);
        await rm(base, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await rm(base, { recursive: true, force: true });
    throw error;
  }
}

/** A fresh key pair in OpenSSH format that no server authorises (a wrong credential). */
export async function throwawayPrivateKey(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "wharf-key-"));
  try {
    await keygen(path.join(dir, "key"));
    return await readFile(path.join(dir, "key"), "utf8");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** SHA-256 of an OpenSSH public key line's key blob, as `ssh-keygen -l` prints it (without `SHA256:`). */
export function fingerprintOf(publicKeyLine: string): string {
  const blob = publicKeyLine.trim().split(/\s+/)[1] ?? "";
  return createHash("sha256").update(Buffer.from(blob, "base64")).digest("base64").replace(/=+$/, "");
}

interface Account {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

/** Root runs sshd as the dedicated test user (created when missing); anyone else as themselves. */
async function runAccount(): Promise<Account> {
  const uid = process.getuid?.() ?? -1;
  if (uid !== 0) {
    return { name: os.userInfo().username, uid, gid: process.getgid?.() ?? -1 };
  }
  let entry = await passwdEntry(TEST_USER);
  if (entry === undefined) {
    // No home and /bin/sh (no rc files for non-interactive commands); '*' (not '!') in the shadow
    // file, or sshd takes the account for locked.
    await run("useradd", [
      "--system",
      "--no-create-home",
      "--home-dir",
      "/nonexistent",
      "--shell",
      "/bin/sh",
      TEST_USER,
    ]);
    await run("usermod", ["-p", "*", TEST_USER]);
    entry = await passwdEntry(TEST_USER);
    if (entry === undefined) throw new Error(`useradd did not create the user ${TEST_USER}`);
  }
  return entry;
}

/** A password for the test user, for a root sshd; its privilege separation directory too. */
async function setPassword(account: Account, password: string): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error("sshd checks passwords only when run as root: run the test as root");
  await mkdir("/run/sshd", { recursive: true, mode: 0o755 });
  await new Promise<void>((resolve, reject) => {
    const child = spawn("chpasswd", [], { stdio: ["pipe", "ignore", "pipe"] });
    let error = "";
    child.stderr.on("data", (chunk: Buffer) => (error += chunk.toString()));
    child.once("error", reject);
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`chpasswd failed: ${error}`))));
    child.stdin.end(`${account.name}:${password}\n`);
  });
}

async function passwdEntry(name: string): Promise<Account | undefined> {
  const passwd = await readFile("/etc/passwd", "utf8");
  for (const line of passwd.split("\n")) {
    const [user, , uid, gid] = line.split(":");
    if (user === name) return { name, uid: Number(uid), gid: Number(gid) };
  }
  return undefined;
}

async function keygen(file: string): Promise<void> {
  await run(SSH_KEYGEN, ["-q", "-t", "ed25519", "-N", "", "-C", "wharf-test", "-f", file]);
}

async function listen(
  base: string,
  account: Account,
  files: { hostKey: string; authorizedKeys: string },
  options: SshdOptions,
): Promise<{ child: ChildProcess; port: number }> {
  let lastError: unknown;
  // Another process may take the free port between the probe and sshd's bind: try another.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const config = path.join(base, "sshd_config");
    const password = options.password !== undefined ? "yes" : "no";
    await writeFile(
      config,
      [
        `ListenAddress 127.0.0.1:${port}`,
        `HostKey ${files.hostKey}`,
        `PidFile ${path.join(base, "sshd.pid")}`,
        `AuthorizedKeysFile ${files.authorizedKeys}`,
        `AllowUsers ${account.name}`,
        "UsePAM no",
        "StrictModes no",
        "PubkeyAuthentication yes",
        `PasswordAuthentication ${password}`,
        "KbdInteractiveAuthentication no",
        "PermitRootLogin no",
        "UseDNS no",
        "PrintMotd no",
        "LoginGraceTime 20",
        "Subsystem sftp internal-sftp",
        "",
      ].join("\n"),
    );
    if (account.uid !== process.getuid?.()) await chown(config, account.uid, account.gid);
    // -D: no daemon, -e: log to stderr, where "Server listening" says it is ready.
    const asRoot = options.password !== undefined;
    const child = spawn(SSHD, ["-D", "-e", "-f", config], {
      ...(!asRoot && { uid: account.uid, gid: account.gid }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    try {
      await ready(child, port);
      return { child, port };
    } catch (error) {
      lastError = error;
      await stopChild(child);
      if (!String(error).includes("Address already in use")) break;
    }
  }
  throw lastError;
}

function ready(child: ChildProcess, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(() => fail(new Error(`sshd did not listen within 10 s: ${output}`)), 10_000);
    const fail = (error: Error) => {
      clearTimeout(timer);
      reject(error);
    };
    child.once("error", (error) => fail(new Error(`sshd did not start: ${error.message}`)));
    child.once("exit", (code, signal) => fail(new Error(`sshd exited (${code ?? signal}): ${output.trim()}`)));
    child.stderr?.on("data", (chunk: Buffer) => {
      // Keep only the start: sshd logs every connection here for as long as it runs.
      if (output.length < 8192) output += chunk.toString();
      if (output.includes(`Server listening on 127.0.0.1 port ${port}`)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await exited;
}
