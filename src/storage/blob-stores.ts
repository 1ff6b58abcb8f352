import { Readable } from "node:stream";
import type { Config } from "../config.js";
import type { Clock } from "../domain/clock.js";
import { DomainError } from "../domain/errors.js";
import type { StorageConfig } from "../domain/package-store.js";
import type { ProxySettings } from "../net/outbound-proxy.js";
import { type BlobKeeper, blobReferenceCheck, createBlobKeeper } from "./blob-keeper.js";
import {
  type AbandonedUploads,
  type BlobReader,
  type BlobStore,
  canAbortAbandonedUploads,
  canOpenReader,
  openWithSize,
  type RandomAccessBlobs,
  type SizedReads,
} from "./blob-store.js";
import type { Db } from "./database.js";
import { byDatabase, isPostgres, type MetadataDb } from "./metadata-db.js";
import { createPostgresBlobStoreRows } from "./blob-stores-postgres.js";
import { postgresBlobReferenceCheck } from "./blob-keeper-postgres.js";
import { createSharedBlobHolds } from "./postgres/blob-holds.js";
import { dataPaths } from "./data-paths.js";
import { createFileBlobStore } from "./file-blob-store.js";
import { loadSecretKeys } from "./secret-keys.js";
import { type SecretBox, SecretUnreadableError } from "./secrets.js";
import { createObjectStore, DISK_STORE_KEY, storeKeyOf } from "./store-factory.js";
import { openStorageSecrets, sealStorageSecrets } from "./storage-secrets.js";

/** One package store: where blobs go, with the keeper of the uploads working in it. */
export interface StoreEntry {
  /** Where its blobs are (store-factory.ts storeKeyOf); holds no secret, so it may be shown and logged. */
  readonly key: string;
  readonly kind: StorageConfig["id"];
  readonly blobs: BlobStore;
  /** Uploads, imports and moves write through it. In cluster mode it never deletes (collectThrough does). */
  readonly keeper: BlobKeeper;
  /**
   * What garbage collection deletes through: `keeper` itself on one machine. In cluster mode a
   * keeper's holds cannot see another node's upload of the same bytes, so only collection, with
   * its grace period longer than any upload, deletes (docs/cluster-mode.md, Blobs).
   */
  readonly collectThrough: BlobKeeper;
}

/**
 * Every package store of this server: the data directory's disk store, the server default
 * (WHARF_PACKAGE_STORE) and each store a feed's storage setting names (docs/compat.md 5.2).
 *
 * Content addressing makes any copy of a blob the same bytes, so reads need no feed: `reader` finds
 * a blob in whichever store holds it (the one that last had it first, then the disk store, then the
 * others; a store that fails is skipped while another has the blob). Writes go to the store of the
 * feed being written, through its keeper (`keeperFor`). A blob is kept in every store as long as
 * any row references it, so moving a feed or changing the default never strands a version.
 *
 * In cluster mode (PostgreSQL) the data directory's store is not one of them: another node cannot
 * read it. The server default must then be an object store, and a feed that names the disk store
 * is refused (DISK_STORE_IN_CLUSTER).
 */
export interface BlobStores {
  /**
   * Every store as one: stat/open/openReader find the store holding the blob, `put` writes to the
   * default store (the disk store on one machine), `delete` deletes every copy, `list` and
   * `totalBytes` cover every store.
   */
  readonly reader: BlobStore & RandomAccessBlobs & SizedReads;
  readonly disk: StoreEntry;
  /** The store of a storage setting as feeds keep it (secrets sealed); undefined = the server default. */
  entryFor(storage: StorageConfig | undefined): Promise<StoreEntry>;
  /** The store a feed writes its new blobs to: its storage setting, else the server default. */
  forFeed(feedId: number): Promise<StoreEntry>;
  /** The keeper of `forFeed(feedId)`, resolved at each call (a feed's store may change meanwhile). */
  keeperFor(feedId: number): BlobKeeper;
  /** FeedKeepers.pinnedKeeperFor: the keeper of `forFeed(feedId)` as resolved at its first call. */
  pinnedKeeperFor(feedId: number): BlobKeeper;
  /** FeedKeepers.discardUnused: through `forFeed(feedId).collectThrough`. */
  discardUnused(feedId: number, sha256: string): Promise<boolean>;
  /** Every store known, disk first. */
  all(): readonly StoreEntry[];
  /**
   * Every store, with those another node has named since this one started (cluster mode: a feed's
   * new setting is recorded by the node that was asked); on one machine, `all()`.
   */
  allRecorded(): Promise<readonly StoreEntry[]>;
}

