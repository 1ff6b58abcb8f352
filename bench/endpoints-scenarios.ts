import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { type LoadResult, memoryOf, MiB, percentile, round, runDownloads } from "./load.js";
import type { Scenario } from "./scenarios.js";
import { baselineOf } from "./upack-baseline.js";
import {
  adminHeaders,
  assetUrl,
  createAssetDirectory,
  deleteAsset,
  downloadDigest,
  seedFolder,
  uploadAsset,
  uploadMultipart,
  withCpu,
  withRssSamples,
  writeRandomFile,
} from "./endpoints-seed.js";

/**
 * The asset directory scenarios (docs/compat.md 4.2-4.3). Downloads are measured against the upack
 * baseline file server (upack-baseline-server.ts) on the very same file, in the same run, and
 * reported as a ratio; uploads report server memory, which must not grow with the file.
 *
 * `npm run bench -- 'endpoints-*'` runs the first three. `endpoints-upload-2gib-memory` takes
 * minutes and up to four times 2.5 GiB of disk (the source, two blobs that Wharf keeps for their
 * garbage-collection grace period after the delete, the multipart spool), so it runs only when
 * named in full: `npm run bench -- endpoints-upload-2gib-memory`.
 *
 * BENCH_ASSET_MIB (default 1024) replaces the 1 GiB file size, for a quick smoke run
 * (`BENCH_ASSET_MIB=32 BENCH_DURATION=2 npm run bench -- 'endpoints-*'`); the memory scenario
 * uses 2.5 times that. BENCH_ASSET_FILES (default 10000) is the listed folder's file count.
 */

function fromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, not '${raw}'`);
  return value;
}

const FILE_BYTES = Math.round(fromEnv("BENCH_ASSET_MIB", 1024) * MiB);
const LARGE_FILE_BYTES = Math.round(2.5 * FILE_BYTES);
const LISTED_FILES = Math.trunc(fromEnv("BENCH_ASSET_FILES", 10_000));
/** pgutil's and ADLIB's default part size (docs/compat.md 4.2). */
const PART_BYTES = 5 * MiB;
const SEED_IN_FLIGHT = 16;
/** The p99 of a handful of samples is just their maximum: listing goes on past the duration until this many. */
const MIN_LISTINGS = 20;
const RSS_SAMPLE_MS = 200;

const mibPerSec = (bytes: number, ms: number) => round(bytes / MiB / (ms / 1000));
const perGiB = (cpuSec: number | undefined, bytes: number) =>
  cpuSec === undefined || bytes === 0 ? null : round(cpuSec / (bytes / 1024 ** 3), 3);

const downloadFigures = (load: LoadResult, cpuSec: number | undefined) => ({
  mibPerSec: load.mibPerSec,
  downloads: load.requests,
  latencyP50Ms: load.latencyP50Ms,
  errors: load.errors,
  non2xx: load.non2xx,
  cpuSecPerGiB: perGiB(cpuSec, load.bytes),
});

const DOWNLOAD_DIR = "bench-assets";
const DOWNLOAD_FILE = "large-asset.bin";

const download: Scenario = {
  name: "endpoints-download-1gib",
  async setup(ctx) {
    const baseline = await baselineOf(ctx);
    const file = path.join(baseline.dir, DOWNLOAD_FILE);
    const started = Date.now();
    await writeRandomFile(file, FILE_BYTES);
    await createAssetDirectory(ctx, DOWNLOAD_DIR);
    await uploadAsset(ctx, DOWNLOAD_DIR, `files/${DOWNLOAD_FILE}`, file);
    ctx.log(`seeded a ${round(FILE_BYTES / MiB)} MiB asset in ${Date.now() - started} ms`);
  },
  async run(ctx) {
    const baseline = await baselineOf(ctx);
    const headers = adminHeaders(ctx);
    const wharfUrl = assetUrl(ctx, DOWNLOAD_DIR, "content", `files/${DOWNLOAD_FILE}`);
    const baselineUrl = `${baseline.url}/file/${DOWNLOAD_FILE}`;
    // Once, before measuring: a short or failed answer would otherwise pass for a fast one.
    const check = await downloadDigest(wharfUrl, headers);
    const expected = await downloadDigest(baselineUrl);
    if (check.status !== 200 || check.bytes !== FILE_BYTES || check.sha256 !== expected.sha256) {
      throw new Error(
        `Wharf answered ${check.status} with ${check.bytes} bytes, sha256 ${check.sha256}; ` +
          `expected 200 with ${FILE_BYTES}, sha256 ${expected.sha256}`,
      );
    }
    // Warm-up outside the CPU counters: they must cover the measured bytes only.
    const measure = async (pid: number, url: string, connections: number, extra: Record<string, string> = {}) => {
      const options = { url, headers: extra, connections, warmup: 0 };
      if (ctx.warmup > 0) await runDownloads({ ...options, duration: ctx.warmup });
      const { result, cpuSec } = await withCpu(pid, () => runDownloads({ ...options, duration: ctx.duration }));
      return downloadFigures(result, cpuSec);
    };
    const clients: Record<string, unknown> = {};
    const memoryBefore = memoryOf(ctx.serverPid);
    for (const connections of [1, 8]) {
      ctx.log(`${download.name}: Wharf, then baseline, ${ctx.duration} s with ${connections} connection(s)`);
      const wharf = await measure(ctx.serverPid, wharfUrl, connections, headers);
      const base = await measure(baseline.pid, baselineUrl, connections);
      clients[String(connections)] = { wharf, baseline: base, ratio: round(wharf.mibPerSec / base.mibPerSec) };
    }
    const memoryAfter = memoryOf(ctx.serverPid);
    return {
      fileMiB: round(FILE_BYTES / MiB),
      targetRatio: 0.8,
      clients,
      // VmHWM so far: "before" includes start-up and the seeding upload.
      wharfPeakRssBeforeMB: memoryBefore?.peakRssMB ?? null,
      wharfPeakRssAfterMB: memoryAfter?.peakRssMB ?? null,
      wharfRssAfterMB: memoryAfter?.rssMB ?? null,
    };
  },
};

const LIST_DIR = "bench-asset-list";

const listing: Scenario = {
  name: "endpoints-list-10k",
  async setup(ctx) {
    await createAssetDirectory(ctx, LIST_DIR);
    const ms = await seedFolder(ctx, LIST_DIR, "many", LISTED_FILES, SEED_IN_FLIGHT);
    ctx.log(`seeded ${LISTED_FILES} files through HTTP (${SEED_IN_FLIGHT} in flight) in ${ms} ms`);
  },
  async run(ctx) {
    const url = `${assetUrl(ctx, LIST_DIR, "dir", "many")}?recursive=false`;
    const headers = adminHeaders(ctx);
    const first = await fetch(url, { headers });
    const body = await first.text();
    const count = first.status === 200 ? (JSON.parse(body) as unknown[]).length : -1;
    if (count !== LISTED_FILES) throw new Error(`the listing answered ${first.status} with ${count} items`);
    // One client, one request at a time: the latency a pgutil or ADLIB user sees.
    const sample = async (seconds: number, atLeast: number) => {
      const latencies: number[] = [];
      let non200 = 0;
      const deadline = performance.now() + seconds * 1000;
      while (performance.now() < deadline || latencies.length < atLeast) {
        const started = performance.now();
        const res = await fetch(url, { headers });
        await res.arrayBuffer();
        if (res.status !== 200) non200++;
        latencies.push(performance.now() - started);
      }
      return { latencies, non200 };
    };
    if (ctx.warmup > 0) await sample(ctx.warmup, 1);
    ctx.log(`${listing.name}: ${ctx.duration} s of sequential listings`);
    const { latencies, non200 } = await sample(ctx.duration, MIN_LISTINGS);
    return {
      files: LISTED_FILES,
      responseBytes: Buffer.byteLength(body),
      requests: latencies.length,
      non200,
      latencyP50Ms: round(percentile(latencies, 50)),
      latencyP99Ms: round(percentile(latencies, 99)),
      targetP99Ms: 100,
    };
  },
};

const MULTIPART_DIR = "bench-asset-multipart";

const multipart: Scenario = {
  name: "endpoints-multipart-1gib",
  async setup(ctx) {
    await createAssetDirectory(ctx, MULTIPART_DIR);
  },
  async run(ctx) {
    const file = path.join(ctx.workDir, "multipart.bin");
    const written = await writeRandomFile(file, FILE_BYTES);
    const before = memoryOf(ctx.serverPid);
    ctx.log(`${multipart.name}: ${round(FILE_BYTES / MiB)} MiB in ${round(PART_BYTES / MiB)} MiB parts`);
    const { result: up, cpuSec } = await withCpu(ctx.serverPid, () =>
      uploadMultipart(ctx, MULTIPART_DIR, "big/multipart.bin", file, PART_BYTES),
    );
    const after = memoryOf(ctx.serverPid);
    fs.rmSync(file, { force: true });
    if (up.item.size !== written.size || up.item.sha256 !== written.sha256) {
      throw new Error(
        `the completed item has size ${up.item.size}, sha256 ${up.item.sha256}; expected ${written.size}, ${written.sha256}`,
      );
    }
    return {
      fileMiB: round(FILE_BYTES / MiB),
      partMiB: round(PART_BYTES / MiB),
      parts: up.parts,
      mibPerSec: mibPerSec(FILE_BYTES, up.partsMs + up.completeMs),
      partsMs: round(up.partsMs),
      completeMs: round(up.completeMs),
      cpuSecPerGiB: perGiB(cpuSec, FILE_BYTES),
      peakRssBeforeMB: before?.peakRssMB ?? null,
      peakRssAfterMB: after?.peakRssMB ?? null,
      verified: "size and sha256",
    };
  },
};

const MEMORY_DIR = "bench-asset-memory";

const uploadMemory: Scenario = {
  name: "endpoints-upload-2gib-memory",
  explicitOnly: true,
  async setup(ctx) {
    await createAssetDirectory(ctx, MEMORY_DIR);
  },
  async run(ctx) {
    const file = path.join(ctx.workDir, "upload-memory.bin");
    ctx.defer(() => fs.rmSync(file, { force: true }));
    await writeRandomFile(file, LARGE_FILE_BYTES);
    ctx.log(`${uploadMemory.name}: ${round(LARGE_FILE_BYTES / MiB)} MiB by plain POST`);
    const plain = await withRssSamples(ctx.serverPid, RSS_SAMPLE_MS, () =>
      uploadAsset(ctx, MEMORY_DIR, "plain.bin", file),
    );
    await deleteAsset(ctx, MEMORY_DIR, "plain.bin");
    // New leading bytes: the multipart upload must not meet an identical blob already stored.
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, randomBytes(64), 0, 64, 0);
    fs.closeSync(fd);
    ctx.log(`${uploadMemory.name}: the same size by multipart, ${round(PART_BYTES / MiB)} MiB parts`);
    const parts = await withRssSamples(ctx.serverPid, RSS_SAMPLE_MS, () =>
      uploadMultipart(ctx, MEMORY_DIR, "multipart.bin", file, PART_BYTES),
    );
    await deleteAsset(ctx, MEMORY_DIR, "multipart.bin");
    fs.rmSync(file, { force: true });
    if (plain.result.item.size !== LARGE_FILE_BYTES || parts.result.item.size !== LARGE_FILE_BYTES) {
      throw new Error(
        `stored sizes ${plain.result.item.size} and ${parts.result.item.size}, expected ${LARGE_FILE_BYTES}`,
      );
    }
    const multipartMs = parts.result.partsMs + parts.result.completeMs;
    return {
      fileMiB: round(LARGE_FILE_BYTES / MiB),
      plainPost: { mibPerSec: mibPerSec(LARGE_FILE_BYTES, plain.result.ms), ...plain.rss },
      multipart: {
        mibPerSec: mibPerSec(LARGE_FILE_BYTES, multipartMs),
        parts: parts.result.parts,
        completeMs: round(parts.result.completeMs),
        ...parts.rss,
      },
      rssSampleMs: RSS_SAMPLE_MS,
    };
  },
};

export const ENDPOINTS_SCENARIOS: readonly Scenario[] = [download, listing, multipart, uploadMemory];
