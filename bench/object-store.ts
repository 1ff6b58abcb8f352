import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { Readable } from "node:stream";
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { BlobServiceClient } from "@azure/storage-blob";
import { createAzureBlobStore } from "../src/storage/azure-blob-store.js";
import type { BlobStore } from "../src/storage/blob-store.js";
import { createS3BlobStore } from "../src/storage/s3-blob-store.js";
import { collectSocketBuffersYoung } from "../src/young-buffers.js";
import { startAzurite } from "../test/helpers/azurite.js";
import { startRecordingProxy } from "../test/helpers/recording-proxy.js";
import { startSwift, swiftClient, swiftInstalled, type SwiftS3 } from "../test/helpers/swift.js";
import { Agent, request } from "undici";
import { cpuSeconds, MiB, round } from "./load.js";
import type { Scenario, ScenarioContext } from "./scenarios.js";
import { createFeed, createFeedKey, uploadFile, writeUpack } from "./upack-seed.js";

/**
 * A universal feed on the S3 store (issue 15 section 6), against a real OpenStack Swift with s3api
 * (test/helpers/swift.ts): each Wharf figure is measured beside the plain S3 request that does the
 * same work, round by round in the same run, one client at a time, and reported as median and best.
 *
 * - download: `GET /upack/<feed>/download/...` of a 100 MiB package through the running server,
 *   with undici's request, body drained, versus GetObject (the SDK, node:http) of the very object Wharf stored (`<TargetPath>/blobs/<aa>/<sha256>`).
 * - storePut: the S3 store's put (createS3BlobStore: spool + hash, HEAD, one PUT with Content-MD5)
 *   of 100 MiB held in memory, versus one PutObject of the same bytes with Content-MD5 (its MD5,
 *   which a client must compute too, is timed apart and not counted in the baseline).
 * - httpUpload: `PUT /upack/<feed>/upload` of a 100 MiB package (the blob is then just over the
 *   multipart threshold, so it goes up in parts), against the same PutObject baseline.
 *
 * BENCH_S3_ROUNDS (default 5) rounds of each, after one unmeasured warm-up of each; BENCH_S3_ONLY=
 * download or upload measures only that side (to profile it). Skipped, with a
 * reason in the figures, where Swift is not installed.
 */

const PAYLOAD = 100 * MiB;
const BUCKET = "wharf-bench";
const TARGET_PATH = "bench";
const FEED = "bench-s3";

const rounds = () => Math.max(1, Math.trunc(Number(process.env.BENCH_S3_ROUNDS ?? 5)) || 5);

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
}

/** Median and best of a set of timings of `bytes` each. */
function summary(msList: readonly number[], bytes: number) {
  const middle = median(msList);
  const min = Math.min(...msList);
  const rate = (ms: number) => round(bytes / MiB / (ms / 1000));
  return {
    rounds: msList.length,
    medianMs: round(middle),
    minMs: round(min),
    medianMiBps: rate(middle),
    bestMiBps: rate(min),
  };
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await work();
  return performance.now() - started;
}

async function drained(body: AsyncIterable<Uint8Array>, expected: number, what: string): Promise<void> {
  let bytes = 0;
  for await (const chunk of body) bytes += chunk.length;
  if (bytes !== expected) throw new Error(`${what}: ${bytes} bytes, expected ${expected}`);
}

const s3ClientOf = (swift: SwiftS3): S3Client => swiftClient(swift);

