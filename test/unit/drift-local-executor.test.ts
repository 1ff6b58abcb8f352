import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  readlink,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Executor, ExecutorError } from "../../src/drift/executor.js";
import { createLocalExecutor } from "../../src/drift/local-executor.js";

let base: string;
let root: string;
let outside: string;
let executor: Executor;

beforeEach(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "wharf-local-executor-"));
  root = path.join(base, "root");
  outside = path.join(base, "outside");
  await mkdir(outside);
  await writeFile(path.join(outside, "secret.txt"), "outside secret\n", { mode: 0o600 });
  executor = await createLocalExecutor(root);
});

afterEach(async () => {
  await executor.close();
  await rm(base, { recursive: true, force: true });
});

async function refusal(promise: Promise<unknown>): Promise<ExecutorError> {
  const error = await promise.then(
    () => undefined,
    (reason: unknown) => reason,
  );
  expect(error).toBeInstanceOf(ExecutorError);
  return error as ExecutorError;
}

describe("local executor", () => {
  it("creates its root and maps item paths under it", async () => {
    expect((await stat(root)).isDirectory()).toBe(true);
    expect(executor.description).toBe(`local ${root}`);
    await executor.mkdir("/etc/app", 0o750);
    await executor.writeFileAtomic("/etc/app/app.conf", Buffer.from("port=8080\n"), 0o640);
    const onDisk = path.join(root, "etc/app/app.conf");
    expect(await readFile(onDisk, "utf8")).toBe("port=8080\n");
    expect((await stat(onDisk)).mode & 0o7777).toBe(0o640);
    expect((await stat(path.join(root, "etc/app"))).mode & 0o7777).toBe(0o750);
    expect(await executor.stat("/etc/app/app.conf")).toMatchObject({ kind: "file", size: 10, mode: 0o640 });
    expect(await executor.stat("/etc/app")).toMatchObject({ kind: "directory" });
    expect(await executor.stat("/etc/missing/x")).toBeUndefined();
    expect(await executor.stat("/etc/app/app.conf/x")).toBeUndefined();
    expect((await executor.readFile("/etc/app/app.conf", 100)).toString()).toBe("port=8080\n");
    expect(await executor.hashFile("/etc/app/app.conf")).toBe(createHash("sha256").update("port=8080\n").digest("hex"));
    expect(await executor.list("/etc/app")).toEqual(["app.conf"]);
    expect((await refusal(executor.readFile("/etc/app/app.conf", 5))).code).toBe("TOO_LARGE");
    expect((await refusal(executor.readFile("/nope", 5))).code).toBe("NOT_FOUND");
    expect((await refusal(executor.writeFileAtomic("/no/such/dir/f", Buffer.from("x")))).code).toBe("NOT_FOUND");
  });

  it("writes atomically from a stream, keeps an existing mode and leaves no temporary file", async () => {
    await executor.writeFileAtomic("/a.txt", Buffer.from("one"), 0o600);
    await executor.writeFileAtomic("/a.txt", Readable.from([Buffer.from("tw"), Buffer.from("o")]));
    expect(await readFile(path.join(root, "a.txt"), "utf8")).toBe("two");
    expect((await stat(path.join(root, "a.txt"))).mode & 0o7777).toBe(0o600);
    expect(await executor.list("/")).toEqual(["a.txt"]);
    await executor.chmod("/a.txt", 0o644);
    expect((await stat(path.join(root, "a.txt"))).mode & 0o7777).toBe(0o644);
    await chmod(path.join(root, "a.txt"), 0o000);
    await executor.chmod("/a.txt", 0o640); // no read permission: still changed (by path, after lstat)
    expect((await stat(path.join(root, "a.txt"))).mode & 0o7777).toBe(0o640);
  });

  it("hashes a large file streamed, and refuses reading it whole past maxBytes", async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 5, 7);
    await writeFile(path.join(root, "big.bin"), big);
    expect(await executor.hashFile("/big.bin")).toBe(createHash("sha256").update(big).digest("hex"));
    expect((await refusal(executor.readFile("/big.bin", 1024 * 1024))).code).toBe("TOO_LARGE");
    expect((await refusal(executor.hashFile("/"))).message).toBe("/ is not a regular file.");
  });

  it("a FIFO where a file is expected does not hang", async () => {
    execFileSync("mkfifo", [path.join(root, "pipe")]);
    expect(await executor.stat("/pipe")).toMatchObject({ kind: "other" });
    expect((await refusal(executor.hashFile("/pipe"))).message).toBe("/pipe is not a regular file.");
    await executor.chmod("/pipe", 0o600);
    expect((await stat(path.join(root, "pipe"))).mode & 0o7777).toBe(0o600);
  });

  it("removes files, links (not their targets) and trees; nothing there is fine", async () => {
    await executor.mkdir("/tree/a/b");
    await executor.writeFileAtomic("/tree/a/b/f", Buffer.from("x"));
    await symlink(outside, path.join(root, "tree/out"));
    await executor.remove("/tree/out");
    expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
    expect((await refusal(executor.remove("/tree"))).code).toBe("FAILED");
    await executor.remove("/tree", { recursive: true });
    expect(await executor.stat("/tree")).toBeUndefined();
    await executor.remove("/tree");
    await executor.remove("/not/there/at/all");
    expect((await refusal(executor.remove("/", { recursive: true }))).code).toBe("FAILED");
  });

  it("follows links that stay inside the root", async () => {
    await executor.mkdir("/real");
    await executor.writeFileAtomic("/real/f", Buffer.from("inside"));
    await symlink(path.join(root, "real"), path.join(root, "alias"));
    await symlink("f", path.join(root, "real/f-link"));
    expect((await executor.readFile("/alias/f", 100)).toString()).toBe("inside");
    expect((await executor.readFile("/real/f-link", 100)).toString()).toBe("inside");
    expect(await executor.stat("/real/f-link")).toMatchObject({ kind: "symlink" });
    await executor.writeFileAtomic("/alias/g", Buffer.from("through alias"));
    expect(await readFile(path.join(root, "real/g"), "utf8")).toBe("through alias");
    await executor.mkdir("/alias/sub/deeper");
    expect((await stat(path.join(root, "real/sub/deeper"))).isDirectory()).toBe(true);
  });

  describe("refuses to leave the root", () => {
    it.each(["/../outside/secret.txt", "/etc/../../outside/secret.txt", "relative/path", "/a\0b"])(
      "path %j",
      async (itemPath) => {
        for (const attempt of [
          () => executor.stat(itemPath),
          () => executor.readFile(itemPath, 100),
          () => executor.hashFile(itemPath),
          () => executor.writeFileAtomic(itemPath, Buffer.from("x")),
          () => executor.mkdir(itemPath),
          () => executor.remove(itemPath, { recursive: true }),
          () => executor.chmod(itemPath, 0o777),
          () => executor.list(itemPath),
        ]) {
          expect((await refusal(attempt())).code).toBe("OUTSIDE_ROOT");
        }
        expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
      },
    );

    it("an absolute path is the root's own, never the host's", async () => {
      const hostPath = path.join(outside, "secret.txt");
      expect(await executor.stat(hostPath)).toBeUndefined();
      expect((await refusal(executor.readFile(hostPath, 100))).code).toBe("NOT_FOUND");
    });

    it("through a link to a directory outside", async () => {
      await symlink(outside, path.join(root, "out"));
      const attempts = [
        () => executor.stat("/out/secret.txt"),
        () => executor.readFile("/out/secret.txt", 100),
        () => executor.hashFile("/out/secret.txt"),
        () => executor.writeFileAtomic("/out/secret.txt", Buffer.from("pwned")),
        () => executor.writeFileAtomic("/out/new.txt", Buffer.from("pwned")),
        () => executor.mkdir("/out/made"),
        () => executor.chmod("/out/secret.txt", 0o777),
        () => executor.chmod("/out", 0o777),
        () => executor.list("/out"),
        () => executor.remove("/out/secret.txt"),
      ];
      for (const attempt of attempts) expect((await refusal(attempt())).code).toBe("OUTSIDE_ROOT");
      expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
      expect((await stat(path.join(outside, "secret.txt"))).mode & 0o7777).toBe(0o600);
      expect((await stat(outside)).mode & 0o7777).not.toBe(0o777);
      expect(await readdirSorted(outside)).toEqual(["secret.txt"]);
    });

    it("through a link to a file outside (reads refused; a write replaces the link)", async () => {
      await symlink(path.join(outside, "secret.txt"), path.join(root, "secret-link"));
      for (const attempt of [
        () => executor.readFile("/secret-link", 100),
        () => executor.hashFile("/secret-link"),
        () => executor.chmod("/secret-link", 0o777),
        () => executor.mkdir("/secret-link/x"),
      ]) {
        expect((await refusal(attempt())).code).toBe("OUTSIDE_ROOT");
      }
      expect(await executor.stat("/secret-link")).toMatchObject({ kind: "symlink" });
      await executor.writeFileAtomic("/secret-link", Buffer.from("replaced"), 0o644);
      expect((await lstat(path.join(root, "secret-link"))).isFile()).toBe(true);
      expect(await readFile(path.join(outside, "secret.txt"), "utf8")).toBe("outside secret\n");
      expect((await stat(path.join(outside, "secret.txt"))).mode & 0o7777).toBe(0o600);
    });

    it("through a link swapped in deeper, a dangling link, and a link back out by a relative target", async () => {
      await executor.mkdir("/a/b");
      await symlink("../../../outside", path.join(root, "a/b/up"));
      await symlink("/nonexistent-wharf-target/x", path.join(root, "a/dangling"));
      expect((await refusal(executor.readFile("/a/b/up/secret.txt", 100))).code).toBe("OUTSIDE_ROOT");
      expect((await refusal(executor.mkdir("/a/b/up/x"))).code).toBe("OUTSIDE_ROOT");
      expect((await refusal(executor.mkdir("/a/dangling/x"))).code).toBe("OUTSIDE_ROOT");
      expect(await readlink(path.join(root, "a/dangling"))).toBe("/nonexistent-wharf-target/x");
      expect(await readdirSorted(outside)).toEqual(["secret.txt"]);
    });

    it("a root given as a link is resolved once, and the root must be absolute", async () => {
      await symlink(root, path.join(base, "root-link"));
      const viaLink = await createLocalExecutor(path.join(base, "root-link"));
      await viaLink.writeFileAtomic("/x", Buffer.from("x"));
      expect(await readFile(path.join(root, "x"), "utf8")).toBe("x");
      expect((await refusal(createLocalExecutor("relative/root"))).code).toBe("FAILED");
    });
  });

  it("lists running processes from /proc", async () => {
    const processes = await executor.processes();
    expect(processes?.some((process) => process.pid === globalThis.process.pid)).toBe(true);
  });
});

async function readdirSorted(directory: string): Promise<string[]> {
  return (await readdir(directory)).sort();
}
