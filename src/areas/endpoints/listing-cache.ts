import { VersionedCache } from "../../storage/change-watch.js";
import type { CacheVersion } from "../../storage/metadata-db.js";

/**
 * Large folder listings as sent, remembered until the database changes (ChangeWatch: any write
 * from this process or another empties it). A listing of 10,000 items costs ~100 ms to read,
 * present and serialise (bench/endpoints-scenarios.ts), and clients that sync a folder ask for
 * the same one again and again. Small listings are cheap and not kept; huge ones would take too
 * much memory, so at most MAX_ENTRIES texts of at most MAX_TEXT_CHARS each are held (~48 MiB).
 */
export interface ListingCache {
  /** The cached text for the key, or the one `build` makes (kept when large enough). */
  get(key: string, build: () => Promise<string>): Promise<string>;
}

const MAX_ENTRIES = 4;
const MIN_TEXT_CHARS = 256 * 1024;
const MAX_TEXT_CHARS = 12 * 1024 * 1024;

export function createListingCache(watch: CacheVersion): ListingCache {
  const cache = new VersionedCache<string, string>(MAX_ENTRIES);
  return {
    async get(key, build) {
      // Taken before the listing is read: a write during it leaves the entry already invalid.
      const version = watch.version();
      const hit = cache.get(key, version);
      if (hit !== undefined) return hit;
      const text = await build();
      if (text.length >= MIN_TEXT_CHARS && text.length <= MAX_TEXT_CHARS) cache.set(key, version, text);
      return text;
    },
  };
}
