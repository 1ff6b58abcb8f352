import { randomBytes } from "node:crypto";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { canReadSmall, withSmallBlobCache } from "../../src/storage/blob-cache.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { countEntries, describeBlobStoreContract } from "./blob-store.contract.js";

const makeRoot = () => mkdtemp(path.join(tmpdir(), "wharf-blob-cache-"));

// The wrapper is a BlobStore like any other: the whole contract holds for it unchanged.
describeBlobStoreContract("file, with the small-blob cache", async () => {
  const root = await makeRoot();
  const tmp = path.join(await realpath(root), "tmp");
  return {
    store: withSmallBlobCache(createFileBlobStore(root)),
    cleanup: () => rm(root, { recursive: true, force: true }),
    tempFileCount: () => countEntries(tmp),
  };
});

describe("small-blob cache", () => {
  let root: string;
  let store: BlobStore;
  let opens: number;

  beforeEach(async () => {
    root = await makeRoot();
    const inner = createFileBlobStore(root);
    opens = 0;
    // Counts what reaches the store, so a test can tell memory from disk.
    store = {
      ...inner,
      open: (sha256, range) => {
        opens++;
        return inner.open(sha256, range);
      },
    };
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const put = async (bytes: Buffer) => (await store.put(Readable.from([bytes]))).sha256;

  it("reads a small blob once, then answers from memory, whole and unchanged", async () => {
    const cached = withSmallBlobCache(store);
    expect(canReadSmall(cached)).toBe(true);
    expect(canReadSmall(store)).toBe(false);
    const bytes = randomBytes(10_240);
    const sha256 = await put(bytes);
    const [a, b] = await Promise.all([cached.readSmall(sha256, bytes.length), cached.readSmall(sha256, bytes.length)]);
    expect(a?.equals(bytes)).toBe(true);
    expect(b?.equals(bytes)).toBe(true);
    expect(opens).toBe(1); // concurrent first reads share one
    expect((await cached.readSmall(sha256, bytes.length))?.equals(bytes)).toBe(true);
    expect(opens).toBe(1);
  });

  it("leaves large, absent and mis-sized blobs to the streaming path", async () => {
    const cached = withSmallBlobCache(store, { maxBlobBytes: 1024 });
    const large = randomBytes(2048);
    expect(await cached.readSmall(await put(large), large.length)).toBeUndefined();
    expect(opens).toBe(0);
    expect(await cached.readSmall("0".repeat(64), 10)).toBeUndefined();
    const small = randomBytes(100);
    const sha256 = await put(small);
    expect(await cached.readSmall(sha256, 99)).toBeUndefined();
    expect(await cached.readSmall(sha256, 101)).toBeUndefined();
    expect((await cached.readSmall(sha256, 100))?.equals(small)).toBe(true);
  });

  it("keeps at most its byte budget, least recently used out first", async () => {
    const cached = withSmallBlobCache(store, { maxBytes: 3000, maxBlobBytes: 1000 });
    const blobs = [randomBytes(1000), randomBytes(1000), randomBytes(1000), randomBytes(1000)];
    const addresses = await Promise.all(blobs.map(put));
    const read = (i: number) => cached.readSmall(addresses[i] as string, 1000);
    for (const i of [0, 1, 2]) await read(i);
    await read(0); // now the most recently used
    await read(3); // over budget: 1 goes
    opens = 0;
    for (const i of [0, 2, 3]) await read(i);
    expect(opens).toBe(0);
    await read(1);
    expect(opens).toBe(1);
  });

  it("forgets a deleted blob", async () => {
    const cached = withSmallBlobCache(store);
    const bytes = randomBytes(500);
    const sha256 = await put(bytes);
    await cached.readSmall(sha256, bytes.length);
    await cached.delete(sha256);
    expect(await cached.readSmall(sha256, bytes.length)).toBeUndefined();
    expect(await cached.stat(sha256)).toBeUndefined();
  });
});
