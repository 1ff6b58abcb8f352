import type pg from "pg";
import { conflict } from "../../../domain/errors.js";
import { inTransaction, type PostgresDb, quietTransaction } from "../../../storage/postgres/database.js";
import type { MultipartPart, MultipartUpload, PartRow } from "./repository.js";
import { toPart } from "./repository.js";
import {
  checkComplete,
  checkNoOverlap,
  type PartRequest,
  uploadBusy,
  uploadCompleting,
  uploadRemoved,
} from "./rules.js";

/** A recorded part and the blob of the package store holding its bytes (cluster mode). */
export interface StoredPart extends MultipartPart {
  readonly sha256: string;
}

/**
 * Cluster mode: what one machine's coordinator keeps in memory (the parts being received, the
 * completion under way), as rows every node sees (migrations/postgres/0008-multipart-in-object-store.sql),
 * and where each part's bytes are. Every method that decides on an upload first locks its row
 * (`FOR UPDATE`), so that parts, completions and sweeps on any node take turns on it; the streaming
 * between them holds no lock. A claim counts until its held_until, which its node renews while it
 * works: the claims of a node that died stop counting on their own.
 */
export interface MultipartClaims {
  /**
   * Takes the part's byte range until recordPart or abandonPart, refusing the part while the
   * upload is being completed, then as `checkUpload` says, then when another part holds or is
   * receiving its bytes (rules.ts checkNoOverlap); 404 when the upload is gone. The claim's id.
   */
  claimPart(uploadId: number, part: PartRequest, checkUpload: () => void): Promise<number>;
  /** Keeps the claim counting for another lease. */
  renew(claimId: number): Promise<void>;
  /** Records the received part with its blob and ends its claim; refused when the upload or the claim is gone. */
  recordPart(uploadId: number, claimId: number, part: MultipartPart, sha256: string, now: string): Promise<void>;
  /**
   * After a failed part: ends its claim and forgets an earlier copy of the part (as the spool's
   * would be half overwritten); an upload left with no part and no claim is removed. The blobs
   * no row names any more.
   */
  abandonPart(uploadId: number, claimId: number, index: number): Promise<string[]>;
  /**
   * Claims the whole upload for its completion, refused while a part is being received or another
   * completion runs (409 MULTIPART_BUSY) and when parts are missing (rules.ts checkComplete).
   */
  claimCompletion(upload: MultipartUpload): Promise<{ claimId: number; parts: StoredPart[] }>;
  endClaim(claimId: number): Promise<void>;
  /** Deletes the upload with its parts and claims; the blobs its parts named. */
  remove(uploadId: number): Promise<string[]>;
  /**
   * Deletes the upload unless a part was recorded since `before` or a claim counts; the blobs its
   * parts named, or undefined when it was kept or gone.
   */
  removeIfInactive(uploadId: number, before: string): Promise<string[] | undefined>;
}

/** How long a claim counts without renewal: a part's body may be slow, its node renews a third of the way. */
export const CLAIM_LEASE_MS = 60_000;
/** The completion's claim: the index no part has. */
const COMPLETION = -1;

const LOCK_UPLOAD = "SELECT id FROM asset_multipart_uploads WHERE id = $1 FOR UPDATE";
const LOCK_INACTIVE = "SELECT id FROM asset_multipart_uploads WHERE id = $1 AND updated_at < $2 FOR UPDATE";
const LIVE_CLAIMS = `SELECT part_index, start_offset, size FROM asset_multipart_claims
  WHERE upload_id = $1 AND held_until > now() ORDER BY part_index`;
// A lapsed claim (its node died or stalled) gives its index back.
const DROP_LAPSED = "DELETE FROM asset_multipart_claims WHERE upload_id = $1 AND held_until <= now()";
const HELD_UNTIL = `now() + make_interval(secs => ${CLAIM_LEASE_MS / 1000})`;
const INSERT_CLAIM = `INSERT INTO asset_multipart_claims (upload_id, part_index, start_offset, size, held_until)
  VALUES ($1, $2, $3, $4, ${HELD_UNTIL}) RETURNING id`;
const RENEW = `UPDATE asset_multipart_claims SET held_until = ${HELD_UNTIL} WHERE id = $1`;
const END_CLAIM = "DELETE FROM asset_multipart_claims WHERE id = $1 RETURNING held_until > now() AS live";
const STORED_PARTS = `SELECT p.part_index, p.start_offset, p.size, b.blob_sha256
  FROM asset_multipart_parts p LEFT JOIN asset_multipart_part_blobs b USING (upload_id, part_index)
  WHERE p.upload_id = $1 ORDER BY p.start_offset, p.part_index`;
const TOUCH = "UPDATE asset_multipart_uploads SET updated_at = $1 WHERE id = $2";
const UPSERT_PART = `INSERT INTO asset_multipart_parts (upload_id, part_index, start_offset, size) VALUES ($1, $2, $3, $4)
  ON CONFLICT (upload_id, part_index) DO UPDATE SET start_offset = excluded.start_offset, size = excluded.size`;
const UPSERT_BLOB = `INSERT INTO asset_multipart_part_blobs (upload_id, part_index, blob_sha256) VALUES ($1, $2, $3)
  ON CONFLICT (upload_id, part_index) DO UPDATE SET blob_sha256 = excluded.blob_sha256`;
const DELETE_PART_BLOB =
  "DELETE FROM asset_multipart_part_blobs WHERE upload_id = $1 AND part_index = $2 RETURNING blob_sha256";
