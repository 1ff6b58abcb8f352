import { CI_BADGES_SCENARIOS } from "./ci-badges-scenarios.js";
import { CONFIGURATION_SCENARIOS } from "./configuration-status.js";
import { ENDPOINTS_SCENARIOS } from "./endpoints-scenarios.js";
import { NATIVE_SOAP_SCENARIOS } from "./native-soap.js";
import { OBJECT_STORE_SCENARIOS } from "./object-store.js";
import { UPACK_SCENARIOS } from "./upack-scenarios.js";
import { createFeed } from "./upack-seed.js";

/** Named benchmark scenarios: what to request, and what data must exist first. */

export interface ScenarioContext {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** A full-control API key (WHARF_ADMIN_API_KEY of the server under benchmark). */
  readonly adminKey: string;
  readonly log: (message: string) => void;
  /** The server's process id, for its CPU time and memory (/proc/<pid>/stat and status). */
  readonly serverPid: number;
  /** The server's WHARF_DATA_DIR: seeding may write its database and blob store directly. */
  readonly dataDir: string;
  /** Scratch space of this bench run, removed at the end. */
  readonly workDir: string;
  /** Seconds measured, and of unmeasured warm-up, per load (BENCH_DURATION, BENCH_WARMUP). */
  readonly duration: number;
  readonly warmup: number;
  /** Runs `cleanUp` when the bench run ends, however it ends (helper processes, files). */
  defer(cleanUp: () => Promise<void> | void): void;
}

export interface Scenario {
  readonly name: string;
  /** Too long or disk-hungry for every run: runs only when named in full, never by default or by a `*`. */
  readonly explicitOnly?: boolean;
  /** Creates the data the scenario reads; runs once, right before the scenario. */
  setup?(ctx: ScenarioContext): Promise<void>;
  /** What autocannon repeats, for a scenario measured as one load; run.ts reports the figures. */
  request?(ctx: ScenarioContext): { method: "GET" | "POST"; path: string; headers?: Record<string, string> };
  /** For a scenario that measures itself (several loads, baselines, uploads): its figures, as reported. */
  run?(ctx: ScenarioContext): Promise<Record<string, unknown>>;
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: "health",
    request: () => ({ method: "GET", path: "/health" }),
  },
  {
    name: "feeds-list-1000",
    setup: (ctx) => seedFeeds(ctx, 1000),
    request: (ctx) => ({ method: "GET", path: "/api/management/feeds/list", headers: { "X-ApiKey": ctx.adminKey } }),
  },
  ...UPACK_SCENARIOS,
  ...ENDPOINTS_SCENARIOS,
  ...CI_BADGES_SCENARIOS,
  ...CONFIGURATION_SCENARIOS,
  ...NATIVE_SOAP_SCENARIOS,
  ...OBJECT_STORE_SCENARIOS,
];

/** Creates `count` universal feeds through the feed management API, 10 requests at a time. */
async function seedFeeds(ctx: ScenarioContext, count: number): Promise<void> {
  const started = Date.now();
  const names = Array.from({ length: count }, (_, i) => `bench-feed-${String(i + 1).padStart(4, "0")}`);
  const workers = Array.from({ length: 10 }, async () => {
    for (let name = names.pop(); name !== undefined; name = names.pop()) await createFeed(ctx, name);
  });
  await Promise.all(workers);
  ctx.log(`seeded ${count} feeds in ${Date.now() - started} ms`);
}
