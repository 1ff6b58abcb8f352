import { describe, expect, it } from "vitest";
import { ResponseCache } from "../../src/areas/upack/read/response-cache.js";

/**
 * The feed listing cache under requests an attacker spells at will (issue 11 section 7): what it
 * holds follows the distinct answers and the data's current generation, not the number of spellings.
 */

const KiB = 1024;
const answer = (fill: string, size = 100 * KiB) => Buffer.alloc(size, fill);

describe("ResponseCache", () => {
  it("holds one copy of an answer however many requests get it", () => {
    const cache = new ResponseCache(64 * 1024 * KiB);
    const listing = answer("a");
    for (let count = 500; count < 2500; count++) {
      // Every count above the feed's 400 packages answers the same bytes, built anew each time.
      cache.set(1, `packages\0${count}`, "g1", Buffer.from(listing));
    }
    expect(cache.size).toBe(2000);
    expect(cache.bytes).toBe(listing.length);
    expect(cache.get(1, "packages\u0000777", "g1")?.equals(listing)).toBe(true);
  });

  it("keeps at most MAX_KEYS requests and maxBytes of distinct answers", () => {
    const cache = new ResponseCache(1024 * KiB);
    for (let i = 0; i < ResponseCache.MAX_KEYS + 500; i++) cache.set(1, `k${i}`, "g1", answer("z"));
    expect(cache.size).toBe(ResponseCache.MAX_KEYS);
    for (let i = 0; i < 50; i++)
      cache.set(1, `distinct${i}`, "g1", answer(String.fromCharCode(65 + (i % 26)), 100 * KiB + i));
    expect(cache.bytes).toBeLessThanOrEqual(1024 * KiB);
    // The most recent ones stay.
    expect(cache.get(1, "distinct49", "g1")).toBeDefined();
    expect(cache.get(1, "k0", "g1")).toBeUndefined();
  });

  it("drops a feed's answers as soon as the feed is seen at a newer generation, and only that feed's", () => {
    const cache = new ResponseCache(64 * 1024 * KiB);
    cache.set(1, "one", "g1", answer("a"));
    cache.set(1, "two", "g1", answer("b"));
    cache.set(2, "other", "h1", answer("c"));
    expect(cache.bytes).toBe(300 * KiB);
    expect(cache.get(1, "two", "g2")).toBeUndefined(); // an upload moved feed 1 on
    expect(cache.size).toBe(1);
    expect(cache.bytes).toBe(100 * KiB);
    expect(cache.get(1, "one", "g2")).toBeUndefined();
    expect(cache.get(2, "other", "h1")?.equals(answer("c"))).toBe(true);
  });

  it("never answers from another generation, even for an answer kept after a newer one was seen", () => {
    const cache = new ResponseCache(64 * 1024 * KiB);
    cache.set(1, "k", "g2", answer("new"));
    cache.set(1, "late", "g1", answer("old")); // built before the write, kept after it
    expect(cache.get(1, "late", "g2")).toBeUndefined();
    expect(cache.get(1, "k", "g2")).toBeUndefined(); // dropped by the late answer: a rebuild, never stale
    cache.set(1, "k", "g2", answer("new"));
    expect(cache.get(1, "k", "g2")?.equals(answer("new"))).toBe(true);
  });

  it("keeps no small answers", () => {
    const cache = new ResponseCache(64 * 1024 * KiB);
    cache.set(1, "small", "g1", answer("s", ResponseCache.MIN_BYTES - 1));
    expect(cache.size).toBe(0);
  });
});
