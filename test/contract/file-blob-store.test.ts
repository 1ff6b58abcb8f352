import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, readlink, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { countEntries, describeBlobStoreContract, SETTLE_MS, settlesWithin } from "./blob-store.contract.js";

const makeRoot = () => mkdtemp(path.join(tmpdir(), "wharf-blobs-"));

/** Linux shows a process's open files under /proc/self/fd; elsewhere this check is skipped. */
const canSeeOpenFiles = existsSync("/proc/self/fd");

/** How many files under `dir` (a real path: /proc shows resolved ones) this process has open. */
async function openFilesUnder(dir: string) {
  let count = 0;
  for (const fd of await readdir("/proc/self/fd")) {
    // An fd may close between the listing and the readlink.
    const target = await readlink(path.join("/proc/self/fd", fd)).catch(() => "");
    if (target.startsWith(`${dir}${path.sep}`)) count++;
  }
  return count;
}

describeBlobStoreContract("file", async () => {
  const root = await makeRoot();
  const tmp = path.join(await realpath(root), "tmp");
  return {
    store: createFileBlobStore(root),
    cleanup: () => rm(root, { recursive: true, force: true }),
    tempFileCount: () => countEntries(tmp),
    ...(canSeeOpenFiles ? { openTempFileCount: () => openFilesUnder(tmp) } : {}),
  };
});

describe("file blob store specifics", { timeout: 20_000 }, () => {
  let root: string;
  beforeEach(async () => {
    root = await makeRoot();
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const sha256 = (content: Buffer) => createHash("sha256").update(content).digest("hex");

  it("stores a blob at blobs/ab/cd/<sha256>", async () => {
    const content = randomBytes(1234);
    const { sha256: address } = await createFileBlobStore(root).put(Readable.from([content]));
    const file = path.join(root, "blobs", address.slice(0, 2), address.slice(2, 4), address);
    expect(await readFile(file)).toEqual(content);
  });

  it("removes a crash-leftover temporary file, which is never visible as a blob", async () => {
    const store = createFileBlobStore(root);
    const kept = randomBytes(500);
    const keptInfo = await store.put(Readable.from([kept]));

    const leftover = randomBytes(800);
    await mkdir(path.join(root, "tmp"), { recursive: true });
    await writeFile(path.join(root, "tmp", "put-crashed-midway"), leftover);
    // A leftover even named like its own content must not pass for a blob.
    await writeFile(path.join(root, "tmp", sha256(leftover)), leftover);
    // Other writers spool in folders of their own under tmp/ (deployments): those go too.
    await mkdir(path.join(root, "tmp", "wharf-deploy-x", "nested"), { recursive: true });
    await writeFile(path.join(root, "tmp", "wharf-deploy-x", "nested", "package.upack"), randomBytes(300));

    expect(await store.stat(sha256(leftover))).toBeUndefined();
    expect(await store.open(sha256(leftover))).toBeUndefined();
    const listed: string[] = [];
    for await (const address of store.list()) listed.push(address);
    expect(listed).toEqual([keptInfo.sha256]);
    expect(await store.totalBytes()).toBe(kept.length);

    expect(await store.clearStaleTemporaryFiles()).toEqual({ files: 3, bytes: 1900 });
    expect(await countEntries(path.join(root, "tmp"))).toBe(0);
    expect(await store.stat(keptInfo.sha256)).toEqual({ size: kept.length });
    expect(await store.clearStaleTemporaryFiles()).toEqual({ files: 0, bytes: 0 });
  });

  it("finds blobs written by an earlier instance over the same directory", async () => {
    const content = randomBytes(4096);
    const info = await createFileBlobStore(root).put(Readable.from([content]));
    const reopened = createFileBlobStore(root);
    expect(await reopened.stat(info.sha256)).toEqual({ size: content.length });
    expect(await reopened.totalBytes()).toBe(content.length);
  });

  it("works on a root directory that does not exist yet", async () => {
    const store = createFileBlobStore(path.join(root, "not", "yet"));
    expect(await store.clearStaleTemporaryFiles()).toEqual({ files: 0, bytes: 0 });
    expect(await store.totalBytes()).toBe(0);
    const info = await store.put(Readable.from([Buffer.from("hello")]));
    expect(await store.stat(info.sha256)).toEqual({ size: 5 });
  });

  it("destroys a Readable source it will not read because the signal is already aborted", async () => {
    const source = new Readable({ read() {} });
    const reason = new Error("gone");
    const pending = createFileBlobStore(root).put(source, { signal: AbortSignal.abort(reason) });
    await expect(settlesWithin(pending, "put")).rejects.toBe(reason);
    expect(source.destroyed).toBe(true);
  });

  it.skipIf(!canSeeOpenFiles)("closes the temporary file of a put aborted while its source is stalled", async () => {
    const store = createFileBlobStore(root);
    const controller = new AbortController();
    let unstall = () => {};
    const stall = new Promise<void>((resolve) => {
      unstall = resolve;
    });
    async function* stalls() {
      yield randomBytes(1000);
      await stall;
    }
    const pending = store.put(stalls(), { signal: controller.signal });
    pending.catch(() => {}); // awaited below
    try {
      const tmp = path.join(await realpath(root), "tmp");
      const giveUp = Date.now() + SETTLE_MS;
      // The temporary file is open while the store waits for the stalled source.
      while ((await openFilesUnder(tmp)) === 0 && Date.now() < giveUp) await new Promise((r) => setTimeout(r, 5));
      expect(await openFilesUnder(tmp)).toBe(1);
      controller.abort(new Error("stalled"));
      await expect(settlesWithin(pending, "put")).rejects.toThrow("stalled");
      expect(await openFilesUnder(tmp)).toBe(0);
      expect(await countEntries(tmp)).toBe(0);
    } finally {
      unstall();
    }
  });

  it("ignores stray files in the blob tree that are not blobs", async () => {
    const store = createFileBlobStore(root);
    const info = await store.put(Readable.from([randomBytes(100)]));
    const dir = path.join(root, "blobs", info.sha256.slice(0, 2), info.sha256.slice(2, 4));
    await writeFile(path.join(dir, "notes.txt"), "x");
    // A valid address in the wrong fan-out directory was not written by the store.
    const misplaced = sha256(randomBytes(10));
    await writeFile(path.join(dir, misplaced), "x");
    await writeFile(path.join(root, "blobs", "README"), "x");

    const listed: string[] = [];
    for await (const address of store.list()) listed.push(address);
    expect(listed).toEqual([info.sha256]);
    expect(await store.totalBytes()).toBe(100);
  });
});