/** The feed's store set to the bucket through the storage API, as an administrator would. */
async function putFeedOnS3(ctx: ScenarioContext, swift: SwiftS3): Promise<void> {
  const res = await fetch(`${ctx.url}/api/storage?feed=${FEED}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
    body: JSON.stringify({
      id: "s3",
      properties: {
        AccessKey: swift.accessKeyId,
        SecretAccessKey: swift.secretAccessKey,
        RegionEndpoint: swift.region,
        BucketName: BUCKET,
        CustomServiceUrl: swift.endpoint,
        TargetPath: TARGET_PATH,
      },
    }),
  });
  if (res.status !== 200) throw new Error(`setting the feed's storage answered ${res.status}: ${await res.text()}`);
}

const sha256Of = (file: string) =>
  new Promise<string>((resolve, reject) => {
    const hash = createHash("sha256");
    fs.createReadStream(file)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });

async function measureDownloads(ctx: ScenarioContext, s3: S3Client, count: number) {
  const file = path.join(ctx.workDir, "s3-download.upack");
  await writeUpack(file, { name: "large", version: "1.0.0" }, PAYLOAD);
  const size = fs.statSync(file).size;
  const sha256 = await sha256Of(file);
  const key = `${TARGET_PATH}/blobs/${sha256.slice(0, 2)}/${sha256}`;
  await uploadFile(ctx, FEED, file);
  // The package must be the very object the plain GET reads, or the comparison means nothing.
  const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }));
  if (head.ContentLength !== size) throw new Error(`${key} holds ${head.ContentLength} bytes, expected ${size}`);
  fs.rmSync(file, { force: true });

  const headers = { "X-ApiKey": await createFeedKey(ctx, FEED) };
  const url = `${ctx.url}/upack/${FEED}/download/large/1.0.0`;
  // undici's request, not fetch: fetch copies every chunk into a web stream, and on two cores the
  // client's CPU then competes with the server's (a plain GET's client is the SDK's node:http).
  const dispatcher = new Agent({ keepAliveTimeout: 30_000 });
  ctx.defer(() => dispatcher.close());
  const viaWharf = async () => {
    const res = await request(url, { headers, dispatcher });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    await drained(res.body, size, "Wharf download");
  };
  const plain = async () => {
    const answer = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    await drained(answer.Body as Readable, size, "GetObject");
  };
  await viaWharf();
  await plain();
  const wharfMs: number[] = [];
  const plainMs: number[] = [];
  let serverCpuSec = 0;
  const measuredViaWharf = async () => {
    const before = cpuSeconds(ctx.serverPid) ?? NaN;
    await viaWharf();
    serverCpuSec += (cpuSeconds(ctx.serverPid) ?? NaN) - before;
  };
  for (let i = 0; i < count; i++) {
    // Alternating which goes first keeps a slow patch of the machine from landing on one side only.
    const order = i % 2 === 0 ? [measuredViaWharf, plain] : [plain, measuredViaWharf];
    for (const work of order) (work === plain ? plainMs : wharfMs).push(await timed(work));
    ctx.log(
      `object-store download round ${i + 1}: Wharf ${round(wharfMs.at(-1) ?? 0)} ms, GetObject ${round(plainMs.at(-1) ?? 0)} ms`,
    );
  }
  const wharf = summary(wharfMs, size);
  const baseline = summary(plainMs, size);
  return {
    fileBytes: size,
    wharf: { ...wharf, serverCpuSecPerDownload: round(serverCpuSec / count, 3) },
    getObject: baseline,
    ratio: round(wharf.medianMiBps / baseline.medianMiBps),
  };
}

/** 100 MiB of random bytes; each round changes the first 16 so that no upload finds its object already there. */
function payloadFor(base: Buffer, round: number): Buffer {
  randomBytes(16).copy(base, 0);
  base.writeUInt32BE(round, 0);
  return base;
}

function* piecesOf(bytes: Buffer) {
  for (let offset = 0; offset < bytes.length; offset += MiB) yield bytes.subarray(offset, offset + MiB);
}

