import { createHash } from "node:crypto";
import { chmod, chown, lstat, mkdir, readFile, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Executor, ExecutorError } from "../../src/drift/executor.js";
import { fetchHostKeySha256, openSshExecutor, type SshExecutorOptions } from "../../src/drift/ssh-executor.js";
import { skipSshTests, startSshd, type SshServer, throwawayPrivateKey } from "../helpers/sshd.js";

/**
 * The `ssh` transport against a real OpenSSH server on loopback (issue 13 section 5), run as an
 * unprivileged user with throwaway keys: every Executor operation round-trips on the target's disk,
 * which the test reads and changes from outside; paths that leave the root, a changed host key
 * and a wrong credential are refused; operations on a connection that stops answering end in time.
 */
describe.skipIf(skipSshTests)("ssh executor against OpenSSH", () => {
  let sshd: SshServer;
  let executor: Executor;
  let outside: string;

  const options = (overrides: Partial<SshExecutorOptions> = {}): SshExecutorOptions => ({
    host: sshd.host,
    port: sshd.port,
    userName: sshd.userName,
    privateKey: sshd.privateKey,
    hostKeySha256: sshd.hostKeySha256,
    root: path.join(sshd.root, "srv"),
    timeoutMs: 5000,
    ...overrides,
  });
  const onDisk = (itemPath: string) => path.join(sshd.root, "srv", itemPath);
  /** A file or directory made from outside (as root): handed to the SSH user, as a deployment would leave it. */
  const own = (file: string) => chown(file, sshd.uid, sshd.gid);

  beforeAll(async () => {
    sshd = await startSshd();
    executor = await openSshExecutor(options());
    outside = path.join(sshd.root, "outside");
    await mkdir(outside);
    await writeFile(path.join(outside, "secret.txt"), "not yours\n");
    await own(outside);
  });
  afterAll(async () => {
    await executor?.close();
    await sshd?.stop();
  });

  it("creates its root when missing and describes itself", async () => {
    expect((await stat(onDisk("/"))).isDirectory()).toBe(true);
    expect(executor.description).toBe(`ssh ${sshd.userName}@127.0.0.1:${sshd.port}`);
  });

  it("writes atomically, reads, hashes and stats files byte for byte", async () => {
    const content = Buffer.from("port=8080\nname=web\n");
    await executor.mkdir("/etc/app", 0o750);
    await executor.writeFileAtomic("/etc/app/app.conf", content, 0o640);
    expect(await readFile(onDisk("/etc/app/app.conf"))).toEqual(content);
    expect((await stat(onDisk("/etc/app/app.conf"))).mode & 0o7777).toBe(0o640);
    expect((await stat(onDisk("/etc/app"))).mode & 0o7777).toBe(0o750);
    expect(await executor.readFile("/etc/app/app.conf", 1024)).toEqual(content);
    expect(await executor.hashFile("/etc/app/app.conf")).toBe(createHash("sha256").update(content).digest("hex"));
    const fileStat = await executor.stat("/etc/app/app.conf");
    expect(fileStat).toMatchObject({ kind: "file", size: content.length, mode: 0o640 });
    expect(Math.abs((fileStat?.mtimeMs ?? 0) - Date.now())).toBeLessThan(60_000);
    expect(await executor.stat("/etc/app")).toMatchObject({ kind: "directory", mode: 0o750 });
    expect(await executor.stat("/etc/app/missing.conf")).toBeUndefined();
    expect(await executor.stat("/no/such/dir/file")).toBeUndefined();
    // No temporary file is left behind.
    expect(await executor.list("/etc/app")).toEqual(["app.conf"]);
  });

  it("replaces an existing file whole, keeping its mode when none is given", async () => {
    await executor.writeFileAtomic("/replace.txt", Buffer.from("first version, longer than the second\n"), 0o600);
    await executor.writeFileAtomic("/replace.txt", Buffer.from("second\n"));
    expect(await readFile(onDisk("/replace.txt"), "utf8")).toBe("second\n");
    expect((await stat(onDisk("/replace.txt"))).mode & 0o7777).toBe(0o600);
    await executor.writeFileAtomic("/new-default.txt", Buffer.from("x"));
    expect((await stat(onDisk("/new-default.txt"))).mode & 0o7777).toBe(0o644);
  });

  it("streams large contents both ways (hash and write of 3 MiB from a stream)", async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 17);
    for (let i = 0; i < big.length; i++) big[i] = (i * 7919) & 0xff;
    const pieces = Array.from({ length: 50 }, (_, i) =>
      big.subarray(Math.floor((i * big.length) / 50), Math.floor(((i + 1) * big.length) / 50)),
    );
    await executor.writeFileAtomic("/big.bin", Readable.from(pieces), 0o644);
    expect((await readFile(onDisk("/big.bin"))).equals(big)).toBe(true);
    expect(await executor.hashFile("/big.bin")).toBe(createHash("sha256").update(big).digest("hex"));
    expect((await executor.readFile("/big.bin", big.length)).equals(big)).toBe(true);
    await expect(executor.readFile("/big.bin", 1024)).rejects.toMatchObject({ code: "TOO_LARGE" });
  });

  it("hashes big files with sha256sum on the target, a hostile name staying one argument", async () => {
    const marker = path.join(os.tmpdir(), `wharf-injected-${process.pid}`);
    const directory = `/x'$(touch ${marker})'; touch ${marker}; '`;
    const big = Buffer.alloc(9 * 1024 * 1024, 0x5a);
    big.write("different start");
    await executor.mkdir(directory);
    await executor.writeFileAtomic(`${directory}/big file.bin`, big);
    expect(await executor.hashFile(`${directory}/big file.bin`)).toBe(createHash("sha256").update(big).digest("hex"));
    await expect(lstat(marker)).rejects.toMatchObject({ code: "ENOENT" });
    await executor.remove(directory.split("/").slice(0, 2).join("/"), { recursive: true });
  });

  it("sees drift made from outside", async () => {
    await executor.writeFileAtomic("/drift.txt", Buffer.from("desired\n"), 0o644);
    await writeFile(onDisk("/drift.txt"), "changed by hand\n");
    await chmod(onDisk("/drift.txt"), 0o666);
    expect(await executor.readFile("/drift.txt", 100)).toEqual(Buffer.from("changed by hand\n"));
    expect(await executor.stat("/drift.txt")).toMatchObject({ mode: 0o666, size: 16 });
  });

  it("makes directories with parents, lists sorted, chmods and removes", async () => {
    await executor.mkdir("/var/lib/app/data", 0o700);
    await executor.mkdir("/var/lib/app/data"); // already there: nothing to do
    for (const name of ["b", "a", "c.txt"]) await executor.writeFileAtomic(`/var/lib/app/${name}`, Buffer.from(name));
    expect(await executor.list("/var/lib/app")).toEqual(["a", "b", "c.txt", "data"]);
    await executor.chmod("/var/lib/app/a", 0o604);
    expect((await stat(onDisk("/var/lib/app/a"))).mode & 0o7777).toBe(0o604);
    await executor.remove("/var/lib/app/a");
    await executor.remove("/var/lib/app/a"); // nothing there: not an error
    await expect(executor.remove("/var/lib")).rejects.toBeInstanceOf(ExecutorError); // not empty
    await executor.remove("/var/lib", { recursive: true });
    expect(await executor.stat("/var/lib")).toBeUndefined();
    expect(await executor.list("/var")).toEqual([]);
  });

  it("tells missing files and non-directories apart", async () => {
    await expect(executor.readFile("/nothing-here", 10)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(executor.hashFile("/nothing-here")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(executor.chmod("/nothing-here", 0o600)).rejects.toMatchObject({ code: "NOT_FOUND" });
    await executor.writeFileAtomic("/plain", Buffer.from("x"));
    await expect(executor.list("/plain")).rejects.toMatchObject({ code: "NOT_A_DIRECTORY" });
    await expect(executor.mkdir("/plain/sub")).rejects.toMatchObject({ code: "NOT_A_DIRECTORY" });
    await expect(executor.writeFileAtomic("/no-parent/file", Buffer.from("x"))).rejects.toMatchObject({
      code: "NOT_FOUND",
    });
  });

  it("refuses '..' and relative paths", async () => {
    for (const bad of ["/../outside/secret.txt", "/etc/../../outside/secret.txt", "relative/path", "/a\0b"]) {
      await expect(executor.readFile(bad, 100)).rejects.toMatchObject({ code: "OUTSIDE_ROOT" });
      await expect(executor.writeFileAtomic(bad, Buffer.from("x"))).rejects.toMatchObject({ code: "OUTSIDE_ROOT" });
      await expect(executor.stat(bad)).rejects.toMatchObject({ code: "OUTSIDE_ROOT" });
    }
  });

  it("refuses symbolic links that lead out of the root, anywhere on the path", async () => {
    await symlink(outside, onDisk("/escape"));
    await symlink(path.join(outside, "secret.txt"), onDisk("/secret-link"));
    await symlink("../outside", onDisk("/relative-escape"));
    const attempts: [string, (p: string) => Promise<unknown>][] = [
      ["/escape/secret.txt", (p) => executor.readFile(p, 100)],
      ["/escape/secret.txt", (p) => executor.hashFile(p)],
      ["/escape/secret.txt", (p) => executor.stat(p)],
      ["/escape/new.txt", (p) => executor.writeFileAtomic(p, Buffer.from("x"))],
      ["/escape/secret.txt", (p) => executor.chmod(p, 0o777)],
      ["/escape/secret.txt", (p) => executor.remove(p)],
      ["/escape/made", (p) => executor.mkdir(p)],
      ["/escape/deeper/made", (p) => executor.mkdir(p)],
      ["/escape", (p) => executor.list(p)],
      ["/secret-link", (p) => executor.readFile(p, 100)],
      ["/secret-link", (p) => executor.chmod(p, 0o777)],
      ["/relative-escape/secret.txt", (p) => executor.readFile(p, 100)],
    ];
    for (const [itemPath, attempt] of attempts) {
      await expect(attempt(itemPath), itemPath).rejects.toMatchObject({ code: "OUTSIDE_ROOT" });
    }
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("not yours\n");
    expect((await stat(path.join(outside, "secret.txt"))).mode & 0o777).toBe(0o644);
    await expect(lstat(path.join(outside, "new.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(lstat(path.join(outside, "made"))).rejects.toMatchObject({ code: "ENOENT" });
    // The link itself is an entry of the root: it can be seen, replaced and removed, never followed.
    expect(await executor.stat("/secret-link")).toMatchObject({ kind: "symlink" });
    await executor.writeFileAtomic("/secret-link", Buffer.from("replaced\n"));
    expect((await lstat(onDisk("/secret-link"))).isFile()).toBe(true);
    await executor.remove("/escape");
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("not yours\n");
  });

  it("follows symbolic links that stay inside the root", async () => {
    await executor.mkdir("/real");
    await executor.writeFileAtomic("/real/file.txt", Buffer.from("inside\n"));
    await symlink("real", onDisk("/alias"));
    expect(await executor.readFile("/alias/file.txt", 100)).toEqual(Buffer.from("inside\n"));
    expect(await executor.list("/alias")).toEqual(["file.txt"]);
  });

  it("lists the target's processes, its own sshd among them", async () => {
    const processes = await executor.processes();
    expect(processes).toBeDefined();
    expect(processes?.some((process) => process.command.includes("sshd") && process.command.includes("-D"))).toBe(true);
    expect(processes?.every((process) => Number.isInteger(process.pid) && process.command !== "")).toBe(true);
  });

  it("reads the host key as OpenSSH prints it, and refuses a server whose key changed", async () => {
    expect(await fetchHostKeySha256(sshd.host, sshd.port, 5000)).toBe(sshd.hostKeySha256);
    const wrongPin = createHash("sha256").update("another key").digest("base64").replace(/=+$/, "");
    const refused = await openSshExecutor(options({ hostKeySha256: wrongPin })).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ExecutorError);
    expect(refused).toMatchObject({ code: "UNREACHABLE" });
    expect((refused as Error).message).toContain("host key");
    expect((refused as Error).message).toContain("changed");
    // The prefixed form `ssh-keygen -l` prints is the same pin.
    const prefixed = await openSshExecutor(options({ hostKeySha256: `SHA256:${sshd.hostKeySha256}` }));
    await prefixed.close();
  });

  it("refuses a wrong credential without showing it", async () => {
    const otherKey = await throwawayPrivateKey();
    const refused = await openSshExecutor(options({ privateKey: otherKey })).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "UNREACHABLE" });
    expect((refused as Error).message).toContain(`refused the credential of user '${sshd.userName}'`);
    expect((refused as Error).message).not.toContain("PRIVATE KEY");
    const password = "hunter2-wrong";
    const byPassword = await openSshExecutor(options({ privateKey: undefined, password })).catch(
      (error: unknown) => error,
    );
    expect(byPassword).toMatchObject({ code: "UNREACHABLE" });
    expect((byPassword as Error).message).not.toContain(password);
    const garbage = await openSshExecutor(options({ privateKey: "not a key" })).catch((error: unknown) => error);
    expect(garbage).toBeInstanceOf(ExecutorError);
    expect((garbage as Error).message).not.toContain("not a key");
  });

  it("bounds the handshake and every operation by the timeout", async () => {
    // A port that accepts and never speaks SSH.
    const silent = await mute();
    try {
      const started = Date.now();
      const error = await openSshExecutor(options({ port: silent.port, timeoutMs: 400 })).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "UNREACHABLE" });
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await fetchHostKeySha256("127.0.0.1", silent.port, 400).catch((e: unknown) => e)).toMatchObject({
        code: "UNREACHABLE",
      });
    } finally {
      await silent.close();
    }
    // A port that hangs up at once.
    const rude = createServer((socket) => socket.destroy());
    const rudePort = await listenOnLoopback(rude);
    try {
      const started = Date.now();
      const error = await openSshExecutor(options({ port: rudePort })).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "UNREACHABLE" });
      expect(Date.now() - started).toBeLessThan(2000);
    } finally {
      await new Promise<void>((resolve) => rude.close(() => resolve()));
    }
    // A connection that stops answering once established.
    const relay = await freezableRelay(sshd.port);
    try {
      const frozen = await openSshExecutor(options({ port: relay.port, timeoutMs: 500 }));
      expect(await frozen.stat("/")).toMatchObject({ kind: "directory" });
      relay.freeze();
      const started = Date.now();
      await expect(frozen.hashFile("/big.bin")).rejects.toMatchObject({ code: "UNREACHABLE" });
      expect(Date.now() - started).toBeLessThan(2000);
      await expect(frozen.stat("/")).rejects.toMatchObject({ code: "UNREACHABLE" });
      await frozen.close();
    } finally {
      await relay.close();
    }
    // A connection that drops: the next operation says so at once, and nothing crashes.
    const dropping = await freezableRelay(sshd.port);
    const dropped = await openSshExecutor(options({ port: dropping.port }));
    await dropping.close();
    const started = Date.now();
    await expect(dropped.stat("/")).rejects.toMatchObject({ code: "UNREACHABLE" });
    await expect(dropped.processes()).rejects.toMatchObject({ code: "UNREACHABLE" });
    expect(Date.now() - started).toBeLessThan(1000);
    await dropped.close();
  });
});