const DELETE_PART = "DELETE FROM asset_multipart_parts WHERE upload_id = $1 AND part_index = $2";
const BLOBS_OF = "SELECT blob_sha256 FROM asset_multipart_part_blobs WHERE upload_id = $1";
// Parts, their blobs and the claims go with it (ON DELETE CASCADE).
const DELETE_UPLOAD = "DELETE FROM asset_multipart_uploads WHERE id = $1";

interface StoredPartRow extends PartRow {
  blob_sha256: string | null;
}

const partClaimLapsed = (index: number) =>
  conflict(
    "MULTIPART_PART_LAPSED",
    `Part ${index} took so long that its claim on its bytes lapsed (the node was stalled); send the part again.`,
  );

async function lockUpload(client: pg.PoolClient, uploadId: number): Promise<void> {
  if (((await client.query(LOCK_UPLOAD, [uploadId])).rowCount ?? 0) === 0) throw uploadRemoved();
}

/** The upload's blobs, then the upload itself (its row locked by the caller). */
async function deleteUpload(client: pg.PoolClient, uploadId: number): Promise<string[]> {
  const blobs = (await client.query<{ blob_sha256: string }>(BLOBS_OF, [uploadId])).rows.map((row) => row.blob_sha256);
  await client.query(DELETE_UPLOAD, [uploadId]);
  return blobs;
}

export function createPostgresMultipartClaims(db: PostgresDb): MultipartClaims {
  const liveClaims = async (client: pg.PoolClient, uploadId: number) =>
    (await client.query<PartRow>(LIVE_CLAIMS, [uploadId])).rows.map(toPart);
  const storedParts = async (client: pg.PoolClient, uploadId: number) =>
    (await client.query<StoredPartRow>(STORED_PARTS, [uploadId])).rows;

  return {
    claimPart: (uploadId, part, checkUpload) =>
      quietTransaction(db, async (client) => {
        await lockUpload(client, uploadId);
        await client.query(DROP_LAPSED, [uploadId]);
        const claims = await liveClaims(client, uploadId);
        if (claims.some((claim) => claim.index === COMPLETION)) {
          throw uploadCompleting(part.uploadKey);
        }
        checkUpload();
        checkNoOverlap(part, (await storedParts(client, uploadId)).map(toPart), claims);
        const [claim] = (
          await client.query<{ id: number }>(INSERT_CLAIM, [uploadId, part.index, part.offset, part.size])
        ).rows;
        return (claim as { id: number }).id;
      }),

    async renew(claimId) {
      await db.pool.query(RENEW, [claimId]);
    },

    async recordPart(uploadId, claimId, part, sha256, now) {
      await inTransaction(db, async (client) => {
        // The touch locks the upload's row until COMMIT: a sweep or a directory's deletion either
        // went first (no row: refused) or waits.
        if (((await client.query(TOUCH, [now, uploadId])).rowCount ?? 0) === 0) throw uploadRemoved();
        const [ended] = (await client.query<{ live: boolean }>(END_CLAIM, [claimId])).rows;
        if (ended === undefined) throw uploadRemoved();
        if (!ended.live) throw partClaimLapsed(part.index);
        await client.query(UPSERT_PART, [uploadId, part.index, part.offset, part.size]);
        await client.query(UPSERT_BLOB, [uploadId, part.index, sha256]);
      });
    },

    abandonPart: (uploadId, claimId, index) =>
      inTransaction(db, async (client) => {
        if (((await client.query(LOCK_UPLOAD, [uploadId])).rowCount ?? 0) === 0) return [];
        await client.query(END_CLAIM, [claimId]);
        const forgotten = (await client.query<{ blob_sha256: string }>(DELETE_PART_BLOB, [uploadId, index])).rows;
        await client.query(DELETE_PART, [uploadId, index]);
        // An upload left with nothing is removed, so a refused first part leaves nothing behind.
        const blobs = forgotten.map((row) => row.blob_sha256);
        if ((await liveClaims(client, uploadId)).length > 0 || (await storedParts(client, uploadId)).length > 0) {
          return blobs;
        }
        await client.query(DELETE_UPLOAD, [uploadId]);
        return blobs;
      }),

    claimCompletion: (upload) =>
      quietTransaction(db, async (client) => {
        await lockUpload(client, upload.id);
        if ((await liveClaims(client, upload.id)).length > 0) {
          throw uploadBusy(upload.uploadKey);
        }
        // A part without a blob was spooled on one machine's disk before `wharf cluster import`: it
        // counts as not received, and a retry of its range replaces it.
        const parts = (await storedParts(client, upload.id)).flatMap((row) =>
          row.blob_sha256 === null ? [] : [{ ...toPart(row), sha256: row.blob_sha256 }],
        );
        checkComplete(upload, parts);
        await client.query(DROP_LAPSED, [upload.id]);
        const [claim] = (await client.query<{ id: number }>(INSERT_CLAIM, [upload.id, COMPLETION, 0, 0])).rows;
        return { claimId: (claim as { id: number }).id, parts };
      }),

    async endClaim(claimId) {
      await db.pool.query(END_CLAIM, [claimId]);
    },

    remove: (uploadId) =>
      inTransaction(db, async (client) => {
        if (((await client.query(LOCK_UPLOAD, [uploadId])).rowCount ?? 0) === 0) return [];
        return deleteUpload(client, uploadId);
      }),

    removeIfInactive: (uploadId, before) =>
      inTransaction(db, async (client) => {
        // Locked first: a part recorded meanwhile moved updated_at, and the row re-read no longer matches.
        if (((await client.query(LOCK_INACTIVE, [uploadId, before])).rowCount ?? 0) === 0) return undefined;
        // A part or completion under way keeps the upload, however long ago its last part was.
        if ((await liveClaims(client, uploadId)).length > 0) return undefined;
        return deleteUpload(client, uploadId);
      }),
  };
}
