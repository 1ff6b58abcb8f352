/**
 * Downloads of virtual packages (docs/compat.md 1.6: "downloads of a virtual package transparently
 * return the assembled package"; ProGet caches it). The download service's `assembleVirtual` seam
 * is implemented here: the cached assembly when there is one, else one assembly from the stored
 * manifest, saved to the cache. The write side calls `forgetFeed` after every upload, replacement
 * or deletion in a feed, because assemblies are built from that feed's packages.
 */
import type { Clock } from "../../../domain/clock.js";
import { conflict, DomainError } from "../../../domain/errors.js";
import { formatVersion, type UpackVersion } from "../../../domain/upack-version.js";
import { parseVirtualManifest, type VirtualManifest } from "../../../domain/vpack.js";
import type { GuardedFetch } from "../../../net/fetch-guard.js";
import type { BlobKeeper, FeedKeepers } from "../../../storage/blob-keeper.js";
import { type BlobInfo, type BlobStore, canOpenReader } from "../../../storage/blob-store.js";
import { isBusy } from "../../../storage/busy.js";
import { byDatabase, type MetadataDb } from "../../../storage/metadata-db.js";
import { isForeignKeyViolation } from "../../../storage/sqlite-errors.js";
import type { AssembleVirtual, StoredPackage, VirtualPackageVersion } from "../download/service.js";
import type { UpackQueryRepository } from "../read/query-repository.js";
import {
  type AssembledCache,
  type AssembledPackage,
  assembleVirtualPackage,
  createAssembledCache,
} from "./assembly.js";
import { createPostgresAssembledCache } from "./cache-postgres.js";

export interface VirtualDownloadsDeps {
  /** The cache of assemblies is virtual/cache.ts's (or cache-postgres.ts's) on it, unless `assembled` is given. */
  readonly db?: MetadataDb;
  /** The cache of assemblies; by default the one on `db`. */
  readonly assembled?: AssembledCache;
  readonly repository: UpackQueryRepository;
  readonly blobs: BlobStore;
  /**
   * Holds the assembled blob from its put until its row is saved: garbage collection must not
   * delete it in between when the bytes were already stored, unreferenced (garbage-collector.ts).
   */
  readonly keepers?: FeedKeepers;
  /** The app's one guarded fetch: URL sources obey the administrator's fetch settings. */
  readonly fetch: GuardedFetch;
  /** Where archives are built before they enter the blob store (`<dataDir>/tmp`). */
  readonly tmpDir: string;
  readonly clock: Clock;
}

export interface VirtualDownloads {
  readonly assemble: AssembleVirtual;
  /**
   * Forgets every assembly of the feed; to be called (and awaited) after each committed upload,
   * replacement or deletion. No assembly that started before the call is cached after it.
   */
  forgetFeed(feedId: number): Promise<void>;
}

interface Running {
  /** The feed's generation when the assembly started: a later change makes its result unusable for others. */
  readonly generation: number;
  readonly result: Promise<StoredPackage>;
}

