import type { FileHandle } from "node:fs/promises";

/** Bytes gathered into one write: the socket's chunks are 64 KiB at most. */
const WRITE_BATCH_BYTES = 1024 * 1024;

/**
 * Writes an upload's chunks in batches of about 1 MiB, one batch on the disk while the next is
 * received: written one by one, each 64 KiB socket chunk cost a round trip to the thread pool
 * while the socket waited, and uploads ran at 0.6 of a plain copy (bench/upack-scenarios.ts).
 * At most two batches are held, so a slow disk still slows the sender down.
 */
export class BatchedWriter {
  #batch: Uint8Array[] = [];
  #batchBytes = 0;
  #writing: Promise<void> | undefined;

  constructor(private readonly handle: FileHandle) {}

  /** Takes the chunk; waits only when a full batch must wait for the previous one to be written. */
  async add(chunk: Uint8Array): Promise<void> {
    if (chunk.length === 0) return;
    this.#batch.push(chunk);
    this.#batchBytes += chunk.length;
    if (this.#batchBytes >= WRITE_BATCH_BYTES) await this.#startWrite();
  }

  /** Writes what is left and waits for every write. */
  async flush(): Promise<void> {
    await this.#startWrite();
    await this.#writing;
  }

  /** Waits for a write under way, whatever its outcome (for cleanup after a failure). */
  async settled(): Promise<void> {
    await this.#writing?.catch(() => undefined);
  }

  async #startWrite(): Promise<void> {
    await this.#writing;
    const batch = this.#batch;
    this.#batch = [];
    this.#batchBytes = 0;
    if (batch.length === 0) return;
    const writing = writeFully(this.handle, batch);
    // Its failure is thrown by the next add or flush; until then it must not count as unhandled.
    writing.catch(() => undefined);
    this.#writing = writing;
  }
}

async function writeFully(handle: FileHandle, chunks: Uint8Array[]): Promise<void> {
  let pending = chunks;
  // A write may be partial; the rest must follow or the blob would be truncated.
  while (pending.length > 0) {
    const { bytesWritten } = await handle.writev(pending);
    // Never the case for a regular file, but it would turn this loop into an endless one.
    if (bytesWritten <= 0) throw new Error(`A write to the temporary file made no progress.`);
    pending = chunksAfter(pending, bytesWritten);
  }
}

/** The chunks after the first `written` bytes. */
export function chunksAfter(chunks: Uint8Array[], written: number): Uint8Array[] {
  let skipped = written;
  let index = 0;
  while (index < chunks.length && skipped >= (chunks[index] as Uint8Array).length) {
    skipped -= (chunks[index] as Uint8Array).length;
    index += 1;
  }
  const left = chunks.slice(index);
  if (skipped > 0 && left.length > 0) left[0] = (left[0] as Uint8Array).subarray(skipped);
  return left;
}
