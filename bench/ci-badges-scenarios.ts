import { cpuSeconds, percentile, round, runLoad } from "./load.js";
import type { Scenario, ScenarioContext } from "./scenarios.js";
import { type BadgeSeed, createBadgeKey, seedBadgeData } from "./ci-badges-seed.js";
import { runWrkOnce, wrkAvailable } from "./wrk.js";

/**
 * CI badges (issue 6, "Proof": badge image requests/s at 64 connections with 10,000 builds in
 * the database, target p99 under 20 ms). A README badge is requested by every page view of every
 * repository that shows it, through a System key limited to the `ci-badges` scope, so the
 * measured request is exactly that: `GET /api/ci-badges/image?key=...&$ApplicationName=...&$Branch=...`.
 *
 * Several queries over the same data, each its own load: the newest build of the application on
 * `main` (the usual badge), a branch whose only build is among the application's first (the
 * selection looks past nearly all its builds), a branch that was never built (`unknown`: it looks
 * past all of them), and `$BuildNumber` of the newest build (matched by number, no variable).
 * 64 connections are part of the figure's definition, so BENCH_CONNECTIONS does not change them;
 * BENCH_DURATION and BENCH_WARMUP do. wrk is the client when installed (see wrk.ts).
 *
 * `npm run bench -- ci-badges-image-10k-builds`
 */

const BUILDS = 10_000;
const APPLICATIONS = 10;
const CONNECTIONS = 64;
const TARGET_P99_MS = 20;
/** Requests of the one-client latency sample taken on the idle server before each load. */
const ONE_CLIENT_SAMPLES = 20;
/** The application whose badges are requested: one in the middle, so ids of its builds interleave with others'. */
const APPLICATION = "bench-app-05";

let seed: BadgeSeed | undefined;

interface BadgeQuery {
  readonly name: string;
  readonly filters: Readonly<Record<string, string>>;
  /** The badge's `<title>`: a fast answer for the wrong build would be no figure at all. */
  readonly state: string;
}

function queriesOf(seeded: BadgeSeed): BadgeQuery[] {
  const newest = seeded.newest.get(APPLICATION);
  if (newest === undefined) throw new Error(`no builds were seeded for ${APPLICATION}`);
  return [
    { name: "branchNewest", filters: { ApplicationName: APPLICATION, Branch: "main" }, state: "success" },
    { name: "branchOldest", filters: { ApplicationName: APPLICATION, Branch: "hotfix/old" }, state: "success" },
    { name: "branchNeverBuilt", filters: { ApplicationName: APPLICATION, Branch: "no-such-branch" }, state: "unknown" },
    {
      name: "buildNumberNewest",
      filters: { ApplicationName: APPLICATION, BuildNumber: newest.buildNumber },
      state: "success",
    },
  ];
}

/** `$` stays literal, as README badge URLs write it; the values are encoded. */
function badgePath(key: string, filters: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(filters).map(([name, value]) => `$${name}=${encodeURIComponent(value)}`);
  return `/api/ci-badges/image?key=${encodeURIComponent(key)}&${pairs.join("&")}`;
}

async function expectBadge(url: string, state: string): Promise<void> {
  const res = await fetch(url);
  const body = await res.text();
  const title = /<title>([^<]*)<\/title>/.exec(body)?.[1];
  if (res.status !== 200 || !res.headers.get("content-type")?.startsWith("image/svg+xml") || title !== state) {
    throw new Error(`${url} answered ${res.status} (${title ?? body.slice(0, 200)}), expected the ${state} badge`);
  }
}

/** Latency of one request at a time, on an otherwise idle server: what one request costs. */
async function oneClient(url: string): Promise<{ p50: number; max: number }> {
  const samples: number[] = [];
  for (let i = 0; i < ONE_CLIENT_SAMPLES; i++) {
    const started = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    samples.push(performance.now() - started);
  }
  return { p50: round(percentile(samples, 50)), max: round(Math.max(...samples)) };
}

/**
 * Waits until the server has used less than a tenth of a CPU over a quarter of a second. A slow
 * server is still answering a finished load's requests after the client went away (each one's
 * handler already runs), and those would otherwise eat into the next measurement.
 */
async function waitUntilIdle(pid: number, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = cpuSeconds(pid);
  while (last !== undefined && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    const now = cpuSeconds(pid);
    if (now === undefined || now - last < 0.025) return;
    last = now;
  }
}

async function measure(ctx: ScenarioContext, url: string, client: "wrk" | "autocannon") {
  const idle = await oneClient(url);
  const load = (seconds: number) =>
    client === "wrk"
      ? runWrkOnce({ url, connections: CONNECTIONS }, seconds)
      : runLoad({ url, connections: CONNECTIONS, duration: seconds });
  if (ctx.warmup > 0) {
    await load(ctx.warmup);
    await waitUntilIdle(ctx.serverPid);
  }
  const before = cpuSeconds(ctx.serverPid);
  const result = await load(ctx.duration);
  const after = cpuSeconds(ctx.serverPid);
  await waitUntilIdle(ctx.serverPid);
  const cpuSec = before === undefined || after === undefined ? undefined : after - before;
  // No answer within the duration means no latency figure at all, not a latency of 0.
  const answered = result.requests > 0;
  return {
    requestsPerSec: result.requestsPerSec,
    latencyP50Ms: answered ? result.latencyP50Ms : null,
    latencyP99Ms: answered ? result.latencyP99Ms : null,
    withinTarget: answered && result.latencyP99Ms < TARGET_P99_MS,
    requests: result.requests,
    errors: result.errors,
    non2xx: result.non2xx,
    serverCpuMicrosPerRequest: cpuSec === undefined || !answered ? null : round((cpuSec * 1e6) / result.requests, 1),
    oneClientP50Ms: idle.p50,
    oneClientMaxMs: idle.max,
  };
}

const badgeImage: Scenario = {
  name: "ci-badges-image-10k-builds",
  async setup(ctx) {
    seed = await seedBadgeData(ctx, { applications: APPLICATIONS, totalBuilds: BUILDS });
  },
  async run(ctx) {
    if (seed === undefined) throw new Error("setup did not run");
    const key = await createBadgeKey(ctx);
    const client = wrkAvailable() ? "wrk" : "autocannon";
    if (client === "autocannon")
      ctx.log("wrk is not installed (apt-get install wrk): autocannon may be the limit here");
    const results: Record<string, unknown> = {};
    for (const query of queriesOf(seed)) {
      const path = badgePath(key, query.filters);
      const url = `${ctx.url}${path}`;
      await waitUntilIdle(ctx.serverPid);
      await expectBadge(url, query.state);
      ctx.log(`${badgeImage.name} ${query.name}: ${ctx.duration} s with ${CONNECTIONS} connections`);
      results[query.name] = {
        query: path.replace(encodeURIComponent(key), "<key>"),
        badge: query.state,
        ...(await measure(ctx, url, client)),
      };
    }
    return {
      builds: seed.builds,
      applications: seed.applications.length,
      branchVariables: seed.variables,
      deployments: seed.deployments,
      seedMs: seed.seedMs,
      connections: CONNECTIONS,
      client,
      targetP99Ms: TARGET_P99_MS,
      ...results,
    };
  },
};

export const CI_BADGES_SCENARIOS: readonly Scenario[] = [badgeImage];
