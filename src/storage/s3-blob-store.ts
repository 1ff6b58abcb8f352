import { createHash, randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, readdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import type { ResolveHost } from "../net/fetch-target.js";
import type { ProxySettings } from "../net/outbound-proxy.js";
import {
  type AbandonedUploads,
  type BlobInfo,
  type BlobStore,
  contentRangeTotal,
  type PutOptions,
  type SizedReads,
  type TemporaryFiles,
} from "./blob-store.js";
import { diskFull, isDiskFull } from "./disk-full.js";
import { digestOffThread, type OffThreadDigest } from "./digest-thread.js";
import { SourceReader, writeHashed } from "./file-blob-store.js";
import { isMissingObject, objectStoreError } from "./s3-errors.js";
import { objectStoreLookup, storeProxyRouter } from "./store-lookup.js";
import { UndiciHttpHandler } from "./undici-http-handler.js";

export interface S3BlobStoreOptions {
  readonly bucket: string;
  /** Key prefix inside the bucket (the seed's TargetPath); blobs go under `<targetPath>/blobs/`. */
  readonly targetPath?: string;
  readonly region?: string;
  /** The seed's CustomServiceUrl: a non-Amazon S3 server, addressed path-style. */
  readonly endpoint?: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly reducedRedundancy?: boolean;
  readonly makePublic?: boolean;
  readonly encrypted?: boolean;
  /** Local directory where puts are spooled while hashed (the key is known only at the end). */
  readonly tempDir: string;
  /** Content larger than this goes multipart (default 100 MiB). */
  readonly multipartThresholdBytes?: number;
  /** Part size for multipart uploads (default 16 MiB; S3's minimum is 5 MiB except the last). */
  readonly partSizeBytes?: number;
  /** Resolves the endpoint's host name (the system's DNS by default; tests answer themselves). */
  readonly resolveHost?: ResolveHost;
  /** The server's proxies (config.ts `outboundProxy`); none: the store is reached directly. */
  readonly outboundProxy?: ProxySettings;
}

const ADDRESS = /^[0-9a-f]{64}$/;
const MiB = 1024 * 1024;
/** S3 allows at most 10,000 parts per upload. */
const MAX_PARTS = 10_000;
/**
 * Parts sent at once: one part at a time made a 100 MiB multipart upload to Swift take three times
 * as long as one PUT (each part waits for the server to store the one before); four close most of
 * that gap (bench/object-store.ts). Part bodies stream from the spool file, so memory stays small.
 */
const PARTS_AT_ONCE = 4;
/**
 * How long a blob's size, once looked up, answers `stat` again without a request: a download
 * looks the blob up more than once (reader, then size check, then open) within milliseconds, and
 * each HEAD costs a round trip to the server. Short, and forgotten on this store's own delete.
 */
const STAT_REMEMBERED_MS = 2_000;

/**
 * The put's source, with the MD5 that a single PUT's Content-MD5 needs computed on the way, on the
 * digest thread (beside the SHA-256 and SHA-1 on this one), for as long as the content may still
 * go up in one PUT: a blob past the multipart threshold goes up in parts that carry their own MD5s,
 * and its whole-file MD5 would be wasted work. An `upTo` of 0 computes none.
 */
class Md5TappedReader extends SourceReader {
  private hash: OffThreadDigest | undefined;
  private seen = 0;

  constructor(
    source: Readable | AsyncIterable<Uint8Array>,
    signal: AbortSignal | undefined,
    private readonly upTo: number,
  ) {
    super(source, signal);
    if (upTo > 0) this.hash = digestOffThread(["md5"]);
  }

  override async next(): Promise<Uint8Array | undefined> {
    const chunk = await super.next();
    if (chunk !== undefined && this.hash !== undefined) {
      this.seen += chunk.length;
      if (this.seen <= this.upTo) await this.hash.update(chunk);
      else this.forget();
    }
    return chunk;
  }

  /** Hex MD5 of the whole content, when it was no larger than `upTo`. */
  async md5(): Promise<string | undefined> {
    const hex = (await this.hash?.digest())?.md5;
    this.hash = undefined;
    return hex;
  }

  /** Stops the MD5 (content too large for one PUT, or the put failed). */
  forget() {
    this.hash?.cancel();
    this.hash = undefined;
  }
}

/**
 * A BlobStore on an S3-compatible server. A put is spooled to a local temp file while hashed
 * (the SHA-256 names the object, and is known only after the last byte), then uploaded with
 * Content-MD5 to `<targetPath>/blobs/<aa>/<sha256>`: one PUT, or a multipart upload whose parts
 * each carry their own Content-MD5. Both are atomic on the server, so a blob is visible only once
 * complete; a failed multipart upload is aborted, and ones left by a crash are aborted by
 * clearStaleTemporaryFiles. Same bytes under the same key make a racing second upload harmless
 * (two puts that both found the key free write the same bytes, each atomically), so no conditional
 * write is needed, nor sent: Swift refuses them (see put).
 */
export function createS3BlobStore(options: S3BlobStoreOptions): BlobStore & AbandonedUploads & SizedReads {
  const client = new S3Client({
    region: options.region ?? "us-east-1",
    ...(options.endpoint ? { endpoint: options.endpoint, forcePathStyle: true } : {}),
    credentials: { accessKeyId: options.accessKeyId, secretAccessKey: options.secretAccessKey },
    // Default checksums stream aws-chunked bodies that third-party servers refuse (Swift) or store
    // with the framing (s3rver); Content-MD5, set below, is the digest they all understand.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    // No logger: the SDK's would print requests, and with them credentials.
    requestHandler: new UndiciHttpHandler({
      lookup: objectStoreLookup(options.resolveHost),
      proxyFor: storeProxyRouter(options.outboundProxy),
    }),
  });
  const { bucket, tempDir } = options;
  const where = `bucket "${bucket}"${options.endpoint ? ` at ${options.endpoint}` : ""}`;
  const trimmed = (options.targetPath ?? "").replace(/^\/+|\/+$/g, "");
  const blobsPrefix = `${trimmed ? `${trimmed}/` : ""}blobs/`;
  const keyOf = (sha256: string) => `${blobsPrefix}${sha256.slice(0, 2)}/${sha256}`;
  const threshold = options.multipartThresholdBytes ?? 100 * MiB;
  const partSize = Math.max(options.partSizeBytes ?? 16 * MiB, 5 * MiB);
  const writeOptions = {
    ...(options.reducedRedundancy ? { StorageClass: "REDUCED_REDUNDANCY" as const } : {}),
    ...(options.makePublic ? { ACL: "public-read" as const } : {}),
    ...(options.encrypted ? { ServerSideEncryption: "AES256" as const } : {}),
  };
  /** Sum of listed sizes; forgotten whenever this store writes or deletes. */
  let cachedTotal: number | undefined;
  /** Address -> size and when it was looked up (STAT_REMEMBERED_MS). */
  const recentStats = new Map<string, { size: number; at: number }>();

  async function send<T>(what: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      throw objectStoreError(what, where, error);
    }
  }

  async function exists(key: string, signal?: AbortSignal) {
    try {
      await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }), { abortSignal: signal });
      return true;
    } catch (error) {
      if (isMissingObject(error)) return false;
      throw objectStoreError("look up a blob", where, error);
    }
  }

  async function put(source: Readable | AsyncIterable<Uint8Array>, putOptions: PutOptions = {}): Promise<BlobInfo> {
    const { signal } = putOptions;
    const wanted = putOptions.extraDigests ?? [];
    // Every request carries Content-MD5, which the server checks, and each part of a multipart
    // upload gets its own. A single PUT's is computed here with the other digests when the caller
    // wants the MD5 too (or checks a claimed one), else beside them on the digest thread, unless
    // the content is declared too large for one PUT.
    const md5WithDigests = wanted.includes("md5") || putOptions.expected?.md5 !== undefined;
    const declaredParts = (putOptions.declaredBytes ?? 0) > threshold;
    const reader = new Md5TappedReader(source, signal, md5WithDigests || declaredParts ? 0 : threshold);
    const tempPath = path.join(tempDir, `put-${randomUUID()}`);
    try {
      signal?.throwIfAborted();
      await mkdir(tempDir, { recursive: true });
      // Not fsynced: the spool is read back at once and discarded, whatever happens (a crash
      // leaves it to clearStaleTemporaryFiles); the object store makes the content durable.
      const { digests, size } = await writeHashed(reader, tempPath, putOptions, { durable: false });
      signal?.throwIfAborted();
      await putOptions.beforePublish?.(digests.sha256);
      const info: BlobInfo = {
        sha256: digests.sha256,
        sha1: digests.sha1,
        ...(wanted.includes("md5") ? { md5: digests.md5 } : {}),
        ...(wanted.includes("sha512") ? { sha512: digests.sha512 } : {}),
        size,
      };
      const key = keyOf(info.sha256);
      // Same address means same bytes: the existing object already is this content. Looked up
      // with a HEAD, not by a PUT with If-None-Match: * (one request fewer on AWS, which answers
      // 412 for a key that exists): Swift's s3api refuses every PUT carrying that header (501
      // NotImplemented), so a store on Swift could not write at all.
      if (!(await exists(key, signal))) {
        cachedTotal = undefined;
        if (size <= threshold) {
          const md5Hex = digests.md5 ?? (await reader.md5());
          const md5 =
            md5Hex === undefined
              ? // Declared larger than it proved: read back from the spool (in the page cache).
                await md5Of(tempPath, 0, size)
              : Buffer.from(md5Hex, "hex").toString("base64");
          const command = new PutObjectCommand({
            Bucket: bucket,
            Key: key,
            Body: createReadStream(tempPath, { highWaterMark: MiB }),
            ContentLength: size,
            ContentMD5: md5,
            ContentType: "application/octet-stream",
            ...writeOptions,
          });
          signPayloadAs(command, info.sha256);
          await send("store a blob", () => client.send(command, { abortSignal: signal }));
        } else {
          await uploadMultipart(key, tempPath, size, signal);
        }
      }
      // An upload reads its blob back at once (the archive's checks): it needs no HEAD to find it.
      rememberStat(info.sha256, size);
      return info;
    } catch (error) {
      reader.dispose(error);
      if (signal?.aborted) throw signal.reason;
      if (isDiskFull(error)) throw diskFull("the upload was not stored", error);
      throw error;
    } finally {
      reader.forget();
      reader.release();
      await rm(tempPath, { force: true });
    }
  }

  /** Uploads the spooled file in parts (PARTS_AT_ONCE at a time, streamed from it), aborting on failure. */
  async function uploadMultipart(key: string, file: string, size: number, signal?: AbortSignal) {
    const chunk = Math.max(partSize, Math.ceil(size / MAX_PARTS));
    const created = await send("start a multipart upload", () =>
      client.send(
        new CreateMultipartUploadCommand({
          Bucket: bucket,
          Key: key,
          ContentType: "application/octet-stream",
          ...writeOptions,
        }),
        { abortSignal: signal },
      ),
    );
    const uploadId = created.UploadId;
    if (!uploadId) throw objectStoreError("start a multipart upload", where, new Error("no UploadId in the answer"));
    const count = Math.ceil(size / chunk);
    const parts: { ETag: string; PartNumber: number }[] = [];
    /** Stops the other senders once one part failed. */
    const failed = new AbortController();
    const stop = signal ? AbortSignal.any([signal, failed.signal]) : failed.signal;
    let next = 0;
    const sender = async () => {
      for (let index = next++; index < count && !stop.aborted; index = next++) {
        const start = index * chunk;
        const length = Math.min(chunk, size - start);
        // The part's MD5 from the spool file (in the page cache), then its bytes streamed from it.
        const md5 = await md5Of(file, start, length);
        const answer = await send("upload a part", () =>
          client.send(
            new UploadPartCommand({
              Bucket: bucket,
              Key: key,
              UploadId: uploadId,
              PartNumber: index + 1,
              Body: createReadStream(file, { start, end: start + length - 1, highWaterMark: MiB }),
              ContentLength: length,
              ContentMD5: md5,
            }),
            { abortSignal: stop },
          ),
        );
        parts[index] = { ETag: answer.ETag ?? "", PartNumber: index + 1 };
      }
    };
    try {
      // Every sender settles before the upload is aborted or completed: a part still in flight
      // after the abort could leave a stray segment on the server.
      let firstFailure: { error: unknown } | undefined;
      await Promise.all(
        Array.from({ length: Math.min(PARTS_AT_ONCE, count) }, () =>
          sender().catch((error: unknown) => {
            firstFailure ??= { error };
            failed.abort(error);
          }),
        ),
      );
      signal?.throwIfAborted();
      if (firstFailure !== undefined) throw firstFailure.error;
      await send("complete a multipart upload", () =>
        client.send(
          new CompleteMultipartUploadCommand({
            Bucket: bucket,
            Key: key,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
          { abortSignal: signal },
        ),
      );
    } catch (error) {
      // Not with the caller's signal: the abort must reach the server even when the put was aborted.
      await client
        .send(new AbortMultipartUploadCommand({ Bucket: bucket, Key: key, UploadId: uploadId }))
        .catch(() => undefined);
      throw error;
    }
  }

  async function statBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return undefined;
    const recent = recentStats.get(sha256);
    if (recent !== undefined && Date.now() - recent.at < STAT_REMEMBERED_MS) return { size: recent.size };
    try {
      const head = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: keyOf(sha256) }));
      const size = head.ContentLength ?? 0;
      rememberStat(sha256, size);
      return { size };
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      throw objectStoreError("look up a blob", where, error);
    }
  }

  function rememberStat(sha256: string, size: number) {
    recentStats.delete(sha256);
    recentStats.set(sha256, { size, at: Date.now() });
    // Only the last few matter (a download's repeated look-ups): oldest first out.
    if (recentStats.size > 256) recentStats.delete(recentStats.keys().next().value as string);
  }

  /**
   * One GET, whose answer also says the blob's size (Content-Range's total for a range, else
   * Content-Length): a download needs no HEAD first. A range past the end of what is stored (a
   * blob shorter than its metadata says) is answered with what is stored, for the caller to see.
   */
  async function openSized(sha256: string, range?: { start: number; end: number }) {
    if (!ADDRESS.test(sha256)) return undefined;
    // An empty range (of an empty blob) has no Range header: the whole, empty object is asked.
    const ranged = range !== undefined && range.end >= range.start;
    try {
      const answer = await client.send(
        new GetObjectCommand({
          Bucket: bucket,
          Key: keyOf(sha256),
          ...(ranged ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
      );
      const size = contentRangeTotal(answer.ContentRange) ?? answer.ContentLength ?? 0;
      rememberStat(sha256, size);
      return { stream: answer.Body as Readable, size };
    } catch (error) {
      if (isMissingObject(error)) return undefined;
      if ((error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416) {
        const stored = await statBlob(sha256);
        return stored === undefined ? undefined : { stream: Readable.from([]), size: stored.size };
      }
      throw objectStoreError("read a blob", where, error);
    }
  }

  const openBlob = async (sha256: string, range?: { start: number; end: number }) =>
    (await openSized(sha256, range))?.stream;

  async function deleteBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return;
    cachedTotal = undefined;
    recentStats.delete(sha256);
    await send("delete a blob", () => client.send(new DeleteObjectCommand({ Bucket: bucket, Key: keyOf(sha256) })));
  }

  /** Every stored object under blobs/ whose key is one this store writes, with its size. */
  async function* listObjects(): AsyncIterable<{ sha256: string; size: number }> {
    let token: string | undefined;
    do {
      const page = await send("list blobs", () =>
        client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: blobsPrefix, ContinuationToken: token })),
      );
      for (const object of page.Contents ?? []) {
        const rest = (object.Key ?? "").slice(blobsPrefix.length);
        const [fan, name, ...more] = rest.split("/");
        // Only keys this store could have written count; strays are not blobs.
        if (more.length === 0 && name && ADDRESS.test(name) && name.slice(0, 2) === fan) {
          yield { sha256: name, size: object.Size ?? 0 };
        }
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  async function* list(): AsyncIterable<string> {
    for await (const { sha256 } of listObjects()) yield sha256;
  }

  async function totalBytes() {
    if (cachedTotal !== undefined) return cachedTotal;
    let total = 0;
    for await (const { size } of listObjects()) total += size;
    cachedTotal = total;
    return total;
  }

  async function clearStaleTemporaryFiles(): Promise<TemporaryFiles> {
    // Only safe while no put is running, which is why it is called once at start-up.
    const cleared = { files: 0, bytes: 0 };
    for (const name of await readdir(tempDir).catch(() => [] as string[])) {
      const file = path.join(tempDir, name);
      cleared.bytes += (await stat(file).catch(() => undefined))?.size ?? 0;
      cleared.files++;
      await rm(file, { recursive: true, force: true });
    }
    const aborted = await abortUploads(() => true);
    return { files: cleared.files + aborted.files, bytes: cleared.bytes + aborted.bytes };
  }

  /** Aborts the unfinished multipart uploads under blobs/ that `abandoned` picks, counting their parts' bytes. */
  async function abortUploads(abandoned: (initiated: Date | undefined) => boolean): Promise<TemporaryFiles> {
    const cleared = { files: 0, bytes: 0 };
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const page = await send("list unfinished uploads", () =>
        client.send(
          new ListMultipartUploadsCommand({
            Bucket: bucket,
            Prefix: blobsPrefix,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        ),
      );
      for (const upload of page.Uploads ?? []) {
        if (!upload.Key || !upload.UploadId || !abandoned(upload.Initiated)) continue;
        const ids = { Bucket: bucket, Key: upload.Key, UploadId: upload.UploadId };
        const parts = await send("list parts of an unfinished upload", () => client.send(new ListPartsCommand(ids)));
        cleared.bytes += (parts.Parts ?? []).reduce((sum, part) => sum + (part.Size ?? 0), 0);
        await send("abort an unfinished upload", () => client.send(new AbortMultipartUploadCommand(ids)));
        cleared.files++;
      }
      keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
      uploadIdMarker = page.IsTruncated ? page.NextUploadIdMarker : undefined;
    } while (keyMarker);
    return cleared;
  }

  /** Unfinished uploads begun `olderThanMs` ago or earlier (garbage collection: safe while puts run). */
  const abortAbandonedUploads = (olderThanMs: number) =>
    abortUploads((initiated) => initiated !== undefined && Date.now() - initiated.getTime() >= olderThanMs);

  return {
    put,
    abortAbandonedUploads,
    stat: statBlob,
    open: openBlob,
    openSized,
    delete: deleteBlob,
    list,
    totalBytes,
    clearStaleTemporaryFiles,
  };
}

/**
 * Signs the request's body as the content with this SHA-256 (SigV4's x-amz-content-sha256, which
 * the signer takes as given instead of UNSIGNED-PAYLOAD for a streamed body): a server that checks
 * signed payloads (S3, Swift, MinIO, Ceph) then refuses bytes that do not match the very address
 * they are stored under. Costs nothing here, as the put has just computed it.
 */
function signPayloadAs(command: PutObjectCommand, sha256: string) {
  command.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers["x-amz-content-sha256"] = sha256;
      return next(args);
    },
    { step: "build", name: "wharfSignedPayload" },
  );
}

/** Base64 MD5 of `length` bytes of `file` from `start`. */
async function md5Of(file: string, start: number, length: number): Promise<string> {
  const hash = createHash("md5");
  if (length === 0) return hash.digest("base64");
  for await (const chunk of createReadStream(file, { start, end: start + length - 1, highWaterMark: MiB })) {
    hash.update(chunk as Buffer);
  }
  return hash.digest("base64");
}
