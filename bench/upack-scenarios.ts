import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import Database from "better-sqlite3";
import { cpuSeconds, type LoadResult, memoryOf, MiB, percentile, round, runDownloads, runLoad } from "./load.js";
import type { Scenario, ScenarioContext } from "./scenarios.js";
import { baselineOf } from "./upack-baseline.js";
import { runWrkOnce, wrkAvailable } from "./wrk.js";
import { createFeed, createFeedKey, seedVersions, uploadFile, writeUpack } from "./upack-seed.js";

/**
 * The universal feed scenarios of the "speed" section. Each download scenario measures
 * Wharf and the baseline file server (upack-baseline-server.ts, its own process) one after the
 * other in the same run, on the same file, with the same client, and reports their ratio. The
 * connection counts are part of each figure's definition (64 for small files, 8 for large ones,
 * one client for latency), so BENCH_CONNECTIONS does not change them; BENCH_DURATION and
 * BENCH_WARMUP do.
 *
 * `npm run bench -- 'upack-*'` (or BENCH_SCENARIOS=upack-*) runs only these.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));
const exec = promisify(execFile);

const LARGE_PAYLOAD = 100 * MiB;
const SMALL_FILE = 10 * 1024;
const UPLOADS = 3;
const COLD_SAMPLES = 25;

/** Figures of one side of a comparison. */
function side<Extra extends object>(load: LoadResult, extra: Extra = {} as Extra) {
  return {
    requestsPerSec: load.requestsPerSec,
    mibPerSec: load.mibPerSec,
    latencyP50Ms: load.latencyP50Ms,
    latencyP99Ms: load.latencyP99Ms,
    requests: load.requests,
    errors: load.errors,
    non2xx: load.non2xx,
    ...extra,
  };
}

/** Fails loudly when a URL does not answer 200 with the expected number of bytes. */
async function expectBody(url: string, headers: Record<string, string>, size: number): Promise<void> {
  const res = await fetch(url, { headers });
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || body.length !== size) {
    throw new Error(`${url} answered ${res.status} with ${body.length} bytes, expected 200 with ${size}`);
  }
}

/** CPU seconds a process spends while `work` runs. */
async function withCpu<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; cpuSec: number | undefined }> {
  const before = cpuSeconds(pid);
  const result = await work();
  const after = cpuSeconds(pid);
  return { result, cpuSec: before === undefined || after === undefined ? undefined : round(after - before, 3) };
}

const perGiB = (cpuSec: number | undefined, bytes: number) =>
  cpuSec === undefined || bytes === 0 ? null : round(cpuSec / (bytes / 1024 ** 3), 3);

const largeDownload: Scenario = {
  name: "upack-download-100mib",
  async setup(ctx) {
    const baseline = await baselineOf(ctx);
    const file = path.join(baseline.dir, "large.upack");
    const started = Date.now();
    await writeUpack(file, { name: "large", version: "1.0.0" }, LARGE_PAYLOAD);
    await createFeed(ctx, "bench-large");
    await uploadFile(ctx, "bench-large", file);
    ctx.log(`seeded a ${round(fs.statSync(file).size / MiB)} MiB package in ${Date.now() - started} ms`);
  },
  async run(ctx) {
    const baseline = await baselineOf(ctx);
    const size = fs.statSync(path.join(baseline.dir, "large.upack")).size;
    const key = await createFeedKey(ctx, "bench-large");
    const headers = { "X-ApiKey": key };
    const wharfUrl = `${ctx.url}/upack/bench-large/download/large/1.0.0`;
    const baselineUrl = `${baseline.url}/file/large.upack`;
    await expectBody(wharfUrl, headers, size);
    await expectBody(baselineUrl, {}, size);
    const options = { connections: 8, duration: ctx.duration, warmup: ctx.warmup };

    ctx.log(`${largeDownload.name}: Wharf, ${ctx.duration} s with 8 connections`);
    const rssBefore = memoryOf(ctx.serverPid);
    const wharf = await withCpu(ctx.serverPid, () => runDownloads({ ...options, url: wharfUrl, headers }));
    const rssAfter = memoryOf(ctx.serverPid);
    ctx.log(`${largeDownload.name}: baseline, ${ctx.duration} s with 8 connections`);
    const base = await withCpu(baseline.pid, () => runDownloads({ ...options, url: baselineUrl }));
    return {
      fileMiB: round(size / MiB),
      connections: 8,
      wharf: side(wharf.result, {
        cpuSec: wharf.cpuSec,
        cpuSecPerGiB: perGiB(wharf.cpuSec, wharf.result.bytes),
        rssBeforeMB: rssBefore?.rssMB ?? null,
        rssAfterMB: rssAfter?.rssMB ?? null,
        // VmHWM is the process's peak so far: before = from start-up and seeding (a 100 MiB upload).
        peakRssBeforeMB: rssBefore?.peakRssMB ?? null,
        peakRssAfterMB: rssAfter?.peakRssMB ?? null,
      }),
      baseline: side(base.result, { cpuSecPerGiB: perGiB(base.cpuSec, base.result.bytes) }),
      ratio: round(wharf.result.mibPerSec / base.result.mibPerSec),
    };
  },
};