async function measureUploads(ctx: ScenarioContext, swift: SwiftS3, s3: S3Client, count: number) {
  // The store's put runs here, in the benchmark's process: with the V8 setting the server runs it with.
  collectSocketBuffersYoung();
  const bytes = randomBytes(PAYLOAD);
  const store = createS3BlobStore({
    bucket: BUCKET,
    targetPath: "bench-direct",
    region: swift.region,
    endpoint: swift.endpoint,
    accessKeyId: swift.accessKeyId,
    secretAccessKey: swift.secretAccessKey,
    tempDir: path.join(ctx.workDir, "s3-spool"),
  });
  const storeMs: number[] = [];
  const plainMs: number[] = [];
  const md5Ms: number[] = [];
  const httpMs: number[] = [];
  const storePut = async (n: number) => {
    const info = await store.put(Readable.from(piecesOf(payloadFor(bytes, n))));
    return () => store.delete(info.sha256);
  };
  const plainPut = async (n: number) => {
    const body = payloadFor(bytes, n);
    const started = performance.now();
    const md5 = createHash("md5").update(body).digest("base64");
    md5Ms.push(performance.now() - started);
    const key = `bench-plain/${n}`;
    const put = () =>
      s3.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: key,
          Body: body,
          ContentLength: body.length,
          ContentMD5: md5,
          ContentType: "application/octet-stream",
        }),
      );
    plainMs.push(await timed(put));
    return () => s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: key }));
  };
  // Warm-up of both, unmeasured: connections, JIT.
  await (
    await storePut(1_000_000)
  )();
  await plainPut(1_000_000).then((remove) => remove());
  md5Ms.length = 0;
  plainMs.length = 0;
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const removeStored = await storePut(i);
    storeMs.push(performance.now() - started);
    const removePlain = await plainPut(i);
    await removeStored();
    await removePlain();
    ctx.log(
      `object-store upload round ${i + 1}: store put ${round(storeMs.at(-1) ?? 0)} ms, PutObject ${round(plainMs.at(-1) ?? 0)} ms`,
    );
  }

  // Through the server: each round a new version of a fresh package file (written beforehand, not timed).
  for (let i = 0; i < count; i++) {
    const file = path.join(ctx.workDir, `s3-upload-${i}.upack`);
    await writeUpack(file, { name: "up", version: `1.0.${i}` }, PAYLOAD);
    httpMs.push(await uploadFile(ctx, FEED, file));
    fs.rmSync(file, { force: true });
    ctx.log(`object-store HTTP upload round ${i + 1}: ${round(httpMs.at(-1) ?? 0)} ms`);
  }
  const direct = summary(storeMs, PAYLOAD);
  const baseline = summary(plainMs, PAYLOAD);
  const md5Median = median(md5Ms);
  const withMd5 = summary(
    plainMs.map((ms, i) => ms + (md5Ms[i] ?? 0)),
    PAYLOAD,
  );
  const http = summary(httpMs, PAYLOAD);
  return {
    fileBytes: PAYLOAD,
    storePut: direct,
    httpUpload: http,
    putObject: {
      ...baseline,
      md5MedianMs: round(md5Median),
    },
    storePutRatio: round(direct.medianMiBps / baseline.medianMiBps),
    // The client of a plain PutObject computes its Content-MD5 too: the ratio with that counted.
    storePutRatioCountingMd5: round(direct.medianMiBps / withMd5.medianMiBps),
    httpUploadRatio: round(http.medianMiBps / baseline.medianMiBps),
  };
}

const objectStore: Scenario = {
  name: "object-store-s3-100mib",
  async run(ctx) {
    if (!swiftInstalled()) return { skipped: "OpenStack Swift is not installed (/usr/bin/swift-proxy-server)" };
    const started = Date.now();
    const swift = await startSwift();
    ctx.defer(() => swift.stop());
    ctx.log(`swift on ${swift.endpoint} in ${Date.now() - started} ms`);
    const s3 = s3ClientOf(swift);
    ctx.defer(() => s3.destroy());
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await createFeed(ctx, FEED);
    await putFeedOnS3(ctx, swift);
    const count = rounds();
    // Other work on the machine slows the four-process chain (client, Wharf, Swift's proxy and
    // object server) more than the three-process baseline: the load average tells how busy it was.
    const loadBefore = os.loadavg()[0] ?? NaN;
    const only = process.env.BENCH_S3_ONLY;
    const download = only === "upload" ? undefined : await measureDownloads(ctx, s3, count);
    const upload = only === "download" ? undefined : await measureUploads(ctx, swift, s3, count);
    return {
      server: "OpenStack Swift (s3api) on 127.0.0.1, one client at a time",
      loadAverage: { before: round(loadBefore), after: round(os.loadavg()[0] ?? NaN) },
      download,
      upload,
    };
  },
};

/** Bytes of each small put: a typical file of an archive imported into an asset directory. */
const SMALL_BYTES = 4096;

/** One store's small puts against one plain upload request per blob, alternated, in ms per put. */
async function measureSmallPuts(
  ctx: ScenarioContext,
  what: string,
  count: number,
  storePut: (body: Buffer) => Promise<unknown>,
  plainPut: (body: Buffer, n: number) => Promise<unknown>,
) {
  const storeMs: number[] = [];
  const plainMs: number[] = [];
  // Warm-up, unmeasured: connections, JIT, the container or bucket.
  await storePut(randomBytes(SMALL_BYTES));
  await plainPut(randomBytes(SMALL_BYTES), -1);
  for (let i = 0; i < count; i++) {
    storeMs.push(await timed(() => storePut(randomBytes(SMALL_BYTES))));
    plainMs.push(await timed(() => plainPut(randomBytes(SMALL_BYTES), i)));
  }
  const mean = (values: readonly number[]) => values.reduce((sum, ms) => sum + ms, 0) / values.length;
  ctx.log(`${what} small puts: store ${round(mean(storeMs))} ms, plain ${round(mean(plainMs))} ms per put`);
  return {
    puts: count,
    storeMsPerPut: { median: round(median(storeMs)), mean: round(mean(storeMs)) },
    plainUploadMsPerPut: { median: round(median(plainMs)), mean: round(mean(plainMs)) },
  };
}

