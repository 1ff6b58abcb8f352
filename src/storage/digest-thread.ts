import { Worker } from "node:worker_threads";

/**
 * Digests computed on a worker thread, beside the hashing a put does on the main thread: an S3
 * put needs the content's MD5 (Content-MD5) on top of its SHA-256 and SHA-1 before the upload can
 * start, and MD5 alone takes as long as the other two together (about 140 ms per 100 MiB here).
 * On its own core that time overlaps instead of adding up (bench/object-store.ts).
 *
 * One thread serves every put, started on first use and never keeping the process alive. Chunks
 * are copied into 1 MiB batches whose memory is handed over to the thread (no second copy), and at
 * most MAX_IN_FLIGHT bytes wait for it: a source faster than the thread waits rather than
 * piling up memory.
 */
export interface OffThreadDigest {
  /** Adds bytes; the promise settles once the thread has room for more. */
  update(chunk: Uint8Array): Promise<void>;
  /** Lowercase hex digests of everything added, by algorithm. */
  digest(): Promise<Record<string, string>>;
  /** Forgets the session (a put that failed); its pending calls reject. */
  cancel(): void;
}

const BATCH_BYTES = 1024 * 1024;
const MAX_IN_FLIGHT = 8 * BATCH_BYTES;

/**
 * The thread's whole program, plain JavaScript that runs as a script or a module alike (an
 * evaluated worker follows the process's --input-type), with no loader (execArgv below).
 */
const THREAD_SOURCE = `
const { parentPort } = process.getBuiltinModule("node:worker_threads");
const { createHash } = process.getBuiltinModule("node:crypto");
const sessions = new Map();
parentPort.on("message", (message) => {
  const { id } = message;
  if (message.type === "start") {
    sessions.set(id, message.algorithms.map((algorithm) => [algorithm, createHash(algorithm)]));
  } else if (message.type === "update") {
    const hashes = sessions.get(id);
    if (hashes) for (const [, hash] of hashes) hash.update(new Uint8Array(message.bytes));
    parentPort.postMessage({ type: "done", id, bytes: message.bytes.byteLength });
  } else if (message.type === "end") {
    const hashes = sessions.get(id) ?? [];
    sessions.delete(id);
    const digests = Object.fromEntries(hashes.map(([algorithm, hash]) => [algorithm, hash.digest("hex")]));
    parentPort.postMessage({ type: "digest", id, digests });
  } else if (message.type === "cancel") {
    sessions.delete(id);
  }
});
`;

type ThreadMessage =
  { type: "done"; id: number; bytes: number } | { type: "digest"; id: number; digests: Record<string, string> };

interface Session {
  inFlight: number;
  /** Waiting for room (update) or for the digests (digest). */
  onRoom?: () => void;
  onDigest?: (digests: Record<string, string>) => void;
  fail(error: unknown): void;
}

let thread: Worker | undefined;
let nextId = 1;
const sessions = new Map<number, Session>();

function startThread(): Worker {
  const worker = new Worker(THREAD_SOURCE, { eval: true, execArgv: [] });
  worker.on("message", (message: ThreadMessage) => {
    const session = sessions.get(message.id);
    if (!session) return;
    if (message.type === "done") {
      session.inFlight -= message.bytes;
      if (session.inFlight <= MAX_IN_FLIGHT - BATCH_BYTES) session.onRoom?.();
    } else {
      end(message.id);
      session.onDigest?.(message.digests);
    }
  });
  const lost = (error: unknown) => {
    thread = undefined;
    const cause = error instanceof Error ? error : new Error(`the digest thread stopped (${String(error)})`);
    for (const session of sessions.values()) session.fail(cause);
    sessions.clear();
  };
  worker.on("error", lost);
  worker.on("exit", (code) => {
    if (thread === worker) lost(new Error(`the digest thread exited with code ${code}`));
  });
  // After the listeners (adding a 'message' listener refs the thread again); held again while a
  // session waits for it (begin/end below).
  worker.unref();
  return worker;
}

/** Sessions are kept in `sessions` only while they wait for the thread, which is then held. */
function begin(id: number, session: Session) {
  sessions.set(id, session);
  if (sessions.size === 1) thread?.ref();
}

function end(id: number): boolean {
  const had = sessions.delete(id);
  if (had && sessions.size === 0) thread?.unref();
  return had;
}

export function digestOffThread(algorithms: readonly string[]): OffThreadDigest {
  const worker = (thread ??= startThread());
  const id = nextId++;
  let batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
  let filled = 0;
  let failure: { error: unknown } | undefined;
  const session: Session = {
    inFlight: 0,
    fail(error) {
      failure ??= { error };
      this.onRoom?.();
      this.onDigest?.({});
    },
  };
  begin(id, session);
  worker.postMessage({ type: "start", id, algorithms });

  function send() {
    if (filled === 0) return;
    // The batch's memory moves to the thread (a part-filled last batch as a copy of its own).
    const bytes = filled === BATCH_BYTES ? batch.buffer : batch.buffer.slice(0, filled);
    worker.postMessage({ type: "update", id, bytes }, [bytes]);
    session.inFlight += bytes.byteLength;
    batch = Buffer.allocUnsafeSlow(BATCH_BYTES);
    filled = 0;
  }

  function check() {
    if (failure) throw failure.error;
  }

  return {
    async update(chunk) {
      check();
      for (let offset = 0; offset < chunk.length;) {
        const taken = Math.min(BATCH_BYTES - filled, chunk.length - offset);
        batch.set(chunk.subarray(offset, offset + taken), filled);
        filled += taken;
        offset += taken;
        if (filled === BATCH_BYTES) send();
      }
      if (session.inFlight > MAX_IN_FLIGHT - BATCH_BYTES) {
        await new Promise<void>((resolve) => (session.onRoom = resolve));
        session.onRoom = undefined;
        check();
      }
    },
    async digest() {
      check();
      send();
      const digests = await new Promise<Record<string, string>>((resolve) => {
        session.onDigest = resolve;
        worker.postMessage({ type: "end", id });
      });
      check();
      return digests;
    },
    cancel() {
      if (!end(id)) return;
      worker.postMessage({ type: "cancel", id });
      session.fail(new Error("the digest was cancelled"));
    },
  };
}
