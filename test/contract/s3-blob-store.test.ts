import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { DomainError } from "../../src/domain/errors.js";
import { createS3BlobStore, type S3BlobStoreOptions } from "../../src/storage/s3-blob-store.js";
import { startTestProxy } from "../helpers/http-proxy.js";
import { startRecordingProxy } from "../helpers/recording-proxy.js";
import { type SwiftS3, startSwift, swiftInstalled, swiftClient } from "../helpers/swift.js";
import { countEntries, describeBlobStoreContract } from "./blob-store.contract.js";

const MiB = 1024 * 1024;
const BUCKET = "wharf-tests";

/**
 * The blob-store contract and the S3 specifics against a real OpenStack Swift with s3api, which
 * checks V4 signatures and Content-MD5 (s3rver checks neither). Swift starts once for the file.
 */
let swift: SwiftS3 | undefined;
let admin: S3Client;

const sha256 = (content: Buffer) => createHash("sha256").update(content).digest("hex");

const clientFor = swiftClient;

function running(): SwiftS3 {
  if (!swift) throw new Error("swift is not running");
  return swift;
}

/** A store over a fresh key prefix of the shared bucket, with its own temp dir. */
async function makeStore(overrides: Partial<S3BlobStoreOptions> = {}) {
  if (!swift) throw new Error("swift is not running");
  const tempDir = await mkdtemp(path.join(tmpdir(), "wharf-s3-spool-"));
  const targetPath = `t-${randomUUID()}`;
  const store = createS3BlobStore({
    bucket: BUCKET,
    targetPath,
    region: swift.region,
    endpoint: swift.endpoint,
    accessKeyId: swift.accessKeyId,
    secretAccessKey: swift.secretAccessKey,
    tempDir,
    ...overrides,
  });
  const cleanup = async () => {
    await rm(tempDir, { recursive: true, force: true });
    const listed = await admin.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${targetPath}/` }));
    // One by one: Swift wants Content-MD5 on DeleteObjects, which the SDK no longer sends.
    for (const { Key } of listed.Contents ?? []) {
      if (Key) await admin.send(new DeleteObjectCommand({ Bucket: BUCKET, Key }));
    }
  };
  return { store, cleanup, tempDir, targetPath };
}

/**
 * The PUT requests that a store (6 MiB multipart threshold, 5 MiB parts) sends while `work` runs,
 * recorded by a proxy in front of Swift.
 */
async function recordedWrites(work: (store: Awaited<ReturnType<typeof makeStore>>["store"]) => Promise<void>) {
  const recorder = await startRecordingProxy(running().endpoint);
  try {
    const { store, cleanup } = await makeStore({
      endpoint: recorder.endpoint,
      multipartThresholdBytes: 6 * MiB,
      partSizeBytes: 5 * MiB,
    });
    try {
      await work(store);
    } finally {
      await cleanup();
    }
    return recorder.requests.filter((r) => r.method === "PUT");
  } finally {
    await recorder.close();
  }
}

describe.skipIf(!swiftInstalled())("S3 blob store on OpenStack Swift", () => {
  beforeAll(async () => {
    const started = Date.now();
    swift = await startSwift();
    admin = clientFor(swift);
    await admin.send(new CreateBucketCommand({ Bucket: BUCKET }));
    console.info(`swift started in ${Date.now() - started} ms`);
  }, 90_000);
  afterAll(async () => {
    admin?.destroy();
    await swift?.stop();
  }, 20_000);

  describeBlobStoreContract("s3 (swift)", async () => {
    const { store, cleanup, tempDir } = await makeStore();
    return { store, cleanup, tempFileCount: () => countEntries(tempDir) };
  });

  describe("s3 blob store specifics", { timeout: 30_000 }, () => {
    let fixture: Awaited<ReturnType<typeof makeStore>>;
    beforeEach(async () => {
      fixture = await makeStore({ multipartThresholdBytes: 6 * MiB, partSizeBytes: 5 * MiB });
      return () => fixture.cleanup();
    });

    it("stores a blob at <targetPath>/blobs/<aa>/<sha256>", async () => {
      const content = randomBytes(1234);
      const info = await fixture.store.put(Readable.from([content]));
      const key = `${fixture.targetPath}/blobs/${info.sha256.slice(0, 2)}/${info.sha256}`;
      const head = await admin.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      expect(head.ContentLength).toBe(1234);
    });

    it("refuses a wrong secret with a clear error that does not contain the secret", async () => {
      const wrongSecret = "not-the-secret-4f9a2b";
      const { store, cleanup } = await makeStore({ secretAccessKey: wrongSecret });
      try {
        const error = await store.put(Readable.from([randomBytes(100)])).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DomainError);
        expect(error).toMatchObject({ code: "OBJECT_STORE_ACCESS_DENIED" });
        expect((error as Error).message).toMatch(/SecretAccessKey/);
        expect((error as Error).message).not.toContain(wrongSecret);
        expect((error as Error).message).not.toContain(running().secretAccessKey);
        await expect(store.stat(sha256(randomBytes(10)))).rejects.toMatchObject({ code: "OBJECT_STORE_ACCESS_DENIED" });
      } finally {
        await cleanup();
      }
    });

    it("vets the endpoint's host name at each connection: loopback is used, a metadata address refused", async () => {
      // "swift.test" exists in no DNS: only the store's own lookup can make it reach Swift.
      const port = new URL(running().endpoint).port;
      const asked: string[] = [];
      const resolvingTo = (address: string) => async (hostname: string) => {
        asked.push(hostname);
        return [{ address, family: 4 }];
      };
      const local = await makeStore({ endpoint: `http://swift.test:${port}`, resolveHost: resolvingTo("127.0.0.1") });
      try {
        const info = await local.store.put(Readable.from([randomBytes(100)]));
        expect(await local.store.stat(info.sha256)).toEqual({ size: 100 });
        expect(asked).toContain("swift.test");
      } finally {
        await local.cleanup();
      }
      // A name that resolves to the cloud metadata address (DNS rebinding) is refused, not sent to.
      const rebound = await makeStore({
        endpoint: `http://swift.test:${port}`,
        resolveHost: resolvingTo("169.254.169.254"),
      });
      try {
        const error = await rebound.store.stat(sha256(randomBytes(10))).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(DomainError);
        expect(error).toMatchObject({ code: "OBJECT_STORE_ADDRESS_REFUSED", kind: "bad_gateway" });
        expect((error as Error).message).toMatch(/swift\.test.*cloud metadata address/);
      } finally {
        await rebound.cleanup();
      }
    });

    it("goes through the server's HTTP proxy where it applies, and connects itself (vetted) where NO_PROXY says", async () => {
      const port = new URL(running().endpoint).port;
      const asked: string[] = [];
      const toLoopback = async (hostname: string) => {
        asked.push(hostname);
        return [{ address: "127.0.0.1", family: 4 }];
      };
      // A real proxy, which connects to 127.0.0.1 whatever the request names.
      const proxy = await startTestProxy();
      try {
        const through = await makeStore({
          endpoint: `http://swift.test:${port}`,
          resolveHost: toLoopback,
          outboundProxy: { httpProxy: proxy.url },
        });
        try {
          const info = await through.store.put(Readable.from([randomBytes(100)]));
          expect(await through.store.stat(info.sha256)).toEqual({ size: 100 });
          expect(proxy.requests.some((line) => line.startsWith(`PUT http://swift.test:${port}/`))).toBe(true);
          expect(asked).toEqual([]);
        } finally {
          await through.cleanup();
        }
        const seenByProxy = proxy.requests.length;
        const direct = await makeStore({
          endpoint: `http://swift.test:${port}`,
          resolveHost: toLoopback,
          outboundProxy: { httpProxy: proxy.url, noProxy: "swift.test" },
        });
        try {
          const info = await direct.store.put(Readable.from([randomBytes(100)]));
          expect(await direct.store.stat(info.sha256)).toEqual({ size: 100 });
          expect(asked).toContain("swift.test");
          expect(proxy.requests.length).toBe(seenByProxy);
        } finally {
          await direct.cleanup();
        }
      } finally {
        await proxy.close();
      }
    });

    it("sends Content-MD5, which the server checks: a wrong one is refused", async () => {
      // The server checks the digest (so the store's correct one is what lets puts through) ...
      const body = randomBytes(1000);
      const wrong = createHash("md5").update(randomBytes(10)).digest("base64");
      const refused = await admin
        .send(new PutObjectCommand({ Bucket: BUCKET, Key: `${fixture.targetPath}/x`, Body: body, ContentMD5: wrong }))
        .catch((e: unknown) => e);
      expect(refused).toMatchObject({ name: "BadDigest" });
      // ... and the store sets the right one on every write request, single and multipart.
      const writes = await recordedWrites(async (store) => {
        const small = randomBytes(2000);
        const stored = await store.put(Readable.from([small]));
        await store.put(Readable.from([randomBytes(11 * MiB)]));
        expect(stored.sha256).toBe(createHash("sha256").update(small).digest("hex"));
      });
      expect(writes.length).toBe(4); // one PUT, three parts
      for (const write of writes) expect(write.contentMd5).toBe(write.bodyMd5);
      // The single PUT also signs its body as the blob's address.
      expect(writes[0]?.contentSha256).toBe(writes[0]?.bodySha256);
    });

    it("sends the right Content-MD5 however it was computed: a declared length is only a hint", async () => {
      const md5Hex = (content: Buffer) => createHash("md5").update(content).digest("hex");
      const writes = await recordedWrites(async (store) => {
        // Declared too large for one PUT (no MD5 on the way), then smaller than declared, or empty.
        const small = randomBytes(3000);
        const stored = await store.put(Readable.from([small]), { declaredBytes: 10 * 1024 * MiB });
        expect(await store.stat(stored.sha256)).toEqual({ size: 3000 });
        await store.put(Readable.from([]), { declaredBytes: 7 * MiB });
        // Declared and proving too large for one PUT: its parts carry their own.
        await store.put(Readable.from([randomBytes(7 * MiB)]), { declaredBytes: 7 * MiB });
        // The caller wants the MD5, or checks a claimed one: the same digest goes in the header.
        const wanted = randomBytes(4000);
        expect((await store.put(Readable.from([wanted]), { extraDigests: ["md5"] })).md5).toBe(md5Hex(wanted));
        const claimed = randomBytes(5000);
        await store.put(Readable.from([claimed]), { expected: { md5: md5Hex(claimed) } });
      });
      expect(writes.length).toBe(6); // four single PUTs, two parts
      for (const write of writes) expect(write.contentMd5).toBe(write.bodyMd5);
    });

    it("looks before it writes: a new blob costs HEAD and PUT, a stored one HEAD only (Swift refuses a conditional PUT)", async () => {
      // Why the look-up stays: Swift's s3api refuses If-None-Match on PUT (501), where S3 itself would
      // answer 412 for a key that exists and so save the HEAD (s3-blob-store.ts exists()).
      const conditional = await admin
        .send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: `${fixture.targetPath}/conditional`,
            Body: randomBytes(100),
            IfNoneMatch: "*",
          }),
        )
        .catch((e: unknown) => e);
      expect(conditional).toMatchObject({ name: "NotImplemented", $metadata: { httpStatusCode: 501 } });
      const recorder = await startRecordingProxy(running().endpoint);
      try {
        const { store, cleanup } = await makeStore({ endpoint: recorder.endpoint });
        try {
          const content = randomBytes(3000);
          const first = await store.put(Readable.from([content]));
          expect(recorder.requests.map((r) => r.method)).toEqual(["HEAD", "PUT"]);
          recorder.requests.length = 0;
          expect(await store.put(Readable.from([content]))).toEqual(first);
          expect(recorder.requests.map((r) => r.method)).toEqual(["HEAD"]);
        } finally {
          await cleanup();
        }
      } finally {
        await recorder.close();
      }
    });

    it("reads a blob and its whole size in one GET, with no HEAD first, ranged or not", async () => {
      const recorder = await startRecordingProxy(running().endpoint);
      try {
        const { store, cleanup } = await makeStore({ endpoint: recorder.endpoint });
        try {
          const content = randomBytes(5000);
          const { sha256: address } = await store.put(Readable.from([content]));
          const empty = await store.put(Readable.from([]));
          recorder.requests.length = 0;
          const whole = await store.openSized(address);
          expect(whole?.size).toBe(5000);
          expect(Buffer.concat(await (whole?.stream.toArray() ?? []))).toEqual(content);
          const part = await store.openSized(address, { start: 100, end: 199 });
          expect(part?.size).toBe(5000);
          expect(Buffer.concat(await (part?.stream.toArray() ?? []))).toEqual(content.subarray(100, 200));
          // What a download of an empty blob asks for (0 to -1): the whole, empty object.
          const nothing = await store.openSized(empty.sha256, { start: 0, end: -1 });
          expect(nothing?.size).toBe(0);
          expect(await nothing?.stream.toArray()).toEqual([]);
          // A blob shorter than the range asked (shorter than its metadata says): its real size, no bytes.
          const beyond = await store.openSized(address, { start: 6000, end: 6999 });
          expect(beyond?.size).toBe(5000);
          expect(await beyond?.stream.toArray()).toEqual([]);
          expect(await store.openSized(sha256(randomBytes(10)))).toBeUndefined();
          expect(recorder.requests.map((r) => r.method).slice(0, 4)).toEqual(["GET", "GET", "GET", "GET"]);
        } finally {
          await cleanup();
        }
      } finally {
        await recorder.close();
      }
    });

    it("signs a single PUT's body with its SHA-256, which the server checks: other bytes are refused", async () => {
      const key = `${fixture.targetPath}/signed`;
      const command = new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: randomBytes(1000) });
      command.middlewareStack.add(
        (next) => async (args) => {
          (args.request as { headers: Record<string, string> }).headers["x-amz-content-sha256"] = createHash("sha256")
            .update("other bytes")
            .digest("hex");
          return next(args);
        },
        { step: "build", name: "wrongSignedPayload" },
      );
      const refused = await admin.send(command).catch((e: unknown) => e);
      expect(refused).toMatchObject({ $metadata: { httpStatusCode: expect.any(Number) } });
      expect((refused as { $metadata: { httpStatusCode: number } }).$metadata.httpStatusCode).toBeGreaterThanOrEqual(
        400,
      );
      await expect(admin.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))).rejects.toMatchObject({
        name: "NotFound",
      });
    });

    it("puts a large blob in parts, and a range across a part boundary reads right", async () => {
      const content = randomBytes(12 * MiB);
      const info = await fixture.store.put(Readable.from([content.subarray(0, 7 * MiB), content.subarray(7 * MiB)]));
      const key = `${fixture.targetPath}/blobs/${info.sha256.slice(0, 2)}/${info.sha256}`;
      const head = await admin.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
      // A multipart object's ETag is "<md5 of the part md5s>-<part count>".
      expect(head.ETag).toMatch(/-3"?$/);
      expect(await fixture.store.stat(info.sha256)).toEqual({ size: content.length });
      const start = 5 * MiB - 100;
      const end = 10 * MiB + 100;
      const stream = await fixture.store.open(info.sha256, { start, end });
      const chunks: Buffer[] = [];
      if (!stream) throw new Error("the multipart blob is absent");
      for await (const chunk of stream) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).equals(content.subarray(start, end + 1))).toBe(true);
    });

    it("leaves no visible object and no unfinished upload when a multipart put is interrupted", async () => {
      const controller = new AbortController();
      const reason = new Error("client went away");
      let sent = 0;
      async function* abortsLate() {
        for (let i = 0; i < 16; i++) {
          yield randomBytes(MiB);
          sent++;
        }
      }
      // The spool is complete (16 MiB) before the upload starts; abort once the first part is up.
      const pending = fixture.store.put(abortsLate(), { signal: controller.signal });
      pending.catch(() => {});
      const giveUp = Date.now() + 20_000;
      while (Date.now() < giveUp) {
        const uploads = await admin.send(
          new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: `${fixture.targetPath}/` }),
        );
        if ((uploads.Uploads ?? []).length > 0) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      controller.abort(reason);
      await expect(pending).rejects.toBe(reason);
      expect(sent).toBe(16);
      const listed: string[] = [];
      for await (const address of fixture.store.list()) listed.push(address);
      expect(listed).toEqual([]);
      const uploads = await admin.send(
        new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: `${fixture.targetPath}/` }),
      );
      expect(uploads.Uploads ?? []).toEqual([]);
      expect(await countEntries(fixture.tempDir)).toBe(0);
    });

    it("aborts stale multipart uploads left by a crash, counting their bytes", async () => {
      const address = sha256(randomBytes(10));
      const key = `${fixture.targetPath}/blobs/${address.slice(0, 2)}/${address}`;
      const created = await admin.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
      await admin.send(
        new UploadPartCommand({
          Bucket: BUCKET,
          Key: key,
          UploadId: created.UploadId,
          PartNumber: 1,
          Body: randomBytes(3000),
        }),
      );
      expect(await fixture.store.stat(address)).toBeUndefined();
      // Garbage collection aborts only uploads begun long enough ago: this one is kept...
      expect(await fixture.store.abortAbandonedUploads(3_600_000)).toEqual({ files: 0, bytes: 0 });
      // ...until it is old enough (0 here); the start-up sweep takes every one.
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      expect(await fixture.store.abortAbandonedUploads(0)).toEqual({ files: 1, bytes: 3000 });
      await admin.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }));
      expect(await fixture.store.clearStaleTemporaryFiles()).toEqual({ files: 1, bytes: 0 });
      const uploads = await admin.send(
        new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: `${fixture.targetPath}/` }),
      );
      expect(uploads.Uploads ?? []).toEqual([]);
      expect(await fixture.store.clearStaleTemporaryFiles()).toEqual({ files: 0, bytes: 0 });
    });
  });
});