/** A TCP server that accepts connections and never answers. */
async function mute(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => sockets.add(socket));
  const port = await listenOnLoopback(server);
  return {
    port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A relay to the SSH server that, once frozen, passes nothing either way (a dead network path). */
async function freezableRelay(targetPort: number): Promise<{ port: number; freeze(): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let frozen = false;
  const server = createServer((client) => {
    const upstream = new Socket();
    sockets.add(client).add(upstream);
    upstream.connect(targetPort, "127.0.0.1");
    client.on("data", (data: Buffer) => {
      if (!frozen) upstream.write(data);
    });
    upstream.on("data", (data: Buffer) => {
      if (!frozen) client.write(data);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", end).on("close", end);
    upstream.on("error", end).on("close", end);
  });
  const port = await listenOnLoopback(server);
  return {
    port,
    freeze: () => {
      frozen = true;
    },
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function listenOnLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}

/** Only sshd run as root checks passwords (it reads the shadow file): as root here and in CI. */
describe.skipIf(skipSshTests || process.getuid?.() !== 0)("ssh executor logging in with a password", () => {
  let sshd: SshServer;
  const password = `pw-${Math.random().toString(36).slice(2)}-x`;

  beforeAll(async () => {
    sshd = await startSshd({ password });
  });
  afterAll(async () => {
    await sshd?.stop();
  });

  it("logs in with the right password and is refused with a wrong one, never showing either", async () => {
    const base = {
      host: sshd.host,
      port: sshd.port,
      userName: sshd.userName,
      hostKeySha256: sshd.hostKeySha256,
      root: path.join(sshd.root, "pw"),
      timeoutMs: 5000,
    };
    const executor = await openSshExecutor({ ...base, password });
    try {
      await executor.writeFileAtomic("/by-password.txt", Buffer.from("ok\n"));
      expect(await readFile(path.join(sshd.root, "pw", "by-password.txt"), "utf8")).toBe("ok\n");
      expect((await lstat(path.join(sshd.root, "pw", "by-password.txt"))).uid).toBe(sshd.uid);
    } finally {
      await executor.close();
    }
    const refused = await openSshExecutor({ ...base, password: `${password}-wrong` }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: "UNREACHABLE" });
    expect((refused as Error).message).not.toContain(password);
  });
});
