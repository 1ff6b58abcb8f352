import { beforeAll, describe, expect, it } from "vitest";
import { createPostgresMultipartRepository } from "../../../src/areas/endpoints/multipart/repository-postgres.js";
import {
  createMultipartRepository,
  type MultipartRepository,
  type MultipartUpload,
  type NewMultipartUpload,
} from "../../../src/areas/endpoints/multipart/repository.js";
import { describeOnBothDatabases, type TestDatabase } from "../../helpers/both-databases.js";
import { otherNodesForBlock } from "../../helpers/postgres-races.js";
import { insertFeed } from "../../helpers/seed-rows.js";

const T0 = "2026-11-29T10:00:00.000Z";
const T1 = "2026-11-29T11:00:00.000Z";
const T2 = "2026-11-29T12:00:00.000Z";
const T3 = "2026-11-29T13:00:00.000Z";

const repositoryOn = (database: TestDatabase): MultipartRepository =>
  database.kind === "sqlite"
    ? createMultipartRepository(database.sqlite)
    : createPostgresMultipartRepository(database.postgres);

const refusal = (kind: string, code: string) => expect.objectContaining({ kind, code });

describeOnBothDatabases("Multipart upload repository", (database) => {
  let uploads: MultipartRepository;
  let newFeed: () => Promise<number>;
  let feedId: number;
  let spools = 0;
  const upload = (fields: Partial<NewMultipartUpload> = {}): NewMultipartUpload => ({
    feedId,
    uploadKey: "0123456789abcdef0123456789abcdef",
    path: "Big/File.iso",
    pathKey: "big/file.iso",
    totalSize: 3000,
    totalParts: 3,
    spool: `spool-${(spools += 1)}`,
    createdAt: T0,
    ...fields,
  });
  const stored = (created: NewMultipartUpload, id: number, fields: Partial<MultipartUpload> = {}): MultipartUpload => ({
    ...created,
    id,
    updatedAt: created.createdAt,
    ...fields,
  });

  beforeAll(async () => {
    uploads = repositoryOn(database());
    let n = 0;
    newFeed = () => insertFeed(database().exec, `assets${++n}`, T0, "asset");
    feedId = await newFeed();
  });

  it("creates an upload once per key and feed, and finds it", async () => {
    const first = upload();
    const created = await uploads.create(first);
    expect(created).toEqual(stored(first, created.id));
    // The same key again: the stored upload, with its own spool.
    expect(await uploads.create(upload({ path: "Other", pathKey: "other", createdAt: T1 }))).toEqual(created);
    const otherFeed = await newFeed();
    const elsewhere = await uploads.create(upload({ feedId: otherFeed }));
    expect(elsewhere.id).not.toBe(created.id);
    expect(await uploads.find(feedId, first.uploadKey)).toEqual(created);
    expect(await uploads.find(otherFeed, first.uploadKey)).toEqual(elsewhere);
    expect(await uploads.find(feedId, "unknown")).toBeUndefined();
    expect(await uploads.spools()).toEqual(new Set([created.spool, elsewhere.spool]));
  });

  it("records parts in offset order, replaces a retried index, and marks the upload active", async () => {
    const { id } = await uploads.create(upload({ uploadKey: "parts" }));
    await uploads.recordPart(id, { index: 2, offset: 2000, size: 1000 }, T1);
    await uploads.recordPart(id, { index: 0, offset: 0, size: 1000 }, T1);
    await uploads.recordPart(id, { index: 1, offset: 1000, size: 500 }, T1);
    await uploads.recordPart(id, { index: 1, offset: 1000, size: 1000 }, T2);
    // Equal offsets (an empty part) in index order.
    await uploads.recordPart(id, { index: 3, offset: 2000, size: 0 }, T2);
    expect(await uploads.parts(id)).toEqual([
      { index: 0, offset: 0, size: 1000 },
      { index: 1, offset: 1000, size: 1000 },
      { index: 2, offset: 2000, size: 1000 },
      { index: 3, offset: 2000, size: 0 },
    ]);
    expect(await uploads.find(feedId, "parts")).toMatchObject({ createdAt: T0, updatedAt: T2 });
    await uploads.deletePart(id, 1);
    await uploads.deletePart(id, 9);
    expect((await uploads.parts(id)).map((part) => part.index)).toEqual([0, 2, 3]);
    expect(await uploads.parts(999_999)).toEqual([]);
  });

  it("refuses a part for an upload that is gone with MULTIPART_UPLOAD_REMOVED", async () => {
    await expect(uploads.recordPart(999_999, { index: 0, offset: 0, size: 1 }, T1)).rejects.toEqual(
      refusal("not_found", "MULTIPART_UPLOAD_REMOVED"),
    );
  });

  it("deletes an upload with its parts once", async () => {
    const { id } = await uploads.create(upload({ uploadKey: "gone" }));
    await uploads.recordPart(id, { index: 0, offset: 0, size: 10 }, T1);
    expect(await uploads.delete(id)).toBe(true);
    expect(await uploads.delete(id)).toBe(false);
    expect(await uploads.find(feedId, "gone")).toBeUndefined();
    expect(await database().exec("SELECT part_index FROM asset_multipart_parts WHERE upload_id = ?", [id])).toEqual([]);
    await expect(uploads.recordPart(id, { index: 1, offset: 10, size: 10 }, T1)).rejects.toEqual(
      refusal("not_found", "MULTIPART_UPLOAD_REMOVED"),
    );
  });

  it("lists inactive uploads oldest first and deletes one only while it is inactive", async () => {
    const sweepFeed = await newFeed();
    const a = await uploads.create(upload({ feedId: sweepFeed, uploadKey: "a", createdAt: T1 }));
    const b = await uploads.create(upload({ feedId: sweepFeed, uploadKey: "b", createdAt: T0 }));
    const c = await uploads.create(upload({ feedId: sweepFeed, uploadKey: "c", createdAt: T1 }));
    const d = await uploads.create(upload({ feedId: sweepFeed, uploadKey: "d", createdAt: T0 }));
    await uploads.recordPart(d.id, { index: 0, offset: 0, size: 1 }, T3);
    const inactive = (await uploads.inactiveSince(T2)).filter((found) => found.feedId === sweepFeed);
    expect(inactive).toEqual([b, a, c]);
    expect((await uploads.inactiveSince(T0)).filter((found) => found.feedId === sweepFeed)).toEqual([]);
    expect(await uploads.deleteIfInactive(d.id, T2)).toBe(false);
    expect(await uploads.deleteIfInactive(a.id, T1)).toBe(false);
    expect(await uploads.deleteIfInactive(a.id, T2)).toBe(true);
    expect(await uploads.deleteIfInactive(a.id, T2)).toBe(false);
    expect((await uploads.inactiveSince(T2)).filter((found) => found.feedId === sweepFeed)).toEqual([b, c]);
  });

  it("loses a directory's uploads and their parts with the directory", async () => {
    const gone = await newFeed();
    const { id, spool } = await uploads.create(upload({ feedId: gone }));
    await uploads.recordPart(id, { index: 0, offset: 0, size: 10 }, T1);
    await database().exec("DELETE FROM feeds WHERE id = ?", [gone]);
    expect(await uploads.find(gone, upload().uploadKey)).toBeUndefined();
    expect(await uploads.parts(id)).toEqual([]);
    expect((await uploads.spools()).has(spool)).toBe(false);
  });

  it("tells the node's caches of each write at once (PostgreSQL)", async () => {
    const db = database();
    if (db.kind !== "postgres") return;
    const before = db.commits();
    const { id } = await uploads.create(upload({ uploadKey: "commits" }));
    await uploads.recordPart(id, { index: 0, offset: 0, size: 1 }, T1);
    await uploads.deletePart(id, 0);
    await uploads.deleteIfInactive(id, T0);
    await uploads.delete(id);
    expect(db.commits()).toBe(before + 5);
  });

  describe("races between nodes (PostgreSQL)", () => {
    /** Repositories each on a pool of its own, as the nodes of a cluster; none on SQLite, whose writers take turns. */
    let nodes: MultipartRepository[] = [];
    const otherNode = otherNodesForBlock(database);
    beforeAll(() => {
      if (database().kind !== "postgres") return;
      nodes = Array.from({ length: 6 }, () => createPostgresMultipartRepository(otherNode()));
    });

    it("gives every concurrent create of one key the same stored upload", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      const created = await Promise.all(
        nodes.map((node) => node.create(upload({ feedId: raceFeed, uploadKey: "race" }))),
      );
      const [first] = created;
      expect(created).toEqual(created.map(() => first));
      expect(await uploads.find(raceFeed, "race")).toEqual(first);
    });

    it("records a part or refuses it, never for a deleted upload, when a deletion meets it", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      for (let round = 0; round < 5; round += 1) {
        const { id } = await uploads.create(upload({ feedId: raceFeed, uploadKey: `r${round}` }));
        const results = await Promise.allSettled(
          nodes.map((node, i) =>
            i === 0 ? node.delete(id) : node.recordPart(id, { index: i, offset: i * 100, size: 100 }, T1),
          ),
        );
        expect(results[0]).toEqual({ status: "fulfilled", value: true });
        for (const result of results.slice(1)) {
          if (result.status === "rejected") {
            expect(result.reason).toEqual(refusal("not_found", "MULTIPART_UPLOAD_REMOVED"));
          }
        }
        expect(await uploads.parts(id)).toEqual([]);
      }
    });

    it("either sweeps an upload or records its part, never both, when a sweep meets a part", async () => {
      if (database().kind !== "postgres") return;
      const raceFeed = await newFeed();
      for (let round = 0; round < 5; round += 1) {
        const { id } = await uploads.create(upload({ feedId: raceFeed, uploadKey: `s${round}` }));
        const [swept, recorded] = await Promise.allSettled([
          (nodes[0] as MultipartRepository).deleteIfInactive(id, T1),
          (nodes[1] as MultipartRepository).recordPart(id, { index: 0, offset: 0, size: 100 }, T2),
        ]);
        if (swept?.status === "fulfilled" && swept.value) {
          expect(recorded).toEqual({ status: "rejected", reason: refusal("not_found", "MULTIPART_UPLOAD_REMOVED") });
          expect(await uploads.find(raceFeed, `s${round}`)).toBeUndefined();
        } else {
          expect(swept).toEqual({ status: "fulfilled", value: false });
          expect(recorded).toEqual({ status: "fulfilled", value: undefined });
          expect(await uploads.parts(id)).toEqual([{ index: 0, offset: 0, size: 100 }]);
        }
      }
    });
  });
});
