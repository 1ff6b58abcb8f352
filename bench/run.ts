import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import { SCENARIOS, type Scenario, type ScenarioContext } from "./scenarios.js";
import { type BenchServer, startBenchServer } from "./server.js";
import { numberFromEnv } from "./load.js";

/**
 * `npm run bench`: starts `wharf serve` on a temp data dir and a free port on 127.0.0.1, runs each
 * named scenario with autocannon, and prints ONE JSON object of results on stdout (progress goes
 * to stderr). Benchmarks, not tests: nothing here passes or fails on speed.
 *
 * Environment: BENCH_DURATION (seconds per scenario, default 10), BENCH_CONNECTIONS (default 10),
 * BENCH_WARMUP (seconds of unmeasured load before each scenario, default 1), BENCH_SCENARIOS
 * (comma-separated names, default all), BENCH_LOG_LEVEL (server log level, default warn: the
 * per-request info lines would otherwise be part of what is measured). Names may also be given
 * as arguments (`npm run bench -- upack-download-100mib health`), and a `*` in a name matches
 * anything (`npm run bench -- 'upack-*'`); a scenario marked `explicitOnly` runs only when named in
 * full. BENCH_SERVER=build runs a compiled build of src/ (made in the run's scratch directory, as
 * `npm run build` would) instead of the sources through tsx: slower to start, but its memory is
 * what an installed server uses.
 */

interface ScenarioResult {
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  errors: number;
  non2xx: number;
  throughputMBps: number;
  requests: number;
}

const round = (value: number) => Math.round(value * 100) / 100;
const log = (message: string) => process.stderr.write(`[bench] ${message}\n`);

function load(ctx: ScenarioContext, scenario: Scenario, seconds: number, connections: number) {
  if (!scenario.request) throw new Error(`scenario ${scenario.name} has no request`);
  const { method, path: urlPath, headers } = scenario.request(ctx);
  return autocannon({
    url: `${ctx.url}${urlPath}`,
    method,
    headers: headers ?? {},
    connections,
    duration: seconds,
    title: scenario.name,
  });
}

async function runScenario(
  ctx: ScenarioContext,
  scenario: Scenario,
  options: { duration: number; warmup: number; connections: number },
): Promise<ScenarioResult | Record<string, unknown>> {
  await scenario.setup?.(ctx);
  if (scenario.run) return scenario.run(ctx);
  if (!scenario.request) throw new Error(`scenario ${scenario.name} has neither request nor run`);
  // One request first: a scenario whose endpoint is broken must not report a fast 404.
  const { method, path: urlPath, headers } = scenario.request(ctx);
  const probe = await fetch(`${ctx.url}${urlPath}`, { method, headers: headers ?? {} });
  const probeBody = await probe.text();
  if (!probe.ok) throw new Error(`${method} ${urlPath} answered ${probe.status}: ${probeBody.slice(0, 200)}`);

  if (options.warmup > 0) await load(ctx, scenario, options.warmup, options.connections);
  log(`${scenario.name}: ${options.duration} s with ${options.connections} connections`);
  const result = await load(ctx, scenario, options.duration, options.connections);
  return {
    requestsPerSec: round(result.requests.average),
    latencyP50Ms: round(result.latency.p50),
    latencyP99Ms: round(result.latency.p99),
    errors: result.errors,
    non2xx: result.non2xx,
    throughputMBps: round(result.throughput.average / 1e6),
    requests: result.requests.total,
  };
}

async function main(): Promise<number> {
  const duration = numberFromEnv("BENCH_DURATION", 10);
  const connections = Math.max(1, Math.trunc(numberFromEnv("BENCH_CONNECTIONS", 10)));
  const warmup = numberFromEnv("BENCH_WARMUP", 1);
  const fromArgs = process.argv.slice(2).flatMap((arg) => arg.split(","));
  const wanted = (fromArgs.length > 0 ? fromArgs : process.env.BENCH_SCENARIOS?.split(","))
    ?.map((name) => name.trim())
    .filter(Boolean);
  const matchers = wanted?.map((name) => ({ name, matches: nameMatcher(name) }));
  const unknown = matchers?.filter((m) => !SCENARIOS.some((scenario) => m.matches(scenario.name))) ?? [];
  if (unknown.length > 0) {
    const known = SCENARIOS.map((s) => s.name).join(", ");
    log(`unknown scenario(s): ${unknown.map((m) => m.name).join(", ")}; known: ${known}`);
    return 2;
  }
  const scenarios = SCENARIOS.filter((scenario) =>
    scenario.explicitOnly
      ? (wanted?.includes(scenario.name) ?? false)
      : (matchers?.some((m) => m.matches(scenario.name)) ?? true),
  );

  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-bench-"));
  const workDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-bench-work-"));
  let server: BenchServer | undefined;
  const deferred: Array<() => Promise<void> | void> = [];
  const cleanUp = async () => {
    for (const task of deferred.reverse()) await Promise.resolve(task()).catch(() => {});
    await server?.stop();
    await fs.rm(dataDir, { recursive: true, force: true });
    await fs.rm(workDir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanUp().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  let failed = false;
  try {
    const adminKey = `bench-${randomBytes(16).toString("hex")}`;
    const built = process.env.BENCH_SERVER === "build";
    if (built) log("compiling src/ for BENCH_SERVER=build");
    server = await startBenchServer({
      dataDir,
      adminKey,
      logLevel: process.env.BENCH_LOG_LEVEL || "warn",
      ...(built ? { buildDir: path.join(workDir, "build") } : {}),
    });
    log(`server ${server.pid} on ${server.url}, data in ${dataDir}`);
    const ctx: ScenarioContext = {
      url: server.url,
      adminKey,
      log,
      serverPid: server.pid,
      dataDir,
      workDir,
      duration,
      warmup,
      defer: (task) => void deferred.push(task),
    };
    const results: Record<string, ScenarioResult | Record<string, unknown>> = {};
    for (const scenario of scenarios) {
      try {
        results[scenario.name] = await runScenario(ctx, scenario, { duration, warmup, connections });
      } catch (error) {
        failed = true;
        const message = error instanceof Error ? error.message : String(error);
        results[scenario.name] = { error: message };
        log(`${scenario.name} failed: ${message}`);
      }
    }
    const peak = server.peakRssBytes();
    const report = {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      platform: `${process.platform}-${process.arch}`,
      durationSec: duration,
      connections,
      server: process.env.BENCH_SERVER === "build" ? "compiled build" : "sources through tsx",
      serverPeakRssMB: peak === undefined ? null : round(peak / 1024 ** 2),
      scenarios: results,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await cleanUp();
  }
  return failed ? 1 : 0;
}

/** An exact name, or a pattern where `*` stands for any run of characters. */
function nameMatcher(pattern: string): (name: string) => boolean {
  if (!pattern.includes("*")) return (name) => name === pattern;
  const source = pattern
    .split("*")
    .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
    .join(".*");
  const regex = new RegExp(`^${source}$`);
  return (name) => regex.test(name);
}

process.exitCode = await main();
