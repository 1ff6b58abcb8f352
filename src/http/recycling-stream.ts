import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import type { BlobReader } from "../storage/blob-store.js";

/**
 * The bytes `start..end` (inclusive) of a blob as a stream piped straight into `response`, read
 * into a few buffers that are used again and again instead of a new one per chunk.
 *
 * Why: every chunk of an ordinary file stream is a fresh ArrayBuffer, i.e. external memory to
 * V8. Serving 1 GiB files to 8 clients, some of those buffers live long enough to be promoted
 * while they wait in socket queues; from then on each 64 MiB of new buffers forced a full
 * mark-compact of the heap (about 30 a second), which took half the server's CPU and halved
 * its throughput (bench/endpoints-scenarios.ts; --trace-gc).
 *
 * Reuse is safe only once the response has handed a buffer's bytes to the kernel. The stream is
 * the response's only source (Fastify pipes it directly), so every byte pushed and not yet in the
 * kernel is either still in this stream's queue or counted by `response.writableLength` (which
 * includes the socket's pending writes). A buffer whose bytes all lie before that unflushed tail
 * is free; when the next one is not, this chunk gets a fresh buffer, so a slow or odd consumer
 * costs garbage, never correctness.
 */
export function recyclingBlobStream(
  reader: BlobReader,
  range: { readonly start: number; readonly end: number },
  response: ServerResponse,
  options: { readonly chunkBytes?: number; readonly buffers?: number } = {},
): Readable {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const ring: Buffer[] = [];
  /** For each ring buffer: the stream offset just past the bytes it last carried. */
  const carriedUntil: number[] = [];
  const ringSize = options.buffers ?? DEFAULT_BUFFERS;
  let slot = 0;
  let position = range.start;
  let pushed = 0;

  const isFlushed = (until: number, stream: Readable) =>
    until <= pushed - (stream.readableLength + response.writableLength);
  // Once the response has finished, every byte it sent is in the kernel: the ring serves the next one.
  response.once("finish", () => giveBack(ring));

  return new Readable({
    // One chunk read ahead while the previous one is written: a single client is served at disk
    // and socket speed together rather than one after the other.
    highWaterMark: chunkBytes,
    read() {
      const remaining = range.end + 1 - position;
      if (remaining <= 0) {
        this.push(null);
        return;
      }
      let buffer = ring[slot];
      const reusable = buffer !== undefined && isFlushed(carriedUntil[slot] ?? 0, this);
      if (buffer === undefined) {
        buffer = spareBuffer(chunkBytes);
        ring[slot] = buffer;
      } else if (!reusable) {
        buffer = Buffer.allocUnsafe(chunkBytes); // still in flight: this chunk gets its own
      }
      const target = buffer.subarray(0, Math.min(chunkBytes, remaining));
      const inRing = buffer === ring[slot];
      reader.read(target, position).then(
        (count) => {
          if (count === 0) {
            this.destroy(new Error(`the stored blob ended ${remaining} bytes early`));
            return;
          }
          position += count;
          pushed += count;
          if (inRing) {
            carriedUntil[slot] = pushed;
            slot = (slot + 1) % ringSize;
          }
          this.push(target.subarray(0, count));
        },
        (error: unknown) => this.destroy(error as Error),
      );
    },
    destroy(error, callback) {
      reader.close().then(
        () => callback(error),
        (closeError: unknown) => callback(error ?? (closeError as Error)),
      );
    },
  });
}

/**
 * Ring buffers of finished responses, taken by the next ones: without them every download's ring
 * was garbage when it ended, and 8 clients downloading 100 MiB packages one after another kept
 * two rounds of rings alive until the next collection. Bounded: what a burst of
 * concurrent downloads needs beyond it is left to the garbage collector as before.
 */
const spares: Buffer[] = [];
const MAX_SPARES = 32;

function spareBuffer(bytes: number): Buffer {
  const spare = bytes === DEFAULT_CHUNK_BYTES ? spares.pop() : undefined;
  return spare ?? Buffer.allocUnsafeSlow(bytes);
}

function giveBack(ring: Buffer[]): void {
  for (const buffer of ring.splice(0)) {
    if (buffer.length === DEFAULT_CHUNK_BYTES && spares.length < MAX_SPARES) spares.push(buffer);
  }
}

/**
 * Four per response: one in the socket, one queued, one being read, and one spare for a socket
 * that is slow to take the first. 256 KiB each: against 512 KiB (what fresh-buffer file streams
 * need to keep garbage collection down, storage/file-blob-store.ts), 8 clients of 100 MiB
 * packages were served as fast, and the server's peak memory grew by under 1 MB while they were
 * instead of 2 to 10 MB (bench/upack-scenarios.ts).
 */
const DEFAULT_CHUNK_BYTES = 256 * 1024;
const DEFAULT_BUFFERS = 4;
