import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { cpuSeconds, type LoadOptions, type LoadResult, MiB, round } from "./load.js";

/**
 * wrk as the load generator for small responses. One autocannon process spends more CPU per
 * request than Wharf does serving a 10 KiB download, so on a 2-core machine it measures itself:
 * it tops out near 13,000 requests/s even against a Node server answering from memory, where wrk
 * (C, one thread) drives the same server past 50,000. wrk is not an npm package: install it with
 * `apt-get install wrk`. Without it, the scenarios fall back to autocannon and say so.
 * BENCH_CLIENT=autocannon forces the fallback.
 */

/** Prints wrk's totals as one JSON line: the numbers its text report rounds. */
const REPORT_SCRIPT = `
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"bytes":%d,"errors":%d,"non2xx":%d,"p50Us":%d,"p99Us":%d}\\n',
    summary.requests, summary.duration, summary.bytes, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50), latency:percentile(99)))
end
`;

let available: boolean | undefined;

/** Whether wrk is installed and not overridden by BENCH_CLIENT=autocannon. */
export function wrkAvailable(): boolean {
  if (process.env.BENCH_CLIENT === "autocannon") return false;
  if (available === undefined) {
    try {
      execFileSync("wrk", ["--version"], { stdio: "ignore" });
      available = true;
    } catch (error) {
      // `wrk --version` prints its usage and exits 1: installed all the same.
      available = (error as { status?: number }).status === 1;
    }
  }
  return available;
}

/** wrk's report, plus the CPU seconds wrk itself used (from /proc, sampled until it exits). */
export interface WrkResult extends LoadResult {
  readonly clientCpuSec: number | undefined;
}

let script: string | undefined;

/** wrk reads its script from a file: written once per bench process, and removed when it exits. */
function scriptFile(): string {
  if (script === undefined) {
    const file = path.join(os.tmpdir(), `wharf-bench-wrk-${process.pid}.lua`);
    fs.writeFileSync(file, REPORT_SCRIPT);
    process.once("exit", () => fs.rmSync(file, { force: true }));
    script = file;
  }
  return script;
}

/** A script that sends `body` with POST, then reports like REPORT_SCRIPT; removed when the bench process exits. */
function postScriptFile(body: string): string {
  const file = path.join(os.tmpdir(), `wharf-bench-wrk-${process.pid}-${randomUUID()}.lua`);
  // A Lua long bracket whose level the body cannot close.
  let level = "=";
  while (body.includes(`]${level}]`)) level += "=";
  fs.writeFileSync(file, `wrk.method = "POST"\nwrk.body = [${level}[${body}]${level}]\n${REPORT_SCRIPT}`);
  process.once("exit", () => fs.rmSync(file, { force: true }));
  return file;
}

/**
 * One wrk run of `seconds` with one thread (the other core is the server's) and `connections`
 * connections: GET, or POST of `body`.
 */
export async function runWrkOnce(
  options: Omit<LoadOptions, "duration" | "warmup"> & { readonly body?: string },
  seconds: number,
): Promise<WrkResult> {
  const method = options.method ?? "GET";
  if ((method === "POST") !== (options.body !== undefined))
    throw new Error("the wrk client sends GET, or POST with a body");
  const script = options.body === undefined ? scriptFile() : postScriptFile(options.body);
  const args = ["-t1", `-c${options.connections}`, `-d${seconds}s`, "-s", script];
  for (const [name, value] of Object.entries(options.headers ?? {})) args.push("-H", `${name}: ${value}`);
  args.push(options.url);
  const child = spawn("wrk", args, { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  let clientCpuSec: number | undefined;
  const sampler = setInterval(() => {
    if (child.pid !== undefined) clientCpuSec = cpuSeconds(child.pid) ?? clientCpuSec;
  }, 100);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearInterval(sampler);
  const line = output.split("\n").find((text) => text.startsWith("{"));
  if (code !== 0 || line === undefined) throw new Error(`wrk exited with ${code}: ${output.slice(-500)}`);
  const report = JSON.parse(line) as {
    requests: number;
    durationUs: number;
    bytes: number;
    errors: number;
    non2xx: number;
    p50Us: number;
    p99Us: number;
  };
  const elapsed = report.durationUs / 1e6;
  return {
    requests: report.requests,
    requestsPerSec: round(report.requests / elapsed),
    latencyP50Ms: round(report.p50Us / 1000),
    latencyP99Ms: round(report.p99Us / 1000),
    errors: report.errors,
    non2xx: report.non2xx,
    mibPerSec: round(report.bytes / elapsed / MiB),
    bytes: report.bytes,
    seconds: round(elapsed, 3),
    clientCpuSec,
  };
}
