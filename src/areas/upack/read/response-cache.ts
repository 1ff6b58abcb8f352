import { createHash } from "node:crypto";

interface Body {
  readonly bytes: Buffer;
  /** Entries sharing it. */
  users: number;
}

interface Entry {
  readonly feedId: number;
  readonly body: Body;
  readonly digest: string;
}

/**
 * JSON answers by request, each valid for one generation of its feed (UpackQueryRepository
 * generation): coarse (any upload anywhere, any download in the feed, invalidates), but it can
 * never serve stale data, and listings are read far more often than feeds change. Only answers
 * big enough to be worth it are kept; least recently used ones go first past `maxBytes` bytes or
 * MAX_KEYS requests.
 *
 * What a caller cannot multiply: requests spelled differently often get the same bytes (every
 * `count` above a feed's package count does), so entries share one buffer per distinct content and
 * a spelling costs a key, not a copy; and a feed seen at a newer generation has its older answers
 * dropped at once rather than left to age out. Fuzzing a feed of 400 packages with random counts
 * filled the whole budget with copies of one listing before.
 */
export class ResponseCache {
  static readonly MIN_BYTES = 64 * 1024;
  static readonly MAX_KEYS = 4096;
  readonly #entries = new Map<string, Entry>();
  /** By SHA-1 of the bytes. */
  readonly #bodies = new Map<string, Body>();
  /** Each feed's generation as last seen, with the keys kept for it. */
  readonly #feeds = new Map<number, { generation: string; keys: Set<string> }>();
  #bytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** Bytes held (each distinct answer once). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Requests with an answer kept. */
  get size(): number {
    return this.#entries.size;
  }

  get(feedId: number, key: string, generation: string): Buffer | undefined {
    this.#see(feedId, generation);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, entry); // re-inserted: Map order is the recency order
    return entry.body.bytes;
  }

  set(feedId: number, key: string, generation: string, bytes: Buffer): void {
    if (bytes.length < ResponseCache.MIN_BYTES || bytes.length > this.maxBytes / 4) return;
    this.#see(feedId, generation);
    this.#remove(key);
    const digest = createHash("sha1").update(bytes).digest("hex");
    let body = this.#bodies.get(digest);
    if (body === undefined) {
      body = { bytes, users: 0 };
      this.#bodies.set(digest, body);
      this.#bytes += bytes.length;
    }
    body.users += 1;
    this.#entries.set(key, { feedId, body, digest });
    this.#feeds.get(feedId)?.keys.add(key);
    for (const oldest of this.#entries.keys()) {
      if (this.#bytes <= this.maxBytes && this.#entries.size <= ResponseCache.MAX_KEYS) break;
      this.#remove(oldest);
    }
  }

  /**
   * Notes the generation the feed is asked or answered at, dropping its answers of any other: so
   * every answer kept for a feed is of the generation last seen, and a get at that generation may
   * return it. (An answer built before a write and kept after it only costs a rebuild.)
   */
  #see(feedId: number, generation: string): void {
    const feed = this.#feeds.get(feedId);
    if (feed?.generation === generation) return;
    if (feed !== undefined) for (const key of feed.keys) this.#remove(key);
    this.#feeds.set(feedId, { generation, keys: new Set() });
  }

  #remove(key: string): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) return;
    this.#entries.delete(key);
    this.#feeds.get(entry.feedId)?.keys.delete(key);
    entry.body.users -= 1;
    if (entry.body.users === 0) {
      this.#bodies.delete(entry.digest);
      this.#bytes -= entry.body.bytes.length;
    }
  }
}
