import { createHash, randomBytes } from "node:crypto";
import { readdir } from "node:fs/promises";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { type BlobInfo, type BlobStore, canOpenReader } from "../../src/storage/blob-store.js";

export interface BlobStoreFixture {
  store: BlobStore;
  cleanup: () => Promise<void>;
  /** How many temporary (not yet published) files the implementation currently holds. */
  tempFileCount: () => Promise<number>;
  /** How many of those the process still has open, where the implementation can tell. */
  openTempFileCount?: () => Promise<number>;
}

type Algorithm = "sha256" | "sha1" | "md5" | "sha512";

const MiB = 1024 * 1024;
const EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const digest = (algorithm: Algorithm, content: Buffer) => createHash(algorithm).update(content).digest("hex");

async function* chunksOf(...chunks: Buffer[]): AsyncGenerator<Uint8Array> {
  for (const chunk of chunks) yield chunk;
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The whole stored content, failing the test when the blob is absent. */
async function readBlob(store: BlobStore, sha256: string, range?: { start: number; end: number }): Promise<Buffer> {
  const stream = await store.open(sha256, range);
  if (!stream) throw new Error(`blob ${sha256} is absent`);
  return readAll(stream);
}

/**
 * Byte-for-byte equality. Not toEqual: that walks a Buffer one element at a time, which takes
 * seconds for a few hundred kB on a loaded machine and would eat into the test timeout.
 */
function expectSameBytes(actual: Buffer, expected: Buffer) {
  expect(actual.length, "content length").toBe(expected.length);
  expect(actual.equals(expected), "content differs").toBe(true);
}

async function listAll(store: BlobStore): Promise<string[]> {
  const addresses: string[] = [];
  for await (const address of store.list()) addresses.push(address);
  return addresses.sort();
}

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * How long anything a test waits on may take before it counts as hanging. Far above what a put
 * takes even on a loaded machine, and well below the test timeout, so that a put that never
 * settles fails its test with a message saying so instead of stalling the run.
 */
/** Entries in a directory; 0 when it does not exist (yet): what `tempFileCount` fixtures report. */
export async function countEntries(dir: string) {
  try {
    return (await readdir(dir)).length;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw error;
  }
}

export const SETTLE_MS = 10_000;
/** Per test and hook: a hang anywhere else (a read, a listing) still fails well before 30 s. */
const TEST_TIMEOUT_MS = 20_000;

/** `promise`'s outcome, or a failure naming `what` if it has not settled within `ms`. */
export async function settlesWithin<T>(promise: Promise<T>, what: string, ms = SETTLE_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms; it hangs`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits, turn by turn, until `condition` holds; fails naming `what` instead of spinning forever. */
async function until(condition: () => boolean, what: string, ms = SETTLE_MS) {
  const giveUp = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > giveUp) throw new Error(`gave up after ${ms} ms waiting for ${what}`);
    await nextTurn();
  }
}

/**
 * `inner` with every put bounded by SETTLE_MS, so that no put in this suite can hang a test, and
 * recorded in `running` until it settles, so that a put outliving its test is noticed.
 */
function withBoundedPuts(inner: BlobStore, running: Set<Promise<unknown>>): BlobStore {
  return {
    put(source, options) {
      const pending = inner.put(source, options);
      const settled = pending.then(
        () => undefined,
        () => undefined,
      );
      running.add(settled);
      void settled.then(() => running.delete(settled));
      return settlesWithin(pending, "put");
    },
    stat: (sha256) => inner.stat(sha256),
    open: (sha256, range) => inner.open(sha256, range),
    delete: (sha256) => inner.delete(sha256),
    list: () => inner.list(),
    totalBytes: () => inner.totalBytes(),
    clearStaleTemporaryFiles: () => inner.clearStaleTemporaryFiles(),
  };
}

/**
 * The suite every BlobStore implementation must pass. The tests follow the sentences of the
 * contract (the doc comment in src/storage/blob-store.ts), one or more tests for each.
 */
export function describeBlobStoreContract(name: string, makeStore: () => Promise<BlobStoreFixture>) {
  describe(`BlobStore contract: ${name}`, { timeout: TEST_TIMEOUT_MS }, () => {
    let store: BlobStore;
    let fixture: BlobStoreFixture;
    const running = new Set<Promise<unknown>>();

    beforeEach(async () => {
      fixture = await makeStore();
      store = withBoundedPuts(fixture.store, running);
    }, TEST_TIMEOUT_MS);
    afterEach(async () => {
      try {
        // Every test awaits its puts; one still running here was left behind by a failed test or
        // hangs, and would hold a temporary file open while the store is removed under it.
        const left = running.size;
        await settlesWithin(Promise.all(running), `${left} put(s) left running by the test`, SETTLE_MS / 2);
      } finally {
        running.clear();
        await fixture.cleanup();
      }
    }, TEST_TIMEOUT_MS);

    /** A failed put leaves no blob and no temporary file behind, nor one still open. */
    async function expectNothingLeftBehind(content?: Buffer) {
      expect(await fixture.tempFileCount()).toBe(0);
      if (fixture.openTempFileCount) expect(await fixture.openTempFileCount()).toBe(0);
      expect(await listAll(store)).toEqual([]);
      expect(await store.totalBytes()).toBe(0);
      if (content) {
        const address = digest("sha256", content);
        expect(await store.stat(address)).toBeUndefined();
        expect(await store.open(address)).toBeUndefined();
      }
    }

    describe("put", () => {
      it.each([
        ["a Readable", (content: Buffer) => Readable.from([content.subarray(0, 1000), content.subarray(1000)])],
        ["an async iterable", (content: Buffer) => chunksOf(content.subarray(0, 1000), content.subarray(1000))],
      ])("hashes %s with SHA-256 and SHA-1 and reports its size", async (_, toSource) => {
        const content = randomBytes(100_000);
        const info = await store.put(toSource(content));
        expect(info).toEqual({
          sha256: digest("sha256", content),
          sha1: digest("sha1", content),
          size: content.length,
        });
        expect(info.md5).toBeUndefined();
        expect(info.sha512).toBeUndefined();
        expect(await store.stat(info.sha256)).toEqual({ size: content.length });
        expect(await fixture.tempFileCount()).toBe(0);
      });

      it("computes MD5 and SHA-512 while streaming when asked", async () => {
        const content = randomBytes(50_000);
        const info = await store.put(chunksOf(content), { extraDigests: ["md5", "sha512"] });
        expect(info).toEqual({
          sha256: digest("sha256", content),
          sha1: digest("sha1", content),
          md5: digest("md5", content),
          sha512: digest("sha512", content),
          size: content.length,
        });
        const onlyMd5 = await store.put(chunksOf(content), { extraDigests: ["md5"] });
        expect(onlyMd5.md5).toBe(digest("md5", content));
        expect(onlyMd5.sha512).toBeUndefined();
      });

      it("accepts expected digests given in lowercase or uppercase hex", async () => {
        const content = randomBytes(10_000);
        const lower = {
          sha256: digest("sha256", content),
          sha1: digest("sha1", content),
          md5: digest("md5", content),
          sha512: digest("sha512", content),
        };
        const upper = Object.fromEntries(Object.entries(lower).map(([k, v]) => [k, v.toUpperCase()]));
        const first = await store.put(chunksOf(content), { expected: lower });
        expect(first.sha256).toBe(lower.sha256);
        const second = await store.put(chunksOf(content), { expected: upper });
        expect(second.sha256).toBe(lower.sha256);
        expect(second.sha1).toBe(lower.sha1);
        expect(await listAll(store)).toEqual([lower.sha256]);
      });

      const algorithmNames: Record<Algorithm, RegExp> = {
        sha256: /SHA-?256/i,
        sha1: /SHA-?1\b/i,
        md5: /MD5/i,
        sha512: /SHA-?512/i,
      };
      it.each(["sha256", "sha1", "md5", "sha512"] as const)(
        "rejects a %s mismatch as invalid DIGEST_MISMATCH naming both values, leaving nothing behind",
        async (algorithm) => {
          const content = randomBytes(30_000);
          const claimed = digest(algorithm, randomBytes(10));
          const error = await store.put(chunksOf(content), { expected: { [algorithm]: claimed } }).catch((e) => e);
          expect(error).toBeInstanceOf(DomainError);
          expect(error).toMatchObject({ kind: "invalid", code: "DIGEST_MISMATCH" });
          expect(error.message).toMatch(algorithmNames[algorithm]);
          expect(error.message).toContain(claimed);
          expect(error.message).toContain(digest(algorithm, content));
          await expectNothingLeftBehind(content);
        },
      );

      it("leaves an existing blob untouched when a put of the same content fails its digest check", async () => {
        const content = randomBytes(5_000);
        const info = await store.put(chunksOf(content));
        await expect(store.put(chunksOf(content), { expected: { sha1: "0".repeat(40) } })).rejects.toMatchObject({
          code: "DIGEST_MISMATCH",
        });
        expect(await listAll(store)).toEqual([info.sha256]);
        expectSameBytes(await readBlob(store, info.sha256), content);
        expect(await fixture.tempFileCount()).toBe(0);
      });

      it("makes the blob visible under its SHA-256 only after all bytes are written", async () => {
        const content = randomBytes(200_000);
        const address = digest("sha256", content);
        let release = () => {};
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        let halfSent = false;
        async function* gated() {
          yield content.subarray(0, 100_000);
          halfSent = true;
          await released;
          yield content.subarray(100_000);
        }
        const pending = store.put(gated());
        pending.catch(() => {}); // awaited below; a failure must not count as unhandled meanwhile
        try {
          await until(() => halfSent, "the store to ask for the second half");
          for (let i = 0; i < 10; i++) await nextTurn();

          expect(await store.stat(address)).toBeUndefined();
          expect(await store.open(address)).toBeUndefined();
          expect(await listAll(store)).toEqual([]);
        } finally {
          // Even when an expectation above fails: a source that never ends would keep the put,
          // and its open temporary file, alive for the rest of the run.
          release();
        }
        expect((await pending).sha256).toBe(address);
        expectSameBytes(await readBlob(store, address), content);
      });

      it("stores content that already exists only once and returns the same info", async () => {
        const content = randomBytes(40_000);
        const first = await store.put(chunksOf(content));
        const second = await store.put(Readable.from([content]));
        expect(second).toEqual(first);
        expect(await listAll(store)).toEqual([first.sha256]);
        expect(await store.totalBytes()).toBe(content.length);
        expect(await fixture.tempFileCount()).toBe(0);
      });

      it("stores concurrent puts of the same content once", async () => {
        const content = randomBytes(300_000);
        const infos = await Promise.all([1, 2, 3].map(() => store.put(chunksOf(content))));
        expect(new Set(infos.map((info) => JSON.stringify(info))).size).toBe(1);
        expect(await listAll(store)).toEqual([digest("sha256", content)]);
        expectSameBytes(await readBlob(store, digest("sha256", content)), content);
        expect(await fixture.tempFileCount()).toBe(0);
      });

      it("calls beforePublish once with the address, after every byte is checked and before the blob is visible", async () => {
        const content = randomBytes(50_000);
        const seen: Array<{ sha256: string; visible: boolean }> = [];
        const info = await store.put(chunksOf(content), {
          expected: { sha1: digest("sha1", content) },
          beforePublish: async (sha256) => {
            seen.push({ sha256, visible: (await store.stat(sha256)) !== undefined });
          },
        });
        expect(seen).toEqual([{ sha256: info.sha256, visible: false }]);
        expectSameBytes(await readBlob(store, info.sha256), content);
      });

      it("looks for an existing blob only after beforePublish: one deleted meanwhile is published again", async () => {
        const content = randomBytes(5_000);
        const first = await store.put(chunksOf(content));
        const again = await store.put(chunksOf(content), { beforePublish: (sha256) => store.delete(sha256) });
        expect(again).toEqual(first);
        expectSameBytes(await readBlob(store, first.sha256), content);
        expect(await fixture.tempFileCount()).toBe(0);
      });

      it("fails the put when beforePublish rejects, leaving nothing behind; a put refused earlier never calls it", async () => {
        const content = randomBytes(5_000);
        const failure = new Error("claim refused");
        await expect(store.put(chunksOf(content), { beforePublish: async () => Promise.reject(failure) })).rejects.toBe(
          failure,
        );
        await expectNothingLeftBehind(content);
        let called = false;
        const mismatch = store.put(chunksOf(content), {
          expected: { sha256: "0".repeat(64) },
          beforePublish: async () => {
            called = true;
          },
        });
        await expect(mismatch).rejects.toMatchObject({ code: "DIGEST_MISMATCH" });
        expect(called).toBe(false);
      });

      it("accepts content of exactly maxBytes", async () => {
        const content = randomBytes(1000);
        const info = await store.put(chunksOf(content.subarray(0, 600), content.subarray(600)), { maxBytes: 1000 });
        expect(info.size).toBe(1000);
        expect((await store.put(chunksOf(), { maxBytes: 0 })).size).toBe(0);
      });

      it("rejects content one byte over maxBytes as too_large UPLOAD_TOO_LARGE, leaving nothing behind", async () => {
        const content = randomBytes(1001);
        const error = await store.put(chunksOf(content), { maxBytes: 1000 }).catch((e) => e);
        expect(error).toBeInstanceOf(DomainError);
        expect(error).toMatchObject({ kind: "too_large", code: "UPLOAD_TOO_LARGE" });
        await expectNothingLeftBehind(content);
      });

      it("stops reading a source that runs past maxBytes instead of waiting for its end", async () => {
        const chunk = randomBytes(64 * 1024);
        let produced = 0;
        async function* endless() {
          // Would be 4 GiB if the store read it all.
          for (let i = 0; i < 65_536; i++) {
            produced += chunk.length;
            yield chunk;
          }
        }
        const error = await store.put(endless(), { maxBytes: MiB }).catch((e) => e);
        expect(error).toMatchObject({ kind: "too_large", code: "UPLOAD_TOO_LARGE" });
        expect(produced).toBeGreaterThan(MiB);
        expect(produced).toBeLessThan(8 * MiB);
        await expectNothingLeftBehind();
      });

      it("rejects when an async iterable source fails midway, leaving nothing behind", async () => {
        const failure = new Error("connection reset");
        async function* failing() {
          yield randomBytes(MiB);
          yield randomBytes(MiB);
          throw failure;
        }
        await expect(store.put(failing())).rejects.toBe(failure);
        await expectNothingLeftBehind();
      });

      it("rejects when a Readable source errors midway, leaving nothing behind", async () => {
        const failure = new Error("socket hang up");
        let reads = 0;
        // Pull-driven, so the failure comes after the store has really consumed some bytes.
        const source = new Readable({
          highWaterMark: 64 * 1024,
          read() {
            reads++;
            if (reads <= 4) this.push(randomBytes(256 * 1024));
            else this.destroy(failure);
          },
        });
        await expect(store.put(source)).rejects.toBe(failure);
        expect(reads).toBeGreaterThan(4);
        await expectNothingLeftBehind();
      });

      it("rejects when a Readable source errors before the store starts reading, leaving nothing behind", async () => {
        const failure = new Error("client disconnected");
        const source = new Readable({ read() {} });
        const pending = store.put(source);
        source.destroy(failure);
        await expect(pending).rejects.toBe(failure);
        await expectNothingLeftBehind();
      });

      /** The contract allows the abort reason itself or a DomainError. */
      const isAbortRejection = (reason: unknown) => (error: unknown) =>
        error === reason || error instanceof DomainError;

      it("rejects when aborted midway, leaving nothing behind", async () => {
        const controller = new AbortController();
        const reason = new Error("client went away");
        async function* slowAndLong() {
          for (let i = 0; i < 1000; i++) {
            if (i === 8) controller.abort(reason);
            yield randomBytes(256 * 1024);
            await nextTurn();
          }
        }
        await expect(store.put(slowAndLong(), { signal: controller.signal })).rejects.toSatisfy(
          isAbortRejection(reason),
        );
        await expectNothingLeftBehind();
      });

      it("rejects when aborted while the source is stalled, leaving nothing behind", async () => {
        const controller = new AbortController();
        const reason = new Error("timed out");
        let reads = 0;
        // Sends one chunk, then never answers another read, like a client that stopped sending.
        const source = new Readable({
          read() {
            if (++reads === 1) this.push(randomBytes(MiB));
          },
        });
        const pending = store.put(source, { signal: controller.signal });
        pending.catch(() => {}); // awaited below
        await until(() => reads >= 2, "the store to ask the source for more");
        controller.abort(reason);
        await expect(pending).rejects.toSatisfy(isAbortRejection(reason));
        await expectNothingLeftBehind();
      });

      it("rejects when aborted while an async iterable source is stalled, without waiting for the source", async () => {
        const controller = new AbortController();
        const reason = new Error("client went quiet");
        let unstall = () => {};
        const stall = new Promise<void>((resolve) => {
          unstall = resolve;
        });
        let stalled = false;
        let finished = false;
        async function* stallsAfterOneChunk() {
          try {
            yield randomBytes(64 * 1024);
            stalled = true;
            await stall;
            yield randomBytes(64 * 1024);
          } finally {
            finished = true;
          }
        }
        const pending = store.put(stallsAfterOneChunk(), { signal: controller.signal });
        pending.catch(() => {}); // awaited below
        try {
          await until(() => stalled, "the store to ask the source for more");
          controller.abort(reason);
          await expect(pending).rejects.toSatisfy(isAbortRejection(reason));
          expect(finished).toBe(false);
          await expectNothingLeftBehind();
        } finally {
          // The fixture itself must end, or the generator would stay suspended for the whole run.
          unstall();
        }
        // Once it wakes up, the abandoned source is not read to its end but closed.
        await until(() => finished, "the abandoned source to be closed");
      });

      it("rejects when a Readable source emits 'error' without being destroyed, leaving nothing behind", async () => {
        const failure = new Error("legacy stream failure");
        const source = new Readable({ read() {} });
        const pending = store.put(source);
        // Emitted before the store has read anything, and without destroy(): only the event tells.
        source.emit("error", failure);
        await expect(pending).rejects.toBe(failure);
        await expectNothingLeftBehind();
      });

      it("rejects when the signal is already aborted, leaving nothing behind", async () => {
        const reason = new Error("too late");
        const content = randomBytes(1000);
        await expect(store.put(chunksOf(content), { signal: AbortSignal.abort(reason) })).rejects.toSatisfy(
          isAbortRejection(reason),
        );
        await expectNothingLeftBehind(content);
      });

      it("stores the empty blob", async () => {
        const info = await store.put(chunksOf());
        expect(info).toEqual({
          sha256: EMPTY_SHA256,
          sha1: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
          size: 0,
        });
        expect(await store.stat(EMPTY_SHA256)).toEqual({ size: 0 });
        expectSameBytes(await readBlob(store, EMPTY_SHA256), Buffer.alloc(0));
        expect(await listAll(store)).toEqual([EMPTY_SHA256]);
      });

      it("streams a 20 MiB put and reads it back", async () => {
        const expectedHash = createHash("sha256");
        async function* twentyMiB() {
          for (let i = 0; i < 20; i++) {
            const chunk = randomBytes(MiB);
            expectedHash.update(chunk);
            yield chunk;
          }
        }
        const info = await store.put(twentyMiB());
        const address = expectedHash.digest("hex");
        expect(info.sha256).toBe(address);
        expect(info.size).toBe(20 * MiB);
        expect(await store.stat(address)).toEqual({ size: 20 * MiB });

        const readBack = createHash("sha256");
        let bytes = 0;
        const stream = await store.open(address);
        if (!stream) throw new Error("the 20 MiB blob is absent");
        for await (const chunk of stream) {
          readBack.update(chunk as Buffer);
          bytes += (chunk as Buffer).length;
        }
        expect(bytes).toBe(20 * MiB);
        expect(readBack.digest("hex")).toBe(address);
      });
    });

    describe("open", () => {
      let content: Buffer;
      let info: BlobInfo;
      beforeEach(async () => {
        content = randomBytes(100_000);
        info = await store.put(chunksOf(content));
      });

      it("streams the stored bytes", async () => {
        expectSameBytes(await readBlob(store, info.sha256), content);
      });

      it.each([
        [0, 0],
        [10, 19],
        [1, 99_998],
        [99_999, 99_999],
        [0, 99_999],
        [65_530, 65_545],
      ])("streams the inclusive byte range %i..%i", async (start, end) => {
        expectSameBytes(await readBlob(store, info.sha256, { start, end }), content.subarray(start, end + 1));
      });

      it("returns undefined for an absent blob", async () => {
        expect(await store.open(digest("sha256", randomBytes(8)))).toBeUndefined();
        expect(await store.open(digest("sha256", randomBytes(8)), { start: 0, end: 10 })).toBeUndefined();
        expect(await store.stat(digest("sha256", randomBytes(8)))).toBeUndefined();
      });
    });

    describe("openReader, where a store offers positional reads", () => {
      it("reads at any position, reports the size, and follows open's rules for absent and invalid addresses", async (context) => {
        const raw = fixture.store;
        if (!canOpenReader(raw)) return context.skip();
        const content = randomBytes(100_000);
        const info = await store.put(chunksOf(content));
        const reader = await raw.openReader(info.sha256);
        if (reader === undefined) throw new Error("the stored blob has no reader");
        try {
          expect(reader.size).toBe(content.length);
          const target = Buffer.alloc(1000);
          expect(await reader.read(target, 65_000)).toBe(1000);
          expectSameBytes(target, content.subarray(65_000, 66_000));
          expect(await reader.read(target, 99_500)).toBe(500);
          expect(await reader.read(target, 100_000)).toBe(0);
          // The bytes stay readable when the blob is deleted meanwhile, as with open.
          await store.delete(info.sha256);
          expect(await reader.read(target, 0)).toBe(1000);
          expectSameBytes(target, content.subarray(0, 1000));
        } finally {
          await reader.close();
        }
        expect(await raw.openReader(info.sha256)).toBeUndefined();
        expect(await raw.openReader("../etc/passwd")).toBeUndefined();
        expect(await raw.openReader(info.sha256.toUpperCase())).toBeUndefined();
      });
    });

    describe("addresses that are not 64 lowercase hex characters", () => {
      let content: Buffer;
      let info: BlobInfo;
      beforeEach(async () => {
        content = randomBytes(1000);
        info = await store.put(chunksOf(content));
      });

      const malformed: Array<[string, (sha256: string) => string]> = [
        ["a path escape", () => "../etc/passwd"],
        ["a deep path escape", () => "../../../../../../../../etc/passwd"],
        ["an absolute path", () => "/etc/passwd"],
        ["the uppercase form of a stored address", (sha256) => sha256.toUpperCase()],
        ["a stored address missing its last character", (sha256) => sha256.slice(0, 63)],
        ["a stored address with an extra character", (sha256) => `${sha256}0`],
        ["a stored address with a trailing newline", (sha256) => `${sha256}\n`],
        ["a stored address with surrounding spaces", (sha256) => ` ${sha256} `],
        ["the fan-out path of a stored address", (sha256) => `${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`],
        ["a stored address behind a path", (sha256) => `../blobs/${sha256}`],
        [
          // Joined naively into a fan-out layout this resolves to the stored blob itself.
          "a traversal that lands on a stored blob",
          (sha256) => `${sha256.slice(0, 2)}/../../${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`,
        ],
        ["64 non-hex characters", () => "g".repeat(64)],
        ["the empty string", () => ""],
      ];

      it.each(malformed)("treats %s as absent for stat and open", async (_, make) => {
        const address = make(info.sha256);
        expect(await store.stat(address)).toBeUndefined();
        expect(await store.open(address)).toBeUndefined();
        expect(await store.open(address, { start: 0, end: 1 })).toBeUndefined();
      });

      it.each(malformed)("treats delete of %s as a no-op", async (_, make) => {
        await expect(store.delete(make(info.sha256))).resolves.toBeUndefined();
        expect(await listAll(store)).toEqual([info.sha256]);
        expectSameBytes(await readBlob(store, info.sha256), content);
      });
    });

    describe("delete", () => {
      it("removes the blob, and deleting it again or deleting a never-stored blob is not an error", async () => {
        const kept = await store.put(chunksOf(randomBytes(700)));
        const removed = await store.put(chunksOf(randomBytes(300)));
        await store.delete(removed.sha256);
        expect(await store.stat(removed.sha256)).toBeUndefined();
        expect(await store.open(removed.sha256)).toBeUndefined();
        expect(await listAll(store)).toEqual([kept.sha256]);
        await expect(store.delete(removed.sha256)).resolves.toBeUndefined();
        await expect(store.delete(digest("sha256", randomBytes(8)))).resolves.toBeUndefined();
        expect(await store.stat(kept.sha256)).toEqual({ size: 700 });
      });

      it("lets deleted content be stored again", async () => {
        const content = randomBytes(2000);
        const info = await store.put(chunksOf(content));
        await store.delete(info.sha256);
        expect(await store.put(chunksOf(content))).toEqual(info);
        expectSameBytes(await readBlob(store, info.sha256), content);
      });
    });

    describe("blobs never change after they are written", () => {
      it("keeps a blob's bytes through re-puts, failed puts and other deletes", async () => {
        const content = randomBytes(10_000);
        const info = await store.put(chunksOf(content));
        await store.put(chunksOf(content), { extraDigests: ["md5"] });
        await store.put(chunksOf(content, randomBytes(1)), { maxBytes: 10_000 }).catch(() => undefined);
        const other = await store.put(chunksOf(randomBytes(10_000)));
        await store.delete(other.sha256);
        expect(await store.stat(info.sha256)).toEqual({ size: content.length });
        expectSameBytes(await readBlob(store, info.sha256), content);
      });
    });

    describe("list and totalBytes", () => {
      it("are empty for an empty store", async () => {
        expect(await listAll(store)).toEqual([]);
        expect(await store.totalBytes()).toBe(0);
      });

      it("report every stored address and the sum of their sizes", async () => {
        const sizes = [0, 1, 4096, 123_457];
        const kept = await Promise.all(sizes.map((size) => store.put(chunksOf(randomBytes(size)))));
        const removed = await store.put(chunksOf(randomBytes(70_000)));
        const keptBytes = sizes.reduce((a, b) => a + b, 0);
        expect(await listAll(store)).toEqual([...kept, removed].map((info) => info.sha256).sort());
        expect(await store.totalBytes()).toBe(keptBytes + 70_000);

        await store.delete(removed.sha256);
        expect(await listAll(store)).toEqual(kept.map((info) => info.sha256).sort());
        expect(await store.totalBytes()).toBe(keptBytes);
      });
    });

    describe("clearStaleTemporaryFiles", () => {
      it("finds nothing to clear on a fresh store", async () => {
        expect(await store.clearStaleTemporaryFiles()).toEqual({ files: 0, bytes: 0 });
      });

      it("finds nothing to clear after successful and failed puts, and keeps every blob", async () => {
        const info = await store.put(chunksOf(randomBytes(5000)));
        await store.put(chunksOf(randomBytes(5000)), { maxBytes: 10 }).catch(() => undefined);
        await store.put(chunksOf(randomBytes(5000)), { expected: { sha256: EMPTY_SHA256 } }).catch(() => undefined);
        expect(await store.clearStaleTemporaryFiles()).toEqual({ files: 0, bytes: 0 });
        expect(await fixture.tempFileCount()).toBe(0);
        expect(await listAll(store)).toEqual([info.sha256]);
        expect(await store.stat(info.sha256)).toEqual({ size: 5000 });
      });
    });
  });
}
