import { beforeAll, describe, expect } from "vitest";
import {
  createPostgresMultipartClaims,
  type MultipartClaims,
} from "../../../src/areas/endpoints/multipart/claims-postgres.js";
import { createPostgresMultipartRepository } from "../../../src/areas/endpoints/multipart/repository-postgres.js";
import type { MultipartRepository, MultipartUpload } from "../../../src/areas/endpoints/multipart/repository.js";
import type { PartRequest } from "../../../src/areas/endpoints/multipart/rules.js";
import { postgresBlobReferenceCheck } from "../../../src/storage/blob-keeper-postgres.js";
import { describeOnBothDatabases } from "../../helpers/both-databases.js";
import { itOnPostgres, otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

/**
 * Cluster mode's multipart claims and part blobs (claims-postgres.ts, migrations/postgres/0008):
 * PostgreSQL only, as the tables are; SQLite's one process keeps the same in memory
 * (coordinator.ts), which test/integration/endpoints-multipart.test.ts covers.
 */

const T0 = "2026-11-29T10:00:00.000Z";
const T1 = "2026-11-29T11:00:00.000Z";
const T2 = "2026-11-29T12:00:00.000Z";

const refusal = (kind: string, code: string) => expect.objectContaining({ kind, code });
const blobOf = (n: number) => n.toString(16).padStart(64, "0");
const noCheck = () => {};

describeOnBothDatabases("Multipart claims (cluster mode)", (database) => {
  const it = itOnPostgres(database);
  let uploads: MultipartRepository;
  let claims: MultipartClaims;
  let feedId: number;
  let keys = 0;

  const postgres = () => {
    const db = database();
    if (db.kind !== "postgres") throw new Error("PostgreSQL only");
    return db.postgres;
  };
  /** A new upload of three parts of 1000 bytes, last active at T0. */
  const newUpload = async (): Promise<MultipartUpload> =>
    uploads.create({
      feedId,
      uploadKey: `u${(keys += 1)}`,
      path: "Big/File.iso",
      pathKey: "big/file.iso",
      totalSize: 3000,
      totalParts: 3,
      spool: `object-store-${keys}`,
      createdAt: T0,
    });
  const part = (upload: MultipartUpload, index: number, offset = index * 1000, size = 1000): PartRequest => ({
    uploadKey: upload.uploadKey,
    totalSize: upload.totalSize,
    totalParts: upload.totalParts,
    index,
    offset,
    size,
  });
  /** Claims and records the part with the blob `blobOf(index + 1)`. */
  const receive = async (upload: MultipartUpload, index: number) => {
    const claimId = await claims.claimPart(upload.id, part(upload, index), noCheck);
    await claims.recordPart(upload.id, claimId, part(upload, index), blobOf(index + 1), T1);
  };
  const lapse = (uploadId: number) =>
    postgres().pool.query(
      "UPDATE asset_multipart_claims SET held_until = now() - interval '1 second' WHERE upload_id = $1",
      [uploadId],
    );

  beforeAll(async () => {
    if (database().kind !== "postgres") return;
    uploads = createPostgresMultipartRepository(postgres());
    claims = createPostgresMultipartClaims(postgres());
    feedId = await insertFeed(database().exec, "assets", T0, "asset");
  });

  it("takes a part's bytes once: the same index or overlapping bytes wait for its record", async () => {
    const upload = await newUpload();
    const claimId = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    await expect(claims.claimPart(upload.id, part(upload, 0), noCheck)).rejects.toEqual(
      refusal("conflict", "MULTIPART_PART_IN_PROGRESS"),
    );
    await expect(claims.claimPart(upload.id, part(upload, 1, 500), noCheck)).rejects.toEqual(
      refusal("invalid", "MULTIPART_OVERLAP"),
    );
    await claims.recordPart(upload.id, claimId, part(upload, 0), blobOf(1), T1);
    expect(await uploads.parts(upload.id)).toEqual([{ index: 0, offset: 0, size: 1000 }]);
    expect(await uploads.find(feedId, upload.uploadKey)).toMatchObject({ updatedAt: T1 });
    // A retry repeats the range; a changed one is refused; the upload's own check runs after the claim's.
    const retry = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    await claims.recordPart(upload.id, retry, part(upload, 0), blobOf(9), T2);
    await expect(claims.claimPart(upload.id, part(upload, 0, 0, 999), noCheck)).rejects.toEqual(
      refusal("invalid", "MULTIPART_PART_CHANGED"),
    );
    const mismatch = new Error("checked");
    await expect(
      claims.claimPart(upload.id, part(upload, 1), () => {
        throw mismatch;
      }),
    ).rejects.toBe(mismatch);
    // The retry's blob replaced the first one.
    await receive(upload, 1);
    await receive(upload, 2);
    const { parts } = await claims.claimCompletion(upload);
    expect(parts.map((stored) => stored.sha256)).toEqual([blobOf(9), blobOf(2), blobOf(3)]);
  });

  it("refuses a part for an upload that is gone, and a record whose claim lapsed", async () => {
    await expect(claims.claimPart(999_999, { ...part(await newUpload(), 0) }, noCheck)).rejects.toEqual(
      refusal("not_found", "MULTIPART_UPLOAD_REMOVED"),
    );
    const upload = await newUpload();
    const stalled = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    await lapse(upload.id);
    // A lapsed claim gives its bytes back...
    const taken = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    // ...and the stalled node's record is refused (its claim is gone).
    await expect(claims.recordPart(upload.id, stalled, part(upload, 0), blobOf(1), T1)).rejects.toEqual(
      refusal("not_found", "MULTIPART_UPLOAD_REMOVED"),
    );
    await lapse(upload.id);
    await expect(claims.recordPart(upload.id, taken, part(upload, 0), blobOf(1), T1)).rejects.toEqual(
      refusal("conflict", "MULTIPART_PART_LAPSED"),
    );
    // Renewed, a claim counts again.
    const renewed = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    await lapse(upload.id);
    await claims.renew(renewed);
    await claims.recordPart(upload.id, renewed, part(upload, 0), blobOf(1), T1);
    expect(await uploads.parts(upload.id)).toEqual([{ index: 0, offset: 0, size: 1000 }]);
  });

  it("claims a whole upload for its completion: busy while a part is received, incomplete, then no parts", async () => {
    const upload = await newUpload();
    await receive(upload, 2);
    await receive(upload, 0);
    await expect(claims.claimCompletion(upload)).rejects.toEqual(refusal("invalid", "MULTIPART_INCOMPLETE"));
    const receiving = await claims.claimPart(upload.id, part(upload, 1), noCheck);
    await expect(claims.claimCompletion(upload)).rejects.toEqual(refusal("conflict", "MULTIPART_BUSY"));
    await claims.recordPart(upload.id, receiving, part(upload, 1), blobOf(2), T1);
    const { claimId, parts } = await claims.claimCompletion(upload);
    expect(parts).toEqual([
      { index: 0, offset: 0, size: 1000, sha256: blobOf(1) },
      { index: 1, offset: 1000, size: 1000, sha256: blobOf(2) },
      { index: 2, offset: 2000, size: 1000, sha256: blobOf(3) },
    ]);
    await expect(claims.claimCompletion(upload)).rejects.toEqual(refusal("conflict", "MULTIPART_BUSY"));
    await expect(claims.claimPart(upload.id, part(upload, 1), noCheck)).rejects.toEqual(
      refusal("conflict", "MULTIPART_COMPLETING"),
    );
    // A failed completion ends its claim: parts are taken again.
    await claims.endClaim(claimId);
    await claims.endClaim(await claims.claimPart(upload.id, part(upload, 1), noCheck));
    // The completed upload goes, and says which blobs its parts named.
    expect((await claims.remove(upload.id)).sort()).toEqual([blobOf(1), blobOf(2), blobOf(3)]);
    expect(await claims.remove(upload.id)).toEqual([]);
    expect(await uploads.find(feedId, upload.uploadKey)).toBeUndefined();
  });

  it("counts a part without a blob (spooled on disk before a cluster import) as not received", async () => {
    const upload = await newUpload();
    await receive(upload, 0);
    await receive(upload, 2);
    await uploads.recordPart(upload.id, { index: 1, offset: 1000, size: 1000 }, T1);
    await expect(claims.claimCompletion(upload)).rejects.toEqual(refusal("invalid", "MULTIPART_INCOMPLETE"));
    await receive(upload, 1);
    expect((await claims.claimCompletion(upload)).parts.map((stored) => stored.sha256)).toEqual([
      blobOf(1),
      blobOf(2),
      blobOf(3),
    ]);
  });

  it("forgets a failed part's earlier copy, and an upload left with nothing", async () => {
    const upload = await newUpload();
    await receive(upload, 0);
    await receive(upload, 1);
    const failing = await claims.claimPart(upload.id, part(upload, 1), noCheck);
    expect(await claims.abandonPart(upload.id, failing, 1)).toEqual([blobOf(2)]);
    expect(await uploads.parts(upload.id)).toEqual([{ index: 0, offset: 0, size: 1000 }]);
    // A part under way keeps an upload whose last part failed.
    const other = await claims.claimPart(upload.id, part(upload, 2), noCheck);
    expect(await claims.abandonPart(upload.id, await claims.claimPart(upload.id, part(upload, 0), noCheck), 0)).toEqual(
      [blobOf(1)],
    );
    expect(await uploads.find(feedId, upload.uploadKey)).toBeDefined();
    expect(await claims.abandonPart(upload.id, other, 2)).toEqual([]);
    expect(await uploads.find(feedId, upload.uploadKey)).toBeUndefined();
    expect(await claims.abandonPart(upload.id, other, 2)).toEqual([]);
  });

  it("sweeps an upload only while inactive and unclaimed, saying which blobs its parts named", async () => {
    const upload = await newUpload();
    await receive(upload, 0);
    expect(await claims.removeIfInactive(upload.id, T1)).toBeUndefined();
    const receiving = await claims.claimPart(upload.id, part(upload, 1), noCheck);
    expect(await claims.removeIfInactive(upload.id, T2)).toBeUndefined();
    await lapse(upload.id);
    expect(await claims.removeIfInactive(upload.id, T2)).toEqual([blobOf(1)]);
    expect(await claims.removeIfInactive(upload.id, T2)).toBeUndefined();
    await expect(claims.recordPart(upload.id, receiving, part(upload, 1), blobOf(2), T2)).rejects.toEqual(
      refusal("not_found", "MULTIPART_UPLOAD_REMOVED"),
    );
  });

  it("keeps the parts' blobs referenced (blob_references) while their upload lasts", async () => {
    const upload = await newUpload();
    const isReferenced = postgresBlobReferenceCheck(postgres());
    const blob = blobOf(0xabc);
    const claimId = await claims.claimPart(upload.id, part(upload, 0), noCheck);
    await claims.recordPart(upload.id, claimId, part(upload, 0), blob, T1);
    expect(await isReferenced(blob)).toBe(true);
    expect(await isReferenced.unreferencedAmong?.([blob, blobOf(0xdef)])).toEqual([blobOf(0xdef)]);
    await claims.remove(upload.id);
    expect(await isReferenced(blob)).toBe(false);
  });

  describe("races between nodes", () => {
    let nodes: MultipartClaims[] = [];
    const otherNode = otherNodesForBlock(database);
    beforeAll(() => {
      if (database().kind !== "postgres") return;
      nodes = Array.from({ length: 6 }, () => createPostgresMultipartClaims(otherNode()));
    });
    const settle = <T>(promises: Promise<T>[]) => Promise.allSettled(promises);
    const fulfilled = (results: PromiseSettledResult<unknown>[]) =>
      results.filter((result) => result.status === "fulfilled").length;

    it("gives one part's bytes to exactly one of the nodes receiving it at once", async () => {
      for (let round = 0; round < 5; round += 1) {
        const upload = await newUpload();
        const results = await settle(nodes.map((node) => node.claimPart(upload.id, part(upload, 1), noCheck)));
        expect(fulfilled(results)).toBe(1);
        for (const result of results) {
          if (result.status === "rejected") {
            expect(result.reason).toEqual(refusal("conflict", "MULTIPART_PART_IN_PROGRESS"));
          }
        }
      }
    });

    it("either completes or takes a part, never both, when a completion meets a part", async () => {
      for (let round = 0; round < 5; round += 1) {
        const upload = await newUpload();
        for (const index of [0, 1, 2]) await receive(upload, index);
        const [completion, retry] = await settle<unknown>([
          (nodes[0] as MultipartClaims).claimCompletion(upload),
          (nodes[1] as MultipartClaims).claimPart(upload.id, part(upload, 2), noCheck),
        ]);
        if (completion?.status === "fulfilled") {
          expect(retry).toEqual({ status: "rejected", reason: refusal("conflict", "MULTIPART_COMPLETING") });
        } else {
          expect(completion?.reason).toEqual(refusal("conflict", "MULTIPART_BUSY"));
          expect(retry?.status).toBe("fulfilled");
        }
      }
    });

    it("either sweeps an upload or takes its part, never both, when a sweep meets a part", async () => {
      for (let round = 0; round < 5; round += 1) {
        const upload = await newUpload();
        const [swept, taken] = await settle<unknown>([
          (nodes[0] as MultipartClaims).removeIfInactive(upload.id, T1),
          (nodes[1] as MultipartClaims).claimPart(upload.id, part(upload, 0), noCheck),
        ]);
        if (swept?.status === "fulfilled" && swept.value !== undefined) {
          expect(taken).toEqual({ status: "rejected", reason: refusal("not_found", "MULTIPART_UPLOAD_REMOVED") });
        } else {
          expect(swept).toEqual({ status: "fulfilled", value: undefined });
          expect(taken?.status).toBe("fulfilled");
          expect(await uploads.find(feedId, upload.uploadKey)).toBeDefined();
        }
      }
    });
  });
});
