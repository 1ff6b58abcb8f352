import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import autocannon from "autocannon";

/** One autocannon load against one URL, reduced to the figures the bench reports. */
export interface LoadOptions {
  readonly url: string;
  readonly method?: "GET" | "POST";
  readonly headers?: Record<string, string>;
  readonly connections: number;
  /** Seconds measured. */
  readonly duration: number;
  /** Seconds of unmeasured load first (JIT, caches, keep-alive sockets). */
  readonly warmup?: number;
  readonly title?: string;
}

export interface LoadResult {
  readonly requests: number;
  readonly requestsPerSec: number;
  readonly latencyP50Ms: number;
  readonly latencyP99Ms: number;
  readonly errors: number;
  readonly non2xx: number;
  /** Response bytes received (headers included) per second, in MiB (2^20 bytes). */
  readonly mibPerSec: number;
  readonly bytes: number;
  readonly seconds: number;
}

export const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
export const MiB = 1024 ** 2;

/** A BENCH_* setting as a non-negative number; `fallback` when unset or empty. */
export function numberFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a non-negative number, not '${raw}'`);
  return value;
}

function once(options: LoadOptions, seconds: number) {
  return autocannon({
    url: options.url,
    method: options.method ?? "GET",
    headers: options.headers ?? {},
    connections: options.connections,
    duration: seconds,
    title: options.title,
  });
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  if ((options.warmup ?? 0) > 0) await once(options, options.warmup ?? 0);
  const result = await once(options, options.duration);
  // Totals over the real duration: per-second averages lose the partial last second.
  const seconds = result.duration > 0 ? result.duration : options.duration;
  return {
    requests: result.requests.total,
    requestsPerSec: round(result.requests.total / seconds),
    latencyP50Ms: round(result.latency.p50),
    latencyP99Ms: round(result.latency.p99),
    errors: result.errors,
    non2xx: result.non2xx,
    mibPerSec: round(result.throughput.total / seconds / MiB),
    bytes: result.throughput.total,
    seconds: round(seconds, 3),
  };
}

let clockTicks: number | undefined;

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ, almost always 100). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds a process has used so far (Linux), or undefined without /proc. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may hold spaces and parentheses: fields are counted after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // utime and stime are fields 14 and 15 of stat(5), i.e. 12th and 13th after the name.
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

/** VmHWM (peak resident set) and VmRSS of a process in MB (2^20 bytes, as run.ts reports), or undefined without /proc. */
export function memoryOf(pid: number): { peakRssMB: number; rssMB: number } | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, "m").exec(status)?.[1] ?? NaN);
    const peak = kib("VmHWM");
    const rss = kib("VmRSS");
    if (!Number.isFinite(peak) || !Number.isFinite(rss)) return undefined;
    return { peakRssMB: round((peak * 1024) / MiB, 1), rssMB: round((rss * 1024) / MiB, 1) };
  } catch {
    return undefined;
  }
}

/** p-th percentile (0-100) of samples, nearest rank. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] as number;
}

/**
 * Large bodies: `connections` clients each download `url` over and over for `duration` seconds,
 * discarding the bytes. Bytes are counted as they arrive, so a response still in flight when time
 * is up counts for what it delivered (autocannon only counts whole responses, which at 100 MiB
 * each makes a short run report nothing).
 */
export async function runDownloads(options: LoadOptions): Promise<LoadResult> {
  if ((options.warmup ?? 0) > 0) await drain(options, options.warmup ?? 0);
  return drain(options, options.duration);
}

async function drain(options: LoadOptions, seconds: number): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let bytes = 0;
  let requests = 0;
  let errors = 0;
  let non2xx = 0;
  const latencies: number[] = [];
  const open = new Set<http.ClientRequest>();

  const one = () =>
    new Promise<void>((resolve) => {
      const sent = performance.now();
      const request = http.get(options.url, { agent, headers: options.headers ?? {} }, (res) => {
        if ((res.statusCode ?? 0) < 200 || (res.statusCode ?? 0) > 299) non2xx++;
        res.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
        });
        res.on("end", () => {
          requests++;
          latencies.push(performance.now() - sent);
          resolve();
        });
        res.on("error", () => resolve());
        res.on("aborted", () => resolve());
      });
      open.add(request);
      request.on("close", () => {
        open.delete(request);
        resolve();
      });
      request.on("error", () => {
        if (performance.now() < deadline) errors++;
        resolve();
      });
    });

  const timer = setTimeout(() => {
    for (const request of open) request.destroy();
  }, seconds * 1000);
  await Promise.all(
    Array.from({ length: options.connections }, async () => {
      while (performance.now() < deadline) await one();
    }),
  );
  clearTimeout(timer);
  agent.destroy();
  const elapsed = (performance.now() - started) / 1000;
  return {
    requests,
    requestsPerSec: round(requests / elapsed),
    latencyP50Ms: round(percentile(latencies, 50)),
    latencyP99Ms: round(percentile(latencies, 99)),
    errors,
    non2xx,
    mibPerSec: round(bytes / elapsed / MiB),
    bytes,
    seconds: round(elapsed, 3),
  };
}

/** The figures a load reports, with the server's CPU per request from its CPU seconds before and after. */
export function loadFigures(result: LoadResult, cpuBefore: number | undefined, cpuAfter: number | undefined) {
  return {
    requestsPerSec: result.requestsPerSec,
    latencyP50Ms: result.latencyP50Ms,
    latencyP99Ms: result.latencyP99Ms,
    requests: result.requests,
    errors: result.errors,
    non2xx: result.non2xx,
    serverCpuMicrosPerRequest:
      cpuBefore === undefined || cpuAfter === undefined || result.requests === 0
        ? null
        : round(((cpuAfter - cpuBefore) * 1e6) / result.requests, 1),
  };
}