const smallDownload: Scenario = {
  name: "upack-download-10kib-auth",
  async setup(ctx) {
    const baseline = await baselineOf(ctx);
    const file = path.join(baseline.dir, "small.upack");
    // The zip's own overhead (upack.json, headers, central directory) is about 300 bytes.
    const size = await writeUpack(file, { name: "small", version: "1.0.0" }, SMALL_FILE - 300);
    await createFeed(ctx, "bench-small");
    await uploadFile(ctx, "bench-small", file);
    ctx.log(`seeded a ${size}-byte package`);
  },
  async run(ctx) {
    const baseline = await baselineOf(ctx);
    const size = fs.statSync(path.join(baseline.dir, "small.upack")).size;
    // A Feed key, as a CI job would use: authentication and the feed permission check both run.
    const key = await createFeedKey(ctx, "bench-small");
    const headers = { "X-ApiKey": key };
    const wharfUrl = `${ctx.url}/upack/bench-small/download/small/1.0.0`;
    const fileUrl = `${baseline.url}/file/small.upack`;
    const memoryUrl = `${baseline.url}/memory/small.upack`;
    await expectBody(wharfUrl, headers, size);
    await expectBody(fileUrl, {}, size);
    await expectBody(memoryUrl, {}, size);
    // Server CPU per request and the load generator's own CPU use tell whether the server or
    // the client was the limit. wrk (bench/wrk.ts) when installed: autocannon tops out first.
    const client = wrkAvailable() ? "wrk" : "autocannon";
    if (client === "autocannon")
      ctx.log("wrk is not installed (apt-get install wrk): autocannon may be the limit here");
    // Warm-up runs before the CPU counters are read, so that they cover the measured requests only.
    const load = async (url: string, headers: Record<string, string>, seconds: number) => {
      const loadOptions = { connections: 64, url, headers };
      if (client === "wrk") {
        const result = await runWrkOnce(loadOptions, seconds);
        return { result, clientCpuSec: result.clientCpuSec };
      }
      const usage = process.cpuUsage();
      const result = await runLoad({ ...loadOptions, duration: seconds });
      const used = process.cpuUsage(usage);
      return { result, clientCpuSec: (used.user + used.system) / 1e6 };
    };
    const measure = async (pid: number, url: string, headers: Record<string, string> = {}) => {
      if (ctx.warmup > 0) await load(url, headers, ctx.warmup);
      const { result: run, cpuSec } = await withCpu(pid, () => load(url, headers, ctx.duration));
      return side(run.result, {
        serverCpuMicrosPerRequest: cpuSec === undefined ? null : round((cpuSec * 1e6) / run.result.requests, 1),
        clientCpuShare: run.clientCpuSec === undefined ? null : round(run.clientCpuSec / run.result.seconds),
      });
    };
    ctx.log(`${smallDownload.name}: Wharf, ${ctx.duration} s with 64 connections`);
    const wharf = await measure(ctx.serverPid, wharfUrl, headers);
    ctx.log(`${smallDownload.name}: baseline (file), ${ctx.duration} s with 64 connections`);
    const file = await measure(baseline.pid, fileUrl);
    ctx.log(`${smallDownload.name}: baseline (memory), ${ctx.duration} s with 64 connections`);
    const memory = await measure(baseline.pid, memoryUrl);
    const efficiency =
      wharf.serverCpuMicrosPerRequest && file.serverCpuMicrosPerRequest
        ? round(file.serverCpuMicrosPerRequest / wharf.serverCpuMicrosPerRequest)
        : null;
    return {
      fileBytes: size,
      connections: 64,
      client,
      wharf,
      baseline: file,
      baselineFromMemory: memory,
      ratio: round(wharf.requestsPerSec / file.requestsPerSec),
      // Requests per server CPU second, Wharf over baseline: the ratio a client that is never the limit would see.
      cpuEfficiencyRatio: efficiency,
    };
  },
};

/**
 * Latency of one listing with one client: warm (the answer may come from Wharf's response cache)
 * and cold (a write from another connection precedes every sample, so nothing cached is valid).
 */
