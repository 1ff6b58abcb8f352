import { createHash, randomBytes } from "node:crypto";
import { EventEmitter } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import http, { type ServerResponse } from "node:http";
import os from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { registerErrorHandling } from "../../src/http/errors.js";
import { recyclingBlobStream } from "../../src/http/recycling-stream.js";
import { sendBlob } from "../../src/http/send-blob.js";
import type { BlobReader } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";

/**
 * Large downloads reuse their read buffers (src/http/recycling-stream.ts). Reusing a buffer whose
 * bytes are still on their way to the kernel would corrupt the download, so these tests check
 * the bytes received under backpressure, concurrency and ranges, and that reuse really happens.
 */
const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

function memoryReader(content: Buffer): BlobReader & { closed: boolean } {
  return {
    size: content.length,
    closed: false,
    async read(target, position) {
      return content.copy(target, 0, position, Math.min(content.length, position + target.length));
    },
    async close() {
      this.closed = true;
    },
  };
}

/** What the stream reads of its response: the bytes not yet in the kernel, and "finish". */
function fakeResponse(writableLength: number): ServerResponse {
  return Object.assign(new EventEmitter(), { writableLength }) as unknown as ServerResponse;
}

describe("recyclingBlobStream", () => {
  it("reuses its buffers once the response has flushed them, and gives chunks of their own while not", async () => {
    const content = randomBytes(10 * 64 * 1024 + 123);
    for (const [pending, expectReuse] of [
      [0, true],
      [Number.MAX_SAFE_INTEGER, false],
    ] as const) {
      const response = fakeResponse(pending);
      const reader = memoryReader(content);
      const stream = recyclingBlobStream(reader, { start: 0, end: content.length - 1 }, response, {
        chunkBytes: 64 * 1024,
        buffers: 2,
      });
      const chunks: Buffer[] = [];
      const backing = new Set<ArrayBufferLike>();
      // Copied as it arrives, as a socket would: a reused buffer must not change what was received.
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        backing.add(chunk.buffer);
        chunks.push(Buffer.from(chunk));
      }
      expect(Buffer.concat(chunks).equals(content)).toBe(true);
      if (expectReuse) expect(backing.size).toBe(2);
      else expect(backing.size).toBe(chunks.length);
      expect(reader.closed).toBe(true);
    }
  });

  it("hands a finished response's buffers to the next response, and never an unfinished one's", async () => {
    const content = randomBytes(3 * 512 * 1024);
    const backingOf = async (response: ServerResponse) => {
      const backing = new Set<ArrayBufferLike>();
      const stream = recyclingBlobStream(memoryReader(content), { start: 0, end: content.length - 1 }, response);
      const chunks: Buffer[] = [];
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        backing.add(chunk.buffer);
        chunks.push(Buffer.from(chunk));
      }
      expect(Buffer.concat(chunks).equals(content)).toBe(true);
      return backing;
    };
    const unfinished = await backingOf(fakeResponse(0));
    const finishing = fakeResponse(0);
    const finished = await backingOf(finishing);
    expect([...finished].some((buffer) => unfinished.has(buffer))).toBe(false);
    finishing.emit("finish");
    const next = await backingOf(fakeResponse(0));
    expect([...next].every((buffer) => finished.has(buffer))).toBe(true);
  });

  it("serves a range, and fails rather than truncate when the blob is shorter than promised", async () => {
    const content = randomBytes(300_000);
    const response = fakeResponse(0);
    const part: Buffer[] = [];
    for await (const chunk of recyclingBlobStream(memoryReader(content), { start: 1000, end: 250_999 }, response, {
      chunkBytes: 4096,
    }) as AsyncIterable<Buffer>) {
      part.push(Buffer.from(chunk));
    }
    expect(Buffer.concat(part).equals(content.subarray(1000, 251_000))).toBe(true);

    const short = recyclingBlobStream(memoryReader(content), { start: 0, end: 400_000 }, response);
    await expect(pipeline(short, new Writable({ write: (_c, _e, done) => done() }))).rejects.toThrow(/ended/);
  });
});

describe("large downloads over a real socket", () => {
  let app: FastifyInstance;
  let dir: string;
  let port: number;
  const content = randomBytes(24 * 1024 * 1024 + 777);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "wharf-recycling-"));
    const blobs = createFileBlobStore(dir);
    const info = await blobs.put(Readable.from([content]));
    const item = { sha256: info.sha256, size: info.size, lastModified: new Date(), contentType: "application/zip" };
    app = Fastify();
    registerErrorHandling(app);
    app.get("/big", async (request, reply) => sendBlob(request, reply, item, blobs));
    const address = await app.listen({ port: 0, host: "127.0.0.1" });
    port = Number(new URL(address).port);
  });
  afterAll(async () => {
    await app.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** Downloads with a reader that stalls now and then, so the server meets full socket buffers. */
  function slowDownload(headers: Record<string, string> = {}): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const request = http.get({ host: "127.0.0.1", port, path: "/big", headers }, (res) => {
        const chunks: Buffer[] = [];
        let received = 0;
        res.on("data", (chunk: Buffer) => {
          chunks.push(chunk);
          received += chunk.length;
          if (received % 7 === 0 || chunks.length % 50 === 0) {
            res.pause();
            setTimeout(() => res.resume(), 5);
          }
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      });
      request.on("error", reject);
    });
  }

  it("delivers every byte intact to slow and concurrent clients", async () => {
    const results = await Promise.all([slowDownload(), slowDownload(), slowDownload(), slowDownload()]);
    for (const { status, body } of results) {
      expect(status).toBe(200);
      expect(body.length).toBe(content.length);
      expect(sha256(body)).toBe(sha256(content));
    }
  });

  it("delivers ranges intact", async () => {
    const { status, body } = await slowDownload({ range: "bytes=5000000-15000000" });
    expect(status).toBe(206);
    expect(sha256(body)).toBe(sha256(content.subarray(5_000_000, 15_000_001)));
  });
});
