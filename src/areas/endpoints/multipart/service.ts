import type { Readable } from "node:stream";
import type { AssetPath } from "../../../domain/asset-path.js";
import type { Clock } from "../../../domain/clock.js";
import type { QueryLike } from "../../../http/params.js";
import type { FeedKeepers } from "../../../storage/blob-keeper.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import { byDatabase, isPostgres, type MetadataDb } from "../../../storage/metadata-db.js";
import type { Feed } from "../../management/index.js";
import { assemble, type CompletionOptions } from "./assemble.js";
import { createClusterMultipartUploads } from "./cluster-service.js";
import { coordinationKey, createCoordinator } from "./coordinator.js";
import { createMultipartRepository, type MultipartRepository, type MultipartUpload } from "./repository.js";
import { createPostgresMultipartRepository } from "./repository-postgres.js";
import {
  checkComplete,
  checkNoOverlap,
  checkSamePath,
  checkSameUpload,
  type PartRequest,
  parsePart,
  uploadBusy,
  uploadCompleting,
  uploadKeyOf,
  uploadNotFound,
} from "./rules.js";
import { createMultipartSpool } from "./spool.js";
import { createSweeper } from "./sweep.js";
import type { AssetItem } from "../repository.js";
import type { AssetService } from "../service.js";

/**
 * Multipart uploads of large files (docs/compat.md 4.2): parts arrive as
 * `POST content/<path>?multipart=upload&id&index&offset&totalSize&partSize&totalParts`, then
 * `POST content/<path>?multipart=complete&id`; the file appears only on completion.
 */
export interface MultipartUploads {
  /** Validates and stores one part durably; 400 for a bad index, offset, size or overlap. */
  uploadPart(directory: Feed, path: AssetPath, query: QueryLike, body: (() => Readable) | undefined): Promise<void>;
  /** Assembles the parts into the file; 400 when parts are missing; the upload is gone afterwards. */
  complete(directory: Feed, path: AssetPath, query: QueryLike, options: CompletionOptions): Promise<AssetItem>;
  /**
   * Removes uploads that received no part for the configured age, with their parts and spool
   * files, and spool files no upload names; returns how many uploads and files it removed.
   */
  removeAbandoned(): Promise<number>;
  /** Runs removeAbandoned now and then until `stop`; a failed sweep is told to `onSweepError`, else warned of. */
  start(onSweepError?: (error: unknown) => void): void;
  stop(): void;
}

export interface MultipartDeps {
  /**
   * Either database. On SQLite the parts are spooled on this machine's disk; on PostgreSQL (cluster
   * mode) any node takes any part, whose bytes go to the directory's package store
   * (cluster-service.ts).
   */
  readonly db: MetadataDb;
  readonly assets: AssetService;
  /** Cluster mode: where parts are stored (the keeper of their directory's store) and read back from. */
  readonly keepers: FeedKeepers;
  readonly blobs: BlobStore;
  readonly clock: Clock;
  /** Where part bytes are spooled (one machine): survives restarts (unlike the blob store's tmp/). */
  readonly spoolDir: string;
  readonly maxUploadBytes: number;
  readonly maxAgeMs: number;
}

/**
 * At start-up, before serving: removes the spool files no upload names, whatever their age (left
 * by a crash between a spool's creation and its row's). Spools of unfinished uploads stay, since
 * their rows name them, until the sweep finds them abandoned.
 */
export async function removeOrphanSpools(db: MetadataDb, spoolDir: string): Promise<{ files: number; bytes: number }> {
  const repository = multipartRepositoryOf(db);
  return createMultipartSpool(spoolDir).removeOrphans(new Date(), async () => {
    const known = await repository.spools();
    return (name) => known.has(name);
  });
}

const multipartRepositoryOf = (db: MetadataDb): MultipartRepository =>
  byDatabase(db, createMultipartRepository, createPostgresMultipartRepository);