async function listingLatency(ctx: ScenarioContext, name: string, urlPath: string) {
  const url = `${ctx.url}${urlPath}`;
  const headers = { "X-ApiKey": ctx.adminKey };
  const first = await fetch(url, { headers });
  const bytes = (await first.arrayBuffer()).byteLength;
  if (first.status !== 200) throw new Error(`${urlPath} answered ${first.status}`);

  const db = new Database(path.join(ctx.dataDir, "wharf.sqlite"));
  const cold: number[] = [];
  try {
    db.pragma("busy_timeout = 10000");
    // Changes nothing a reader could see, but it is a commit by another connection all the same.
    const touch = db.prepare("UPDATE feeds SET modified_at = modified_at WHERE id = (SELECT min(id) FROM feeds)");
    for (let i = 0; i < COLD_SAMPLES; i++) {
      touch.run();
      const started = process.hrtime.bigint();
      const res = await fetch(url, { headers });
      await res.arrayBuffer();
      cold.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  } finally {
    db.close();
  }
  ctx.log(`${name}: warm, ${ctx.duration} s with 1 connection`);
  const warm = await runLoad({ url, headers, connections: 1, duration: ctx.duration, warmup: ctx.warmup });
  return {
    responseBytes: bytes,
    connections: 1,
    warm: side(warm),
    cold: {
      samples: cold.length,
      latencyP50Ms: round(percentile(cold, 50)),
      latencyP99Ms: round(percentile(cold, 99)),
    },
  };
}

const manyVersions: Scenario = {
  name: "upack-versions-10k",
  async setup(ctx) {
    await createFeed(ctx, "bench-versions");
    const versions = Array.from({ length: 10_000 }, (_, i) => `1.${Math.floor(i / 100)}.${i % 100}`);
    await seedVersions(ctx, "bench-versions", [{ name: "many", versions }]);
  },
  run: (ctx) => listingLatency(ctx, manyVersions.name, "/upack/bench-versions/versions?name=many"),
};

const widePackages: Scenario = {
  name: "upack-packages-100k",
  async setup(ctx) {
    await createFeed(ctx, "bench-wide");
    const versions = Array.from({ length: 10 }, (_, i) => `2.${i}.0`);
    const packages = Array.from({ length: 10_000 }, (_, i) => ({
      name: `pkg-${String(i).padStart(5, "0")}`,
      versions,
    }));
    await seedVersions(ctx, "bench-wide", packages);
  },
  run: (ctx) => listingLatency(ctx, widePackages.name, "/upack/bench-wide/packages"),
};

async function copyBaseline(source: string, target: string, fsync: boolean) {
  const script = path.join(HERE, "upack-upload-baseline.ts");
  const args = ["--import", "tsx", script, source, target, ...(fsync ? ["--fsync"] : [])];
  const { stdout } = await exec(process.execPath, args);
  return JSON.parse(stdout) as { ms: number; cpuSec: number };
}

/**
 * Uploads, each file in turn to Wharf and then through both baselines (interleaved, so that a
 * disk that slows down or speeds up over the run affects all three alike), after one unmeasured
 * smaller upload that warms the server up.
 */
const uploads: Scenario = {
  name: "upack-upload-100mib",
  async setup(ctx) {
    await createFeed(ctx, "bench-upload");
    await writeUpack(path.join(ctx.workDir, "upload-warmup.upack"), { name: "up", version: "0.0.1" }, 10 * MiB);
    for (let i = 1; i <= UPLOADS; i++) {
      await writeUpack(path.join(ctx.workDir, `upload-${i}.upack`), { name: "up", version: `1.0.${i}` }, LARGE_PAYLOAD);
    }
  },
  async run(ctx) {
    await uploadFile(ctx, "bench-upload", path.join(ctx.workDir, "upload-warmup.upack"));
    const files = Array.from({ length: UPLOADS }, (_, i) => path.join(ctx.workDir, `upload-${i + 1}.upack`));
    const bytes = files.reduce((sum, file) => sum + fs.statSync(file).size, 0);
    const rate = (ms: number) => round(bytes / MiB / (ms / 1000));
    const totals = { wharfMs: 0, wharfCpu: 0, fsyncMs: 0, fsyncCpu: 0, plainMs: 0 };
    for (const file of files) {
      ctx.log(`${uploads.name}: ${path.basename(file)}`);
      const wharf = await withCpu(ctx.serverPid, () => uploadFile(ctx, "bench-upload", file));
      totals.wharfMs += wharf.result;
      totals.wharfCpu += wharf.cpuSec ?? NaN;
      const synced = await copyBaseline(file, `${file}.copy`, true);
      totals.fsyncMs += synced.ms;
      totals.fsyncCpu += synced.cpuSec;
      totals.plainMs += (await copyBaseline(file, `${file}.copy`, false)).ms;
      fs.rmSync(file, { force: true });
    }
    const perGiBUploaded = (cpu: number) => round(cpu / (bytes / 1024 ** 3), 3);
    return {
      uploads: UPLOADS,
      fileMiB: round(bytes / UPLOADS / MiB),
      wharf: {
        mibPerSec: rate(totals.wharfMs),
        msPerUpload: round(totals.wharfMs / UPLOADS),
        cpuSecPerGiB: perGiBUploaded(totals.wharfCpu),
      },
      baseline: {
        mibPerSec: rate(totals.fsyncMs),
        msPerCopy: round(totals.fsyncMs / UPLOADS),
        cpuSecPerGiB: perGiBUploaded(totals.fsyncCpu),
        fsync: true,
      },
      baselineWithoutFsync: {
        mibPerSec: rate(totals.plainMs),
        msPerCopy: round(totals.plainMs / UPLOADS),
        fsync: false,
      },
      ratio: round(totals.fsyncMs / totals.wharfMs),
      ratioWithoutFsync: round(totals.plainMs / totals.wharfMs),
    };
  },
};

export const UPACK_SCENARIOS: readonly Scenario[] = [largeDownload, smallDownload, manyVersions, widePackages, uploads];