export interface BlobStoresDeps {
  readonly db: MetadataDb;
  /** The data directory's store (file-blob-store.ts). */
  readonly disk: BlobStore;
  readonly secrets: SecretBox;
  /** Local spool folders of the object stores go under it (the data directory's tmp/). */
  readonly tempDir: string;
  readonly clock: Clock;
  /** The server default with its secrets open (config.ts `defaultStorage`); undefined = disk. */
  readonly defaultStorage?: StorageConfig;
  /** The proxies object stores go through (config.ts `outboundProxy`); none: reached directly. */
  readonly outboundProxy?: ProxySettings;
  /** Builds an object store (tests may wrap it); store-factory.ts createObjectStore by default. */
  readonly createStore?: typeof createObjectStore;
  /** A known store whose credentials no configured secret key opens: left out until the key is given. */
  readonly onUnreadable?: (key: string) => void;
  /** Cluster mode: this node, as its blob holds name it (storage/postgres/blob-holds.ts). */
  readonly nodeId?: string;
  /** Cluster mode: a blob hold that could not be dropped (it lapses on its own). */
  readonly onHoldError?: (error: unknown) => void;
}

/** The rows behind BlobStores: the stores ever named (`blob_stores`, secrets sealed) and feeds' settings. */
export interface BlobStoreRows {
  /** Every store recorded, by key: its configuration as stored (secrets sealed). */
  known(): Promise<{ key: string; config: StorageConfig }[]>;
  /** Records a store (secrets sealed) or refreshes its configuration and last use; the first use stays. */
  record(key: string, kind: StorageConfig["id"], sealed: StorageConfig, now: string): Promise<void>;
  /** The feed's storage setting (secrets sealed); undefined = the server default (or no such feed). */
  feedStorage(feedId: number): Promise<StorageConfig | undefined>;
}

function sqliteBlobStoreRows(db: Db): BlobStoreRows {
  const selectStores = db.prepare<[], { key: string; config: string }>(
    "SELECT key, config FROM blob_stores ORDER BY key",
  );
  const upsertStore = db.prepare<[string, string, string, string, string]>(
    `INSERT INTO blob_stores (key, kind, config, first_used_at, last_used_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (key) DO UPDATE SET config = excluded.config, last_used_at = excluded.last_used_at`,
  );
  const selectFeedStorage = db.prepare<[number], { storage: string | null }>(
    "SELECT json_extract(settings, '$.storage') AS storage FROM feeds WHERE id = ?",
  );
  return {
    known: async () =>
      selectStores.all().map((row) => ({ key: row.key, config: JSON.parse(row.config) as StorageConfig })),
    async record(key, kind, sealed, now) {
      upsertStore.run(key, kind, JSON.stringify(sealed), now, now);
    },
    async feedStorage(feedId) {
      const storage = selectFeedStorage.get(feedId)?.storage;
      return storage === null || storage === undefined ? undefined : (JSON.parse(storage) as StorageConfig);
    },
  };
}

/**
 * Awaits `lookup` (the feed's store: on PostgreSQL a round trip) while `source` waits unread. A
 * source may fail meanwhile (a fetched content-url body over WHARF_FETCH_MAX_BYTES is refused as
 * it arrives): its 'error' must find a listener, or it crashes the process. The store's put still
 * sees that error, which the destroyed stream keeps (`readable.errored`).
 */
async function whileSourceWaits<T>(source: Readable | AsyncIterable<Uint8Array>, lookup: Promise<T>): Promise<T> {
  if (!(source instanceof Readable)) return lookup;
  const kept = () => {};
  source.on("error", kept);
  try {
    return await lookup;
  } finally {
    source.off("error", kept);
  }
}

/** How many blob -> store answers the reader remembers. */
const LOCATIONS_KEPT = 10_000;