/** What `count` new small blobs cost a store in requests, counted by a proxy in front of its server. */
async function requestsPerNewPut(target: string, count: number, storeVia: (endpoint: string) => BlobStore) {
  const recorder = await startRecordingProxy(target);
  try {
    const store = storeVia(recorder.endpoint);
    // The first put may also create the container: not part of a put's cost.
    await store.put(Readable.from([randomBytes(SMALL_BYTES)]));
    recorder.requests.length = 0;
    for (let i = 0; i < count; i++) await store.put(Readable.from([randomBytes(SMALL_BYTES)]));
    return round(recorder.requests.length / count);
  } finally {
    await recorder.close();
  }
}

/**
 * Many small puts (an archive import of thousands of small files into an asset directory on an
 * object store pays each one): BENCH_SMALL_PUTS (default 200) new 4 KiB blobs put one after another
 * through the Azure store (azurite) and the S3 store (Swift), each alternated with one plain upload
 * request of other bytes of the same size (the least a put can cost), and the requests one new
 * blob costs each store, counted by a proxy. Azure only where Swift is not installed.
 */
const smallPuts: Scenario = {
  name: "object-store-small-puts",
  async run(ctx) {
    const count = Math.max(1, Math.trunc(Number(process.env.BENCH_SMALL_PUTS ?? 200)) || 200);
    const azurite = await startAzurite();
    ctx.defer(() => azurite.stop());
    const containerName = "wharf-bench-small";
    const azureStore = (connectionString: string, targetPath: string) =>
      createAzureBlobStore({
        connectionString,
        containerName,
        targetPath,
        tempDir: path.join(ctx.workDir, `azure-spool-${targetPath}`),
      });
    const container = BlobServiceClient.fromConnectionString(azurite.connectionString()).getContainerClient(
      containerName,
    );
    const azureDirect = azureStore(azurite.connectionString(), "direct");
    const azure = await measureSmallPuts(
      ctx,
      "azure",
      count,
      (body) => azureDirect.put(Readable.from([body])),
      (body, n) => container.getBlockBlobClient(`plain/${n}`).upload(body, body.length),
    );
    const azureEndpoint = `http://127.0.0.1:${azurite.port}`;
    const azureRequests = await requestsPerNewPut(azureEndpoint, 20, (endpoint) =>
      azureStore(azurite.connectionString().replace(azureEndpoint, endpoint), "counted"),
    );
    const results: Record<string, unknown> = {
      server: "azurite and OpenStack Swift (s3api) on 127.0.0.1, one put at a time",
      blobBytes: SMALL_BYTES,
      azure: { ...azure, requestsPerNewPut: azureRequests },
    };
    if (!swiftInstalled()) return { ...results, s3: { skipped: "OpenStack Swift is not installed" } };
    const swift = await startSwift();
    ctx.defer(() => swift.stop());
    const s3 = s3ClientOf(swift);
    ctx.defer(() => s3.destroy());
    const bucket = "wharf-bench-small";
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    const s3Store = (endpoint: string, targetPath: string) =>
      createS3BlobStore({
        bucket,
        targetPath,
        region: swift.region,
        endpoint,
        accessKeyId: swift.accessKeyId,
        secretAccessKey: swift.secretAccessKey,
        tempDir: path.join(ctx.workDir, `s3-spool-${targetPath}`),
      });
    const s3Direct = s3Store(swift.endpoint, "direct");
    const s3Figures = await measureSmallPuts(
      ctx,
      "s3",
      count,
      (body) => s3Direct.put(Readable.from([body])),
      (body, n) =>
        s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: `plain/${n}`,
            Body: body,
            ContentLength: body.length,
            ContentMD5: createHash("md5").update(body).digest("base64"),
            ContentType: "application/octet-stream",
          }),
        ),
    );
    const s3Requests = await requestsPerNewPut(swift.endpoint, 20, (endpoint) => s3Store(endpoint, "counted"));
    return { ...results, s3: { ...s3Figures, requestsPerNewPut: s3Requests } };
  },
};

export const OBJECT_STORE_SCENARIOS: readonly Scenario[] = [objectStore, smallPuts];