export function createVirtualDownloads(deps: VirtualDownloadsDeps): VirtualDownloads {
  const { repository } = deps;
  const cache = cacheOf(deps);
  /**
   * Bumped by forgetFeed. An assembly that ran across a change may have read a package that has
   * since been replaced: it is served to the downloads that asked before the change, but neither
   * cached nor shared with downloads that arrive after it.
   */
  const generations = new Map<number, number>();
  /** By version id: concurrent first downloads share one assembly instead of each building one. */
  const running = new Map<number, Running>();
  const generationOf = (feedId: number) => generations.get(feedId) ?? 0;

  /** Same-feed lookup (docs/compat.md 1.6), by the same keys as a download URL. */
  async function resolvePackage(feedId: number, group: string, name: string, version: UpackVersion) {
    const key = formatVersion(version).toLowerCase();
    const row = await repository.findDownload(feedId, group.toLowerCase(), name.toLowerCase(), key);
    if (row === undefined) return undefined;
    if (row.is_virtual === 1) {
      // Its stored file holds no content to take, and nesting would allow cycles; say so plainly.
      throw conflict(
        "VPACK_SOURCE_IS_VIRTUAL",
        "That package is itself virtual; a virtual package can only be built from ordinary packages.",
      );
    }
    return { blobSha256: row.blob_sha256, sha1: row.sha1 };
  }

  async function build(v: VirtualPackageVersion, generation: number): Promise<StoredPackage> {
    const releases: Array<() => void> = [];
    // Assembled into the virtual feed's own package store.
    const keeper = deps.keepers?.keeperFor(v.feed.id);
    const blobs = keeper === undefined ? deps.blobs : withHeldPuts(deps.blobs, keeper, releases);
    try {
      const info = await assembleVirtualPackage(manifestOf(v), {
        resolvePackage: (group, name, version) => resolvePackage(v.feed.id, group, name, version),
        blobs,
        fetch: deps.fetch,
        tmpDir: deps.tmpDir,
        modified: v.publishedAt,
      });
      const saved =
        generationOf(v.feed.id) === generation ? await trySave(v.feed.id, generation, v.versionId, info) : undefined;
      if (saved === undefined) return { sha256: info.sha256, size: info.size, lastModified: deps.clock.now() };
      return stored(saved, v.publishedAt);
    } finally {
      for (const release of releases) release();
    }
  }

  /**
   * Saves the assembly of a feed at `generation`, which the caller has just checked is current.
   * Undefined when the version is gone (deleted by another process meanwhile): nothing to cache it
   * for; or when another process holds the write lock: served uncached rather than waited for.
   *
   * On SQLite the row is written within the call of `save`, in the tick of the caller's check: no
   * forgetFeed can slip in between. On PostgreSQL it is written a round trip later, and a
   * forgetFeed made meanwhile (its generation moved before its delete was sent) may have deleted
   * before it: the row is then forgotten again once saved, so that no assembly built across a
   * change stays cached.
   */
  async function trySave(
    feedId: number,
    generation: number,
    versionId: number,
    info: BlobInfo,
  ): Promise<AssembledPackage | undefined> {
    let saved: AssembledPackage;
    try {
      saved = await cache.save(versionId, info);
    } catch (error) {
      if (isBusy(error)) return undefined;
      if (isForeignKeyViolation(error)) return undefined;
      throw error;
    }
    if (generationOf(feedId) !== generation) {
      // On SQLite that forgetFeed ran after the save, and deleted the row itself.
      await cache.forget(versionId).catch((error: unknown) => {
        if (!isBusy(error)) throw error;
      });
    }
    return saved;
  }

  return {
    async assemble(v) {
      const hit = await cache.find(v.versionId);
      if (hit !== undefined) return stored(hit, v.publishedAt);
      const generation = generationOf(v.feed.id);
      const current = running.get(v.versionId);
      if (current !== undefined && current.generation === generation) return current.result;
      const result = build(v, generation).finally(() => {
        if (running.get(v.versionId)?.result === result) running.delete(v.versionId);
      });
      running.set(v.versionId, { generation, result });
      return result;
    },

    async forgetFeed(feedId) {
      // Moved before the delete is sent: a save that sees the old generation is sent before it.
      generations.set(feedId, generationOf(feedId) + 1);
      await cache.forgetFeed(feedId);
    },
  };
}

function cacheOf(deps: VirtualDownloadsDeps): AssembledCache {
  if (deps.assembled !== undefined) return deps.assembled;
  if (deps.db !== undefined) {
    return byDatabase(
      deps.db,
      (sqlite) => createAssembledCache(sqlite, deps.clock),
      (postgres) => createPostgresAssembledCache(postgres, deps.clock),
    );
  }
  throw new Error("virtual downloads need a database or a cache of assemblies");
}

/**
 * Last-Modified is the later of publication and assembly: re-assembling after a referenced
 * package changed must move it, or an If-Modified-Since download would get a 304 for bytes it
 * never had. (The ETag, the blob's SHA-256, changes with the bytes anyway.)
 */
function stored(row: AssembledPackage, publishedAt: Date): StoredPackage {
  const lastModified = new Date(Math.max(publishedAt.getTime(), Date.parse(row.assembledAt)));
  return { sha256: row.blobSha256, size: row.size, lastModified };
}

/**
 * The stored manifest passed these same checks at upload; should a later release check more
 * strictly, the download is a conflict between the stored package and this server, not a bad request.
 */
function manifestOf(v: VirtualPackageVersion): VirtualManifest {
  try {
    return parseVirtualManifest(v.manifest, { label: "upack.json" });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    throw conflict("VPACK_MANIFEST_INVALID", `The virtual package cannot be assembled: ${error.message}`);
  }
}

/** The store, except that a put is made through the keeper and held until `releases` are called. */
function withHeldPuts(store: BlobStore, keeper: BlobKeeper, releases: Array<() => void>): BlobStore {
  return {
    put: async (source, options) => {
      const held = await keeper.put(source, options);
      releases.push(held.release);
      return held.blob;
    },
    stat: (sha256) => store.stat(sha256),
    open: (sha256, range) => store.open(sha256, range),
    delete: (sha256) => store.delete(sha256),
    list: () => store.list(),
    totalBytes: () => store.totalBytes(),
    clearStaleTemporaryFiles: () => store.clearStaleTemporaryFiles(),
    ...(canOpenReader(store) ? { openReader: (sha256: string) => store.openReader(sha256) } : {}),
  };
}