/** A keeper for cluster mode: as `keeper`, but it never deletes (garbage collection does: StoreEntry.collectThrough). */
function neverDiscarding(keeper: BlobKeeper): BlobKeeper {
  return { put: keeper.put, hold: keeper.hold, discardIfUnused: async () => false };
}

const diskStoreInCluster = () =>
  new DomainError(
    "conflict",
    "DISK_STORE_IN_CLUSTER",
    "In cluster mode every package store must be an object store (S3 or Azure) that all nodes reach: the data directory's disk store is one node's alone.",
  );

export async function createBlobStores(deps: BlobStoresDeps): Promise<BlobStores> {
  const { db, secrets } = deps;
  const cluster = isPostgres(db);
  const sharedHolds = isPostgres(db)
    ? createSharedBlobHolds(db, deps.nodeId ?? "wharf", (error) => deps.onHoldError?.(error))
    : undefined;
  const isReferenced = byDatabase(db, blobReferenceCheck, postgresBlobReferenceCheck);
  const rows = byDatabase<BlobStoreRows>(db, sqliteBlobStoreRows, createPostgresBlobStoreRows);
  const createStore = deps.createStore ?? createObjectStore;
  const entries = new Map<string, StoreEntry>();
  /** The configuration (secrets open, as JSON) each store was built from: another one (new credentials) rebuilds it. */
  const builtFrom = new Map<string, string>();

  const reader = createReader(
    () => [...entries.values()].map((entry) => entry.blobs),
    () => putTarget(),
    // A blob no store has may be in a store another node named since: those are built, then asked.
    () => (cluster ? buildRecorded() : Promise.resolve(false)),
  );
  const entryOf = (key: string, kind: StorageConfig["id"], blobs: BlobStore): StoreEntry => {
    const keeper = createBlobKeeper(blobs, isReferenced, reader, sharedHolds);
    return { key, kind, blobs, keeper: cluster ? neverDiscarding(keeper) : keeper, collectThrough: keeper };
  };
  const disk = entryOf(DISK_STORE_KEY, "disk", deps.disk);
  if (!cluster) entries.set(disk.key, disk);

  /** The object store behind each entry: replaced when a feed gives the same location new credentials. */
  const current = new Map<string, BlobStore>();

  /**
   * The entry of an object store (secrets open), built on first use. An entry is never replaced,
   * only the client behind it, so its keeper's holds and its collector's marks survive a change of
   * credentials.
   */
  function build(key: string, open: StorageConfig): StoreEntry {
    current.set(key, createStore(open, key, deps.tempDir, deps.outboundProxy));
    builtFrom.set(key, JSON.stringify(open));
    const existing = entries.get(key);
    if (existing !== undefined) return existing;
    const entry = entryOf(
      key,
      open.id,
      delegateTo(() => current.get(key) as BlobStore),
    );
    entries.set(key, entry);
    reader.forget();
    return entry;
  }

  /** Records the store (so that it stays readable and collected) and returns its entry. */
  async function register(open: StorageConfig): Promise<StoreEntry> {
    const key = storeKeyOf(open);
    const existing = entries.get(key);
    if (existing !== undefined && builtFrom.get(key) === JSON.stringify(open)) return existing;
    await rows.record(key, open.id, sealStorageSecrets(open, secrets), deps.clock.now().toISOString());
    return build(key, open);
  }

  /** Recorded stores whose credentials no configured key opens: reported once, not built. */
  const unreadable = new Set<string>();

  /**
   * Builds the recorded stores this process has not built yet (in cluster mode, stores other nodes
   * named since); whether it built any.
   */
  async function buildRecorded(): Promise<boolean> {
    let built = false;
    for (const row of await rows.known()) {
      if (entries.has(row.key) || unreadable.has(row.key)) continue;
      try {
        build(row.key, openStorageSecrets(row.config, secrets));
        built = true;
      } catch (error) {
        if (!(error instanceof SecretUnreadableError)) throw error;
        unreadable.add(row.key);
        deps.onUnreadable?.(row.key);
      }
    }
    return built;
  }

  // Stores named before this start (on any node, in cluster mode) stay readable and collected.
  await buildRecorded();
  const defaultEntry: StoreEntry | undefined =
    deps.defaultStorage === undefined || deps.defaultStorage.id === "disk"
      ? cluster
        ? undefined
        : disk
      : await register(deps.defaultStorage);

  async function entryFor(storage: StorageConfig | undefined): Promise<StoreEntry> {
    if (storage === undefined || (storage.id === "disk" && !cluster)) {
      if (storage === undefined && defaultEntry !== undefined) return defaultEntry;
      if (!cluster) return disk;
    }
    if (storage === undefined || storage.id === "disk") throw diskStoreInCluster();
    let open: StorageConfig;
    try {
      open = openStorageSecrets(storage, secrets);
    } catch (error) {
      if (!(error instanceof SecretUnreadableError)) throw error;
      throw new DomainError(
        "unavailable",
        "STORE_CREDENTIALS_UNREADABLE",
        "The feed's storage credentials cannot be decrypted with the configured secret keys (WHARF_SECRET_KEY).",
      );
    }
    return await register(open);
  }

  const forFeed = async (feedId: number) => entryFor(await rows.feedStorage(feedId));
  /** Where `reader.put` writes (assembled virtual packages): the disk store, or in cluster mode the default store. */
  function putTarget(): BlobStore {
    if (!cluster) return disk.blobs;
    if (defaultEntry === undefined) throw diskStoreInCluster();
    return defaultEntry.blobs;
  }

  /** The keeper of the entry `entry` resolves, asked at each call. */
  const keeperOf = (entry: () => Promise<StoreEntry>): BlobKeeper => ({
    put: async (source, options) => (await whileSourceWaits(source, entry())).keeper.put(source, options),
    hold: async (sha256) => (await entry()).keeper.hold(sha256),
    discardIfUnused: async (sha256) => (await entry()).keeper.discardIfUnused(sha256),
  });

  return {
    reader,
    disk,
    entryFor,
    forFeed,
    keeperFor: (feedId) => keeperOf(() => forFeed(feedId)),
    pinnedKeeperFor(feedId) {
      let resolved: Promise<StoreEntry> | undefined;
      return keeperOf(() => (resolved ??= forFeed(feedId)));
    },
    discardUnused: async (feedId, sha256) => (await forFeed(feedId)).collectThrough.discardIfUnused(sha256),
    all: () => [...entries.values()],
    async allRecorded() {
      if (cluster) await buildRecorded();
      return [...entries.values()];
    },
  };

  /** The union of the stores, for reads. */
  function createReader(
    stores: () => readonly BlobStore[],
    putTo: () => BlobStore,
    /** Adds the stores recorded since (then `forget` is called); whether it added any. */
    addRecorded: () => Promise<boolean>,
  ): BlobStore & RandomAccessBlobs & SizedReads & { forget(): void } {
    /** Address -> the store that last had it (insertion order = age, for eviction). */
    const located = new Map<string, BlobStore>();
    /** The stores, asked again only after `forget` (a store was added). */
    let known: readonly BlobStore[] | undefined;
    const all = () => (known ??= stores());
    const remember = (sha256: string, store: BlobStore) => {
      located.delete(sha256);
      located.set(sha256, store);
      if (located.size > LOCATIONS_KEPT) located.delete(located.keys().next().value as string);
    };

    /**
     * `attempt` on each store in turn (the one that last had the blob first) until one finds the
     * blob; a failing store is passed over while another has it. When none has it, once more after
     * adding the stores recorded since, if there are any.
     */
    async function firstHolding<T>(
      sha256: string,
      attempt: (store: BlobStore) => Promise<T | undefined>,
    ): Promise<{ store: BlobStore; found: T } | undefined> {
      const holding = await firstOfKnown(sha256, attempt);
      if (holding !== undefined || !(await addRecorded())) return holding;
      return firstOfKnown(sha256, attempt);
    }

    async function firstOfKnown<T>(
      sha256: string,
      attempt: (store: BlobStore) => Promise<T | undefined>,
    ): Promise<{ store: BlobStore; found: T } | undefined> {
      const every = all();
      // The common case, the data directory's store alone: nothing to choose or remember.
      const [only] = every;
      if (every.length === 1 && only !== undefined) {
        const found = await attempt(only);
        return found === undefined ? undefined : { store: only, found };
      }
      const last = located.get(sha256);
      const order = last === undefined ? every : [last, ...every.filter((store) => store !== last)];
      let failure: unknown;
      for (const store of order) {
        try {
          const found = await attempt(store);
          if (found !== undefined) {
            remember(sha256, store);
            return { store, found };
          }
        } catch (error) {
          failure ??= error;
        }
      }
      located.delete(sha256);
      if (failure !== undefined) throw failure;
      return undefined;
    }

    /** The store holding the blob and its size. */
    async function locate(sha256: string): Promise<{ store: BlobStore; size: number } | undefined> {
      const holding = await firstHolding(sha256, (store) => store.stat(sha256));
      return holding === undefined ? undefined : { store: holding.store, size: holding.found.size };
    }

    /** Found and opened in one go: an object store's read needs no look-up first (openWithSize). */
    async function openSized(sha256: string, range?: { start: number; end: number }) {
      return (await firstHolding(sha256, (store) => openWithSize(store, sha256, range)))?.found;
    }

    return {
      forget: () => {
        located.clear();
        known = undefined;
      },
      put: (source: Readable | AsyncIterable<Uint8Array>, options) => putTo().put(source, options),
      async stat(sha256) {
        const found = await locate(sha256);
        return found === undefined ? undefined : { size: found.size };
      },
      openSized,
      open: async (sha256, range) => (await openSized(sha256, range))?.stream,
      /**
       * Positional reads where the holding store offers them; undefined (use `openSized`) where it
       * does not. Only such stores are asked: looking a blob up in an object store first would cost
       * the very request that `openSized` saves.
       */
      async openReader(sha256): Promise<BlobReader | undefined> {
        const last = located.get(sha256);
        if (last !== undefined && !canOpenReader(last)) return undefined;
        const holding = await firstHolding(sha256, async (store) =>
          canOpenReader(store) ? store.openReader(sha256) : undefined,
        );
        return holding?.found;
      },
      async delete(sha256) {
        located.delete(sha256);
        await Promise.all(all().map((store) => store.delete(sha256)));
      },
      async *list() {
        const seen = new Set<string>();
        for (const store of all()) {
          for await (const sha256 of store.list()) {
            if (seen.has(sha256)) continue;
            seen.add(sha256);
            yield sha256;
          }
        }
      },
      async totalBytes() {
        const sizes = await Promise.all(all().map((store) => store.totalBytes()));
        return sizes.reduce((sum, bytes) => sum + bytes, 0);
      },
      async clearStaleTemporaryFiles() {
        let files = 0;
        let bytes = 0;
        for (const store of all()) {
          const cleared = await store.clearStaleTemporaryFiles();
          files += cleared.files;
          bytes += cleared.bytes;
        }
        return { files, bytes };
      },
    };
  }
}

