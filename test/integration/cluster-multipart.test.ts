import { createHash, randomBytes } from "node:crypto";
import { BlobServiceClient } from "@azure/storage-blob";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { buildClusterTestApp, type ClusterTestApp, testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Multipart asset uploads (docs/compat.md 4.2) behind a load balancer without sticky sessions: two
 * nodes of one cluster (PostgreSQL and Azurite, test/helpers/cluster-app.ts) take the parts of one
 * upload in any order, its completion on either, and sweep abandoned uploads with their parts'
 * blobs (areas/endpoints/multipart/cluster-service.ts).
 */

const PART_SIZE = 64 * 1024;
/** 36 s: the sweep runs every 9 s; the uploads here last a few seconds at most between their parts. */
const MAX_AGE_HOURS = "0.01";

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const newUploadId = () => randomBytes(16).toString("hex");

/** pgutil's parts: fixed size, the last one smaller, offset = index * part size. */
function partsOf(id: string, file: Buffer) {
  const totalParts = Math.ceil(file.length / PART_SIZE);
  return Array.from({ length: totalParts }, (_, index) => {
    const body = file.subarray(index * PART_SIZE, Math.min(file.length, (index + 1) * PART_SIZE));
    const query = new URLSearchParams({
      multipart: "upload",
      id,
      index: String(index),
      offset: String(index * PART_SIZE),
      totalSize: String(file.length),
      partSize: String(body.length),
      totalParts: String(totalParts),
    });
    return { query: query.toString(), body };
  });
}

describe.skipIf(!postgresInstalled())("multipart uploads across two nodes of a cluster", () => {
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let a: ClusterTestApp;
  let b: ClusterTestApp;
  const admin = () => ({ "x-apikey": cluster.adminKey });
  const send = (node: ClusterTestApp, options: InjectOptions) => node.app.inject(options);
  const sendPart = (node: ClusterTestApp, file: string, part: { query: string; body: Buffer }) =>
    send(node, {
      method: "POST",
      url: `/endpoints/files/content/${file}?${part.query}`,
      headers: admin(),
      payload: part.body,
    });
  const complete = (node: ClusterTestApp, file: string, id: string) =>
    send(node, {
      method: "POST",
      url: `/endpoints/files/content/${file}?multipart=complete&id=${id}`,
      headers: admin(),
    });
  const download = (node: ClusterTestApp, file: string) =>
    send(node, { method: "GET", url: `/endpoints/files/content/${file}`, headers: admin() });
  const uploadKeys = async () =>
    (
      await a.db.pool.query<{ upload_key: string }>("SELECT upload_key FROM asset_multipart_uploads ORDER BY id")
    ).rows.map((row) => row.upload_key);
  /** The addresses of the blobs in the cluster's container (Azurite). */
  const storedBlobs = async () => {
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(
      cluster.storeEnv.WHARF_AZURE_CONTAINER_NAME ?? "",
    );
    const names: string[] = [];
    for await (const blob of container.listBlobsFlat({ prefix: "packages/blobs/" })) {
      names.push(blob.name.slice("packages/blobs/".length));
    }
    return names;
  };

  beforeAll(async () => {
    azurite = await startAzurite();
    cluster = await testCluster(await testPostgres().createDatabase(), azurite);
    const env = { WHARF_MULTIPART_MAX_AGE_HOURS: MAX_AGE_HOURS };
    a = await buildClusterTestApp(cluster, { env });
    b = await buildClusterTestApp(cluster, { env });
    const created = await send(a, {
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin(),
      payload: { name: "files", feedType: "asset" },
    });
    expect(created.statusCode, created.body).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await azurite?.stop();
  });

  it("takes the parts of one upload alternately on both nodes, completes on either, serves it on the other", async () => {
    const file = randomBytes(5 * PART_SIZE + 1234);
    const id = newUploadId();
    const parts = partsOf(id, file);
    // Out of order, each part on the other node than the one before.
    for (const index of [3, 0, 5, 1, 4, 2]) {
      const res = await sendPart(index % 2 === 0 ? a : b, "big/file.bin", parts[index] as (typeof parts)[number]);
      expect(res.statusCode, res.body).toBe(200);
    }
    // Invisible on both nodes until completed.
    expect((await download(a, "big/file.bin")).statusCode).toBe(404);
    expect((await download(b, "big/file.bin")).statusCode).toBe(404);

    const done = await complete(b, "big/file.bin", id);
    expect(done.statusCode, done.body).toBe(200);
    expect(done.json()).toMatchObject({ size: file.length, sha256: sha256(file) });
    const served = await download(a, "big/file.bin");
    expect(served.statusCode).toBe(200);
    expect(served.rawPayload.equals(file)).toBe(true);
    expect(await uploadKeys()).toEqual([]);
    // The parts' blobs went with the upload: the store holds the file's blob alone.
    expect(await storedBlobs()).toEqual([sha256(file)]);
    // The upload is gone on both nodes.
    expect((await complete(a, "big/file.bin", id)).headers["x-wharf-error"]).toBe("MULTIPART_UPLOAD_NOT_FOUND");
  });

  it("takes parts sent to both nodes at once, and refuses overlaps and mismatches across nodes", async () => {
    const file = randomBytes(8 * PART_SIZE);
    const id = newUploadId();
    const parts = partsOf(id, file);
    const sent = await Promise.all(parts.map((part, index) => sendPart(index % 2 === 0 ? a : b, "together.bin", part)));
    expect(sent.map((res) => res.statusCode)).toEqual(parts.map(() => 200));

    // A retry that changes a part received on the other node, and one describing another file.
    const retried = parts[7] as (typeof parts)[number];
    const shrunk = retried.query.replace(`partSize=${PART_SIZE}`, `partSize=${PART_SIZE / 2}`);
    const changed = await sendPart(a, "together.bin", { query: shrunk, body: retried.body.subarray(PART_SIZE / 2) });
    expect(changed.statusCode).toBe(400);
    expect(changed.headers["x-wharf-error"]).toBe("MULTIPART_PART_CHANGED");
    const other = await sendPart(b, "together.bin", { query: `${retried.query}0`, body: retried.body });
    expect(other.statusCode).toBe(400);
    expect(other.headers["x-wharf-error"]).toBe("MULTIPART_MISMATCH");

    const done = await complete(a, "together.bin", id);
    expect(done.statusCode, done.body).toBe(200);
    const served = await download(b, "together.bin");
    expect(served.rawPayload.equals(file)).toBe(true);

    // Another upload: a part overlapping bytes the other node took.
    const next = newUploadId();
    const [head, tail] = partsOf(next, file.subarray(0, 2 * PART_SIZE)) as [
      { query: string; body: Buffer },
      { query: string; body: Buffer },
    ];
    expect((await sendPart(a, "overlap.bin", head)).statusCode).toBe(200);
    const overlapping = await sendPart(b, "overlap.bin", {
      query: tail.query
        .replace(`offset=${PART_SIZE}`, `offset=${PART_SIZE / 2}`)
        .replace(`partSize=${PART_SIZE}`, `partSize=${PART_SIZE / 2}`),
      body: tail.body.subarray(PART_SIZE / 2),
    });
    expect(overlapping.statusCode).toBe(400);
    expect(overlapping.headers["x-wharf-error"]).toBe("MULTIPART_OVERLAP");
  });

  it("refuses a completion with a part missing on either node, then completes once it came", async () => {
    const file = randomBytes(3 * PART_SIZE);
    const id = newUploadId();
    const [first, second, third] = partsOf(id, file) as [
      { query: string; body: Buffer },
      { query: string; body: Buffer },
      { query: string; body: Buffer },
    ];
    expect((await sendPart(a, "late.bin", first)).statusCode).toBe(200);
    expect((await sendPart(b, "late.bin", third)).statusCode).toBe(200);
    const early = await complete(a, "late.bin", id);
    expect(early.statusCode).toBe(400);
    expect(early.headers["x-wharf-error"]).toBe("MULTIPART_INCOMPLETE");
    // A body shorter than its partSize is refused on the other node too, and stores nothing.
    const short = await sendPart(b, "late.bin", { query: second.query, body: second.body.subarray(1) });
    expect(short.statusCode).toBe(400);
    expect(short.headers["x-wharf-error"]).toBe("MULTIPART_PART_TOO_SHORT");
    expect((await complete(b, "late.bin", id)).headers["x-wharf-error"]).toBe("MULTIPART_INCOMPLETE");
    expect((await sendPart(b, "late.bin", second)).statusCode).toBe(200);
    const done = await complete(b, "late.bin", id);
    expect(done.statusCode, done.body).toBe(200);
    expect((await download(a, "late.bin")).rawPayload.equals(file)).toBe(true);
  });

  it("sweeps an abandoned upload on any node, its parts' blobs with it", async () => {
    const file = randomBytes(3 * PART_SIZE);
    const id = newUploadId();
    const parts = partsOf(id, file);
    expect((await sendPart(a, "abandoned.bin", parts[0] as (typeof parts)[number])).statusCode).toBe(200);
    expect((await sendPart(b, "abandoned.bin", parts[1] as (typeof parts)[number])).statusCode).toBe(200);
    const partBlobs = (
      await a.db.pool.query<{ blob_sha256: string }>(
        `SELECT blob_sha256 FROM asset_multipart_part_blobs
          JOIN asset_multipart_uploads u ON u.id = upload_id WHERE u.upload_key = $1`,
        [id],
      )
    ).rows.map((row) => row.blob_sha256);
    expect(partBlobs.sort()).toEqual([sha256(parts[0]?.body as Buffer), sha256(parts[1]?.body as Buffer)].sort());
    expect(await storedBlobs()).toEqual(expect.arrayContaining(partBlobs));

    // Its last part two days ago: past the maximum age, the next sweep of either node removes it.
    await a.db.pool.query("UPDATE asset_multipart_uploads SET updated_at = $1 WHERE upload_key = $2", [
      new Date(Date.now() - 48 * 3_600_000).toISOString(),
      id,
    ]);
    await vi.waitFor(async () => expect(await uploadKeys()).not.toContain(id), { timeout: 20_000, interval: 200 });
    await vi.waitFor(
      async () => {
        const left = await storedBlobs();
        for (const blob of partBlobs) expect(left).not.toContain(blob);
      },
      { timeout: 5_000, interval: 100 },
    );
    const gone = await complete(b, "abandoned.bin", id);
    expect(gone.statusCode).toBe(404);
    expect(gone.headers["x-wharf-error"]).toBe("MULTIPART_UPLOAD_NOT_FOUND");
  }, 40_000);
});
