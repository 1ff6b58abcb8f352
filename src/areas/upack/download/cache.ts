import { VersionedCache } from "../../../storage/change-watch.js";
import type { CacheVersion } from "../../../storage/metadata-db.js";
import type { Feed } from "../../management/index.js";
import type { DownloadTarget, UpackDownloadService } from "./service.js";

/** Distinct download addresses remembered; a CI farm hammers a few, so a small bound is plenty. */
const MAX_LOOKUPS = 4_096;

/**
 * The download service with `resolve` (the feed by name, then the version row) remembered until
 * the database changes: small downloads are then served without a query. Any write (an upload,
 * a delete, a feed rename, from this process or another) empties it, see ChangeWatch; download
 * counts do not, they are written quietly. Misses (404s) are never kept: an unknown address
 * costs what it did before, and cannot fill the cache.
 */
export function cacheDownloadLookups(service: UpackDownloadService, watch: CacheVersion): UpackDownloadService {
  const cache = new VersionedCache<string, { feed: Feed; target: DownloadTarget }>(MAX_LOOKUPS);
  return {
    ...service,
    async resolve(feedName, tail, latest) {
      // Taken before the lookup reads anything: a write during it leaves the entry already invalid.
      const version = watch.version();
      const key = `${feedName.toLowerCase()}\0${latest ? "latest" : "exact"}\0${tail}`;
      const hit = cache.get(key, version);
      if (hit !== undefined) return hit;
      const resolved = await service.resolve(feedName, tail, latest);
      cache.set(key, version, resolved);
      return resolved;
    },
  };
}