/** Every package store of a data directory, for commands that run beside (or without) the server. */
export function blobStoresOf(db: Db, config: Config, clock: Clock): Promise<BlobStores> {
  return createBlobStores({
    db,
    disk: createFileBlobStore(config.dataDir),
    secrets: loadSecretKeys(config).box,
    tempDir: dataPaths(config.dataDir).tmp,
    clock,
    ...(config.defaultStorage ? { defaultStorage: config.defaultStorage } : {}),
    ...(config.outboundProxy ? { outboundProxy: config.outboundProxy } : {}),
  });
}

/** A store that forwards every call to whichever store `target` returns at the time of the call. */
function delegateTo(target: () => BlobStore): BlobStore & AbandonedUploads & SizedReads {
  return {
    abortAbandonedUploads: async (olderThanMs) => {
      const store = target();
      return canAbortAbandonedUploads(store) ? store.abortAbandonedUploads(olderThanMs) : { files: 0, bytes: 0 };
    },
    put: (source, options) => target().put(source, options),
    stat: (sha256) => target().stat(sha256),
    open: (sha256, range) => target().open(sha256, range),
    openSized: (sha256, range) => openWithSize(target(), sha256, range),
    delete: (sha256) => target().delete(sha256),
    list: () => target().list(),
    totalBytes: () => target().totalBytes(),
    clearStaleTemporaryFiles: () => target().clearStaleTemporaryFiles(),
  };
}
