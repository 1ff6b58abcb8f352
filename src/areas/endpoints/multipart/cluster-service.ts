import { randomUUID } from "node:crypto";
import { Readable } from "node:stream";
import type { AssetPath } from "../../../domain/asset-path.js";
import { DomainError } from "../../../domain/errors.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import type { HeldBlob } from "../../../storage/blob-keeper.js";
import type { PostgresDb } from "../../../storage/postgres/database.js";
import type { Feed } from "../../management/index.js";
import { assemble } from "./assemble.js";
import { CLAIM_LEASE_MS, createPostgresMultipartClaims, type StoredPart } from "./claims-postgres.js";
import type { MultipartPart, MultipartRepository, MultipartUpload } from "./repository.js";
import {
  checkSamePath,
  checkSameUpload,
  type PartRequest,
  parsePart,
  partTooLong,
  partTooShort,
  uploadKeyOf,
  uploadNotFound,
} from "./rules.js";
import type { MultipartDeps, MultipartUploads } from "./service.js";
import { createSweeper } from "./sweep.js";

/** Claims are renewed this often while their node works: well within their lease. */
const RENEW_EVERY_MS = CLAIM_LEASE_MS / 3;

/** The body's bytes, refused as soon as they exceed the part's size, and at the end when fewer. */
async function* exactlyThePart(part: MultipartPart, body: (() => Readable) | undefined): AsyncGenerator<Buffer> {
  let received = 0;
  for await (const chunk of (body?.() ?? []) as AsyncIterable<Uint8Array | string>) {
    const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    if (received + bytes.length > part.size) throw partTooLong(part);
    received += bytes.length;
    yield bytes;
  }
  if (received !== part.size) throw partTooShort(part, received);
}

/** The parts' blobs one after the other: the whole file. */
async function* partsInOrder(blobs: BlobStore, parts: readonly StoredPart[]): AsyncGenerator<Buffer> {
  for (const part of parts) {
    const stream = await blobs.open(part.sha256);
    if (stream === undefined) throw new Error(`the blob of multipart part ${part.index} is missing from the store`);
    yield* stream as AsyncIterable<Buffer>;
  }
}

/** Keeps a claim counting until the returned stop is called; a failed renewal shows at recordPart. */
function renewing(renew: () => Promise<void>): () => void {
  const timer = setInterval(() => void renew().catch(() => undefined), RENEW_EVERY_MS).unref();
  return () => clearInterval(timer);
}

/**
 * Multipart uploads in cluster mode (PostgreSQL): any node takes any part and any completion. Each
 * part's bytes go into the asset directory's package store as a blob of their own, named by the
 * part's row (asset_multipart_part_blobs, which `blob_references` lists: collection keeps it while
 * the upload lasts); what one machine's coordinator keeps in memory (the parts being received, the
 * completion under way) is rows every node sees (claims-postgres.ts). The completion streams the
 * parts' blobs in order into the file's blob; completions, failed parts and the sweep delete the
 * parts' blobs no row names any more (FeedKeepers.discardUnused, else garbage collection does).
 */
export function createClusterMultipartUploads(
  deps: MultipartDeps,
  db: PostgresDb,
  repository: MultipartRepository,
): MultipartUploads {
  const claims = createPostgresMultipartClaims(db);
  const now = () => deps.clock.now().toISOString();

  /** Never fails the request: a blob left behind is garbage collection's. */
  async function discard(feedId: number, blobs: readonly string[]): Promise<void> {
    for (const sha256 of new Set(blobs)) await deps.keepers.discardUnused?.(feedId, sha256).catch(() => undefined);
  }

  /** Finds or starts the upload and claims the part's bytes; once more should a sweep remove the upload meanwhile. */
  async function claimPart(directory: Feed, path: AssetPath, part: PartRequest) {
    for (let attempt = 1; ; attempt++) {
      const upload =
        (await repository.find(directory.id, part.uploadKey)) ??
        (await repository.create({
          feedId: directory.id,
          uploadKey: part.uploadKey,
          path: path.path,
          pathKey: path.key,
          totalSize: part.totalSize,
          totalParts: part.totalParts,
          // No spool file: the parts are blobs. The column is unique, and names no file of any node.
          spool: `object-store-${randomUUID()}`,
          createdAt: now(),
        }));
      try {
        return { upload, claimId: await claims.claimPart(upload.id, part, () => checkSameUpload(upload, path, part)) };
      } catch (error) {
        const removed = error instanceof DomainError && error.code === "MULTIPART_UPLOAD_REMOVED";
        if (!removed || attempt > 1) throw error;
      }
    }
  }

  async function removeAbandoned(): Promise<number> {
    const before = new Date(deps.clock.now().getTime() - deps.maxAgeMs).toISOString();
    let removed = 0;
    for (const upload of await repository.inactiveSince(before)) {
      const blobs = await claims.removeIfInactive(upload.id, before);
      if (blobs === undefined) continue;
      removed++;
      await discard(upload.feedId, blobs);
    }
    return removed;
  }

  const sweeper = createSweeper(removeAbandoned, { maxAgeMs: deps.maxAgeMs });

  return {
    async uploadPart(directory, path, query, body) {
      const part = parsePart(query, deps.maxUploadBytes);
      const { upload, claimId } = await claimPart(directory, path, part);
      const stopRenewing = renewing(() => claims.renew(claimId));
      let held: HeldBlob | undefined;
      let recorded = false;
      try {
        held = await deps.keepers.keeperFor(directory.id).put(exactlyThePart(part, body), { declaredBytes: part.size });
        await claims.recordPart(upload.id, claimId, part, held.blob.sha256, now());
        recorded = true;
      } finally {
        stopRenewing();
        // Released after the row naming the blob committed (or never will).
        held?.release();
        if (!recorded) {
          const forgotten = await claims.abandonPart(upload.id, claimId, part.index);
          await discard(directory.id, held === undefined ? forgotten : [...forgotten, held.blob.sha256]);
        }
      }
    },

    async complete(directory, path, query, options) {
      const uploadKey = uploadKeyOf(query);
      const upload: MultipartUpload | undefined = await repository.find(directory.id, uploadKey);
      if (upload === undefined) throw uploadNotFound(uploadKey);
      checkSamePath(upload, path);
      const { claimId, parts } = await claims.claimCompletion(upload);
      const stopRenewing = renewing(() => claims.renew(claimId));
      try {
        const item = await assemble(
          deps.assets,
          directory,
          path,
          async () => Readable.from(partsInOrder(deps.blobs, parts)),
          options,
        );
        // The file is stored: a failed clean-up must not fail the request, the sweep removes leftovers.
        await claims.remove(upload.id).then(
          (blobs) => discard(directory.id, blobs),
          () => undefined,
        );
        return item;
      } finally {
        stopRenewing();
        await claims.endClaim(claimId).catch(() => undefined);
      }
    },

    removeAbandoned,
    start: (onSweepError) => sweeper.start(onSweepError),
    stop: () => sweeper.stop(),
  };
}