export function createMultipartUploads(deps: MultipartDeps): MultipartUploads {
  const repository = multipartRepositoryOf(deps.db);
  if (isPostgres(deps.db)) return createClusterMultipartUploads(deps, deps.db, repository);
  const coordinator = createCoordinator();
  const spool = createMultipartSpool(deps.spoolDir);
  const now = () => deps.clock.now().toISOString();

  /** Spool files created for uploads whose row is not written yet: not orphans, whatever their age. */
  const starting = new Set<string>();

  async function startUpload(directory: Feed, path: AssetPath, part: PartRequest): Promise<MultipartUpload> {
    const name = spool.newName();
    starting.add(name);
    try {
      return await createUpload(directory, path, part, name);
    } finally {
      starting.delete(name);
    }
  }

  async function createUpload(directory: Feed, path: AssetPath, part: PartRequest, name: string) {
    // The file exists, durably, before the row that names it: a crash in between leaves only a
    // file without a row, which the sweep removes.
    await spool.create(name);
    try {
      const stored = await repository.create({
        feedId: directory.id,
        uploadKey: part.uploadKey,
        path: path.path,
        pathKey: path.key,
        totalSize: part.totalSize,
        totalParts: part.totalParts,
        spool: name,
        createdAt: now(),
      });
      if (stored.spool !== name) await spool.remove(name);
      return stored;
    } catch (error) {
      await spool.remove(name);
      throw error;
    }
  }

  /** Deletes the upload's rows, then its spool. */
  async function removeUpload(upload: MultipartUpload): Promise<void> {
    await repository.delete(upload.id);
    await spool.remove(upload.spool);
  }

  /** Finds or starts the upload and takes the part's byte range, or refuses the part. */
  function reservePart(directory: Feed, path: AssetPath, part: PartRequest, key: string) {
    return coordinator.withActivity(key, async (activity) => {
      if (activity.completing) {
        throw uploadCompleting(part.uploadKey);
      }
      const upload =
        (await repository.find(directory.id, part.uploadKey)) ?? (await startUpload(directory, path, part));
      checkSameUpload(upload, path, part);
      checkNoOverlap(part, await repository.parts(upload.id), activity.receiving.values());
      activity.receiving.set(part.index, part);
      return upload;
    });
  }

  /** After a failed part: its bytes may be half written, so an earlier copy of it no longer counts. */
  async function discardFailedPart(upload: MultipartUpload, index: number, key: string) {
    await repository.deletePart(upload.id, index);
    // An upload left with no parts is removed, so a refused first part leaves nothing behind.
    if (coordinator.busy(key) || (await repository.parts(upload.id)).length > 0) return;
    await removeUpload(upload);
  }

  /** Checks that the upload is whole and marks it as being completed: no part is accepted meanwhile. */
  async function beginCompletion(directory: Feed, path: AssetPath, uploadKey: string, key: string) {
    const upload = await repository.find(directory.id, uploadKey);
    if (upload === undefined) throw uploadNotFound(uploadKey);
    checkSamePath(upload, path);
    return coordinator.withActivity(key, async (activity) => {
      if (activity.completing || activity.receiving.size > 0) {
        throw uploadBusy(uploadKey);
      }
      checkComplete(upload, await repository.parts(upload.id));
      activity.completing = true;
      return upload;
    });
  }

  async function removeAbandoned(): Promise<number> {
    const before = new Date(deps.clock.now().getTime() - deps.maxAgeMs);
    let removed = 0;
    for (const upload of await repository.inactiveSince(before.toISOString())) {
      const key = coordinationKey(upload.feedId, upload.uploadKey);
      removed += await coordinator.exclusive(key, async () => {
        // A part or completion under way keeps the upload, however long ago its last part was.
        if (coordinator.busy(key) || !(await repository.deleteIfInactive(upload.id, before.toISOString()))) return 0;
        await spool.remove(upload.spool);
        return 1;
      });
    }
    const orphans = await spool.removeOrphans(before, async () => {
      // Snapshot first: a listed file whose upload is not in it had its row written before spools() reads them.
      const unnamed = new Set(starting);
      const known = await repository.spools();
      return (name) => known.has(name) || unnamed.has(name);
    });
    return removed + orphans.files;
  }

  const sweeper = createSweeper(removeAbandoned, { maxAgeMs: deps.maxAgeMs });

  return {
    async uploadPart(directory, path, query, body) {
      const part = parsePart(query, deps.maxUploadBytes);
      const key = coordinationKey(directory.id, part.uploadKey);
      const upload = await coordinator.exclusive(key, () => reservePart(directory, path, part, key));
      let recorded = false;
      try {
        await spool.writePart(upload.spool, part, body);
        await coordinator.exclusive(key, async () => {
          try {
            await repository.recordPart(upload.id, part, now());
            recorded = true;
          } finally {
            coordinator.endReceiving(key, part.index);
          }
        });
      } finally {
        if (!recorded) {
          await coordinator.exclusive(key, async () => {
            coordinator.endReceiving(key, part.index);
            await discardFailedPart(upload, part.index, key);
          });
        }
      }
    },

    async complete(directory, path, query, options) {
      const uploadKey = uploadKeyOf(query);
      const key = coordinationKey(directory.id, uploadKey);
      const upload = await coordinator.exclusive(key, () => beginCompletion(directory, path, uploadKey, key));
      try {
        const item = await assemble(
          deps.assets,
          directory,
          path,
          () => spool.read(upload.spool, upload.totalSize),
          options,
        );
        // The file is stored: a failed clean-up must not fail the request, the sweep removes leftovers.
        await coordinator.exclusive(key, () => removeUpload(upload)).catch(() => undefined);
        return item;
      } finally {
        coordinator.endCompleting(key);
      }
    },

    removeAbandoned,
    start: (onSweepError) => sweeper.start(onSweepError),
    stop: () => sweeper.stop(),
  };
}
