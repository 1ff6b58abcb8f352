import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BlobServiceClient } from "@azure/storage-blob";
import pg from "pg";
import { startAzurite } from "../test/helpers/azurite.js";
import { startPostgres } from "../test/helpers/postgres.js";
import { cpuSeconds, type LoadResult, MiB, numberFromEnv, percentile, round, runLoad } from "./load.js";
import type { ScenarioContext } from "./scenarios.js";
import { type BenchServer, startBenchServer } from "./server.js";
import { createFeed, createFeedKey, uploadFile, writeUpack } from "./upack-seed.js";

/**
 * Cluster mode's figures (issue 18, docs/cluster-mode.md "What is left" 5), each beside its
 * baseline in the same run:
 *
 * 1. 10 KiB downloads through a round-robin TCP load balancer in front of two cluster nodes,
 *    against the same balancer in front of one of them (same nodes, same PostgreSQL, same Azurite
 *    container, same package: the node count is the only difference). autocannon, as bench/run.ts.
 * 2. Uploads (small ~10 KiB packages, then 1 MiB ones, a few concurrent clients) to one node on
 *    PostgreSQL (cluster mode) against one node on SQLite, both with the same Azurite server as
 *    their default package store (a container each): the database is the only difference. For
 *    completeness, a SQLite node on the disk store (the default one-machine setup) too. Rounds
 *    alternate the order of the targets and the medians are reported: the machine is noisy.
 *
 * Every `wharf serve` is the same compiled build of src/ (made once in the run's scratch
 * directory), with log level warn. PostgreSQL is test/helpers/postgres.ts's private server (fsync
 * and synchronous_commit off, as in the tests: a real server's COMMIT would wait for its disk),
 * Azurite test/helpers/azurite.ts's. Everything runs on this one machine, so the nodes, the
 * balancer, the load generator, PostgreSQL and Azurite share its cores: two nodes can only scale
 * as far as there is idle CPU left (see `cpus` in the output). Not a test: nothing passes or fails
 * on speed. ONE JSON object on stdout, progress on stderr.
 *
 *   npx tsx bench/cluster.ts
 *
 * Environment: BENCH_DURATION (seconds per download load, default 10), BENCH_CONNECTIONS (default
 * 10), BENCH_WARMUP (seconds of unmeasured load before each, default 1), BENCH_DOWNLOAD_ROUNDS
 * (default 2: two/one, then one/two), BENCH_UPLOAD_ROUNDS (default 3), BENCH_UPLOAD_SMALL
 * (packages per round, default 200), BENCH_UPLOAD_LARGE (default 20), BENCH_UPLOAD_CONCURRENCY
 * (default 4), BENCH_LOG_LEVEL (the nodes' log level, default warn).
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
/** The zip's own overhead (upack.json, headers, central directory) is about 300 bytes: files of ~10 KiB. */
const SMALL_PAYLOAD = 10 * 1024 - 300;
const LARGE_PAYLOAD = MiB;
const START_TIMEOUT_MS = 60_000;

const countFromEnv = (name: string, fallback: number) => Math.max(1, Math.trunc(numberFromEnv(name, fallback)));

const duration = numberFromEnv("BENCH_DURATION", 10);
const connections = countFromEnv("BENCH_CONNECTIONS", 10);
const warmup = numberFromEnv("BENCH_WARMUP", 1);
const downloadRounds = countFromEnv("BENCH_DOWNLOAD_ROUNDS", 2);
const uploadRounds = countFromEnv("BENCH_UPLOAD_ROUNDS", 3);
const smallCount = countFromEnv("BENCH_UPLOAD_SMALL", 200);
const largeCount = countFromEnv("BENCH_UPLOAD_LARGE", 20);
const uploadConcurrency = countFromEnv("BENCH_UPLOAD_CONCURRENCY", 4);
const logLevel = process.env.BENCH_LOG_LEVEL || "warn";

const log = (message: string) => process.stderr.write(`[bench cluster] ${message}\n`);
const median = (values: readonly number[]) => round(percentile(values, 50));
const ratio = (a: number, b: number) => (b === 0 ? null : round(a / b));

// ---------------------------------------------------------------------------------------------
// A bench tool, not part of Wharf: the smallest round-robin TCP load balancer. Each accepted
// client connection is piped, bytes both ways, to the next backend in turn (layer 4, like HAProxy
// in `mode tcp`): it never parses HTTP, so a keep-alive connection stays on the backend it got.
// It runs as its own Node process (its event loop must not share autocannon's), prints its port
// on stdout, and on SIGTERM prints how many connections each backend got, then exits.
// Arguments: the backends' ports on 127.0.0.1.
// ---------------------------------------------------------------------------------------------
const BALANCER_SOURCE = `
const net = require("node:net");
const backends = process.argv.slice(1).map(Number);
const accepted = backends.map(() => 0);
let next = 0;
const server = net.createServer((client) => {
  const i = next++ % backends.length;
  accepted[i]++;
  const upstream = net.connect(backends[i], "127.0.0.1");
  client.setNoDelay(true);
  upstream.setNoDelay(true);
  const close = () => { client.destroy(); upstream.destroy(); };
  client.on("error", close).on("close", close);
  upstream.on("error", close).on("close", close);
  client.pipe(upstream).pipe(client);
});
server.listen(0, "127.0.0.1", () => process.stdout.write(server.address().port + "\\n"));
process.on("SIGTERM", () => { process.stdout.write(JSON.stringify(accepted) + "\\n"); process.exit(0); });
`;

interface Balancer {
  readonly url: string;
  readonly pid: number;
  /** Stops it; the connections each backend got, in the order given. */
  stop(): Promise<number[] | undefined>;
}

async function startBalancer(backends: readonly BenchServer[]): Promise<Balancer> {
  const ports = backends.map((backend) => new URL(backend.url).port);
  const child: ChildProcess = spawn(process.execPath, ["-e", BALANCER_SOURCE, ...ports], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout?.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const deadline = Date.now() + 10_000;
  while (!out.includes("\n")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`the load balancer did not start (exit code ${child.exitCode})`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const port = Number(out.split("\n")[0]);
  let stopped: Promise<number[] | undefined> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid ?? -1,
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
        await exited;
        clearTimeout(timer);
        const counts = out.split("\n")[1];
        try {
          return counts ? (JSON.parse(counts) as number[]) : undefined;
        } catch {
          return undefined;
        }
      })();
      return stopped;
    },
  };
}

/** The context bench/upack-seed.ts's helpers take, for one server. */
function contextOf(server: BenchServer, adminKey: string, dataDir: string, workDir: string): ScenarioContext {
  return {
    url: server.url,
    adminKey,
    log,
    serverPid: server.pid,
    dataDir,
    workDir,
    duration,
    warmup,
    defer: () => {
      throw new Error("not used by this bench");
    },
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

const cpuOf = (pids: readonly number[]) => {
  const each = pids.map((pid) => cpuSeconds(pid));
  return each.some((value) => value === undefined) ? undefined : each.reduce<number>((a, b) => a + (b ?? 0), 0);
};
const microsPerRequest = (before: number | undefined, after: number | undefined, requests: number) =>
  before === undefined || after === undefined || requests === 0 ? null : round(((after - before) * 1e6) / requests, 1);

interface DownloadRun {
  readonly load: LoadResult;
  readonly nodeCpuMicrosPerRequest: number | null;
  readonly balancerCpuMicrosPerRequest: number | null;
}

async function measureDownloads(
  balancer: Balancer,
  nodes: readonly BenchServer[],
  urlPath: string,
  headers: Record<string, string>,
): Promise<DownloadRun> {
  const options = { url: `${balancer.url}${urlPath}`, headers, connections };
  // Warm-up first, so that the CPU counters cover the measured requests only.
  if (warmup > 0) await runLoad({ ...options, duration: warmup });
  const nodesBefore = cpuOf(nodes.map((node) => node.pid));
  const balancerBefore = cpuSeconds(balancer.pid);
  const load = await runLoad({ ...options, duration });
  return {
    load,
    nodeCpuMicrosPerRequest: microsPerRequest(nodesBefore, cpuOf(nodes.map((node) => node.pid)), load.requests),
    balancerCpuMicrosPerRequest: microsPerRequest(balancerBefore, cpuSeconds(balancer.pid), load.requests),
  };
}

/** Medians over the rounds of one side (errors and non-2xx summed), and each round's requests/s. */
function downloadSide(runs: readonly DownloadRun[]) {
  const nullableMedian = (values: ReadonlyArray<number | null>) =>
    values.some((value) => value === null) ? null : median(values as number[]);
  return {
    requestsPerSec: median(runs.map((run) => run.load.requestsPerSec)),
    latencyP50Ms: median(runs.map((run) => run.load.latencyP50Ms)),
    latencyP99Ms: median(runs.map((run) => run.load.latencyP99Ms)),
    errors: runs.reduce((sum, run) => sum + run.load.errors, 0),
    non2xx: runs.reduce((sum, run) => sum + run.load.non2xx, 0),
    requests: runs.reduce((sum, run) => sum + run.load.requests, 0),
    mibPerSec: median(runs.map((run) => run.load.mibPerSec)),
    nodeCpuMicrosPerRequest: nullableMedian(runs.map((run) => run.nodeCpuMicrosPerRequest)),
    balancerCpuMicrosPerRequest: nullableMedian(runs.map((run) => run.balancerCpuMicrosPerRequest)),
    requestsPerSecByRound: runs.map((run) => run.load.requestsPerSec),
  };
}

interface UploadTarget {
  readonly name: "sqliteAzure" | "postgresAzure" | "sqliteDisk";
  readonly ctx: ScenarioContext;
}

interface UploadPhase {
  readonly uploads: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly latenciesMs: number[];
  readonly errors: number;
  readonly firstError?: string;
  readonly serverCpuSec: number | undefined;
}

/** Writes `count` fresh packages (random payloads: no blob is ever already in a store) into `dir`. */
async function writePackages(dir: string, prefix: string, count: number, payload: number): Promise<string[]> {
  await fs.mkdir(dir, { recursive: true });
  const files = Array.from({ length: count }, (_, i) => path.join(dir, `${prefix}-${i}.upack`));
  // A few at a time: each write ends with an fsync.
  const queue = files.map((file, i) => ({ file, i }));
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
        await writeUpack(item.file, { name: `${prefix}-${item.i}`, version: "1.0.0" }, payload);
      }
    }),
  );
  return files;
}

/** Uploads `files` to `feed` with `uploadConcurrency` clients; wall time from the first request to the last answer. */
async function uploadAll(ctx: ScenarioContext, feed: string, files: readonly string[]): Promise<UploadPhase> {
  let bytes = 0;
  for (const file of files) bytes += (await fs.stat(file)).size;
  const queue = [...files];
  const latenciesMs: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const cpuBefore = cpuSeconds(ctx.serverPid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: uploadConcurrency }, async () => {
      for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
        try {
          latenciesMs.push(await uploadFile(ctx, feed, file));
        } catch (error) {
          errors++;
          firstError ??= error instanceof Error ? error.message : String(error);
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const cpuAfter = cpuSeconds(ctx.serverPid);
  return {
    uploads: latenciesMs.length,
    bytes,
    seconds,
    latenciesMs,
    errors,
    ...(firstError === undefined ? {} : { firstError }),
    serverCpuSec: cpuBefore === undefined || cpuAfter === undefined ? undefined : cpuAfter - cpuBefore,
  };
}

/** Medians over the rounds of one target's phase; errors summed. */
function uploadSide(phases: readonly UploadPhase[]) {
  const firstError = phases.find((phase) => phase.firstError !== undefined)?.firstError;
  const cpu = phases.map((phase) =>
    phase.serverCpuSec === undefined || phase.uploads === 0 ? undefined : (phase.serverCpuSec * 1000) / phase.uploads,
  );
  return {
    uploadsPerSec: median(phases.map((phase) => phase.uploads / phase.seconds)),
    mibPerSec: median(phases.map((phase) => phase.bytes / MiB / phase.seconds)),
    latencyP50Ms: median(phases.map((phase) => percentile(phase.latenciesMs, 50))),
    latencyP99Ms: median(phases.map((phase) => percentile(phase.latenciesMs, 99))),
    serverCpuMsPerUpload: cpu.some((value) => value === undefined) ? null : median(cpu as number[]),
    uploads: phases.reduce((sum, phase) => sum + phase.uploads, 0),
    errors: phases.reduce((sum, phase) => sum + phase.errors, 0),
    ...(firstError === undefined ? {} : { firstError }),
    uploadsPerSecByRound: phases.map((phase) => round(phase.uploads / phase.seconds)),
  };
}

async function main(): Promise<void> {
  // test/helpers/azurite.ts finds its binary relative to the working directory.
  process.chdir(ROOT);
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-bench-cluster-"));
  const workDir = path.join(scratch, "work");
  await fs.mkdir(workDir);
  const cleanUps: Array<() => Promise<unknown>> = [];
  let cleaning: Promise<void> | undefined;
  const cleanUp = () =>
    (cleaning ??= (async () => {
      for (const task of cleanUps.reverse()) await task().catch((error) => log(`clean-up: ${String(error)}`));
      await fs.rm(scratch, { recursive: true, force: true });
    })());
  const onSignal = () => void cleanUp().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    log("starting PostgreSQL and Azurite");
    // Both awaited to the end, so that whichever started is stopped even when the other failed.
    const [postgresStart, azuriteStart] = await Promise.allSettled([startPostgres(), startAzurite()]);
    for (const start of [postgresStart, azuriteStart]) {
      if (start.status === "fulfilled") cleanUps.push(() => start.value.stop());
    }
    if (postgresStart.status === "rejected") throw postgresStart.reason;
    if (azuriteStart.status === "rejected") throw azuriteStart.reason;
    const postgres = postgresStart.value;
    const azurite = azuriteStart.value;
    const databaseUrl = await postgres.createDatabase();
    const connectionString = azurite.connectionString();
    const blobService = BlobServiceClient.fromConnectionString(connectionString);
    const azureStore = async (container: string) => {
      await blobService.getContainerClient(container).create();
      return {
        WHARF_PACKAGE_STORE: "azure",
        WHARF_AZURE_CONNECTION_STRING: connectionString,
        WHARF_AZURE_CONTAINER_NAME: container,
        WHARF_AZURE_TARGET_PATH: "packages",
      };
    };
    const clusterEnv = {
      WHARF_DATABASE_URL: databaseUrl,
      WHARF_SECRET_KEY: randomBytes(32).toString("base64"),
      ...(await azureStore("wharf-bench-cluster")),
    };
    const adminKey = `bench-${randomBytes(16).toString("hex")}`;

    const servers: BenchServer[] = [];
    const buildDir = path.join(scratch, "build");
    const entry = path.join(buildDir, "src/cli/main.js");
    let built = false;
    const startNode = async (name: string, env: Record<string, string>) => {
      const dataDir = path.join(scratch, `data-${name}`);
      await fs.mkdir(dataDir);
      if (!built) log("compiling src/ once for every node");
      const started = Date.now();
      const server = await startBenchServer({
        dataDir,
        adminKey,
        logLevel,
        env,
        timeoutMs: START_TIMEOUT_MS,
        ...(built ? { entry } : { buildDir }),
      });
      built = true;
      servers.push(server);
      cleanUps.push(() => server.stop());
      log(`node ${name}: pid ${server.pid} on ${server.url} (${Date.now() - started} ms to start)`);
      return { server, ctx: contextOf(server, adminKey, dataDir, workDir) };
    };

    // ---- 1. 10 KiB downloads: a balancer in front of two nodes, against the same in front of one.
    // The first node migrates the new database; the second then finds it current.
    const nodeA = await startNode("cluster-a", clusterEnv);
    const nodeB = await startNode("cluster-b", clusterEnv);
    const postgresVersion = await (async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      try {
        return (await client.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]?.v;
      } finally {
        await client.end();
      }
    })();

    const smallFile = path.join(workDir, "small.upack");
    const fileBytes = await writeUpack(smallFile, { name: "small", version: "1.0.0" }, SMALL_PAYLOAD);
    await createFeed(nodeA.ctx, "bench-small");
    await uploadFile(nodeA.ctx, "bench-small", smallFile);
    // A Feed key, as a CI job would use: authentication and the feed permission check both run.
    const feedKey = await createFeedKey(nodeA.ctx, "bench-small");
    const headers = { "X-ApiKey": feedKey };
    const downloadPath = "/upack/bench-small/download/small/1.0.0";
    // Uploaded through A, read through B: both nodes serve the same feed.
    await expectBody(`${nodeB.server.url}${downloadPath}`, headers, fileBytes);

    const two = await startBalancer([nodeA.server, nodeB.server]);
    cleanUps.push(() => two.stop());
    const one = await startBalancer([nodeA.server]);
    cleanUps.push(() => one.stop());
    await expectBody(`${two.url}${downloadPath}`, headers, fileBytes);
    await expectBody(`${one.url}${downloadPath}`, headers, fileBytes);

    const twoRuns: DownloadRun[] = [];
    const oneRuns: DownloadRun[] = [];
    for (let r = 0; r < downloadRounds; r++) {
      const sides = [
        { name: "two nodes", balancer: two, nodes: [nodeA.server, nodeB.server], runs: twoRuns },
        { name: "one node", balancer: one, nodes: [nodeA.server], runs: oneRuns },
      ];
      if (r % 2 === 1) sides.reverse();
      for (const side of sides) {
        log(`downloads round ${r + 1}/${downloadRounds}, ${side.name}: ${duration} s with ${connections} connections`);
        side.runs.push(await measureDownloads(side.balancer, side.nodes, downloadPath, headers));
        log(`  ${side.runs.at(-1)?.load.requestsPerSec} requests/s`);
      }
    }
    const twoConnections = await two.stop();
    await one.stop();
    const twoNodes = downloadSide(twoRuns);
    const oneNode = downloadSide(oneRuns);
    const downloads = {
      fileBytes,
      connections,
      durationSec: duration,
      warmupSec: warmup,
      rounds: downloadRounds,
      twoNodes: { ...twoNodes, connectionsPerNode: twoConnections ?? null },
      oneNode,
      requestsPerSecTwoOverOne: ratio(twoNodes.requestsPerSec, oneNode.requestsPerSec),
    };

    // ---- 2. Uploads: one node on PostgreSQL against one on SQLite, the same Azurite store; and SQLite on disk.
    // One cluster node from here on: B leaves (gracefully), so that the PostgreSQL side is one node.
    await nodeB.server.stop();
    const sqliteAzure = await startNode("sqlite-azure", await azureStore("wharf-bench-sqlite"));
    const sqliteDisk = await startNode("sqlite-disk", {});
    const targets: UploadTarget[] = [
      { name: "sqliteAzure", ctx: sqliteAzure.ctx },
      { name: "postgresAzure", ctx: nodeA.ctx },
      { name: "sqliteDisk", ctx: sqliteDisk.ctx },
    ];
    // Warm-up, unmeasured: a feed and a few uploads on each (JIT, connections, the store's first writes).
    const warmFiles = await writePackages(path.join(workDir, "warm"), "warm", 2 * uploadConcurrency, SMALL_PAYLOAD);
    for (const target of targets) {
      await createFeed(target.ctx, "bench-warm");
      const warm = await uploadAll(target.ctx, "bench-warm", warmFiles);
      if (warm.errors > 0) log(`warm-up on ${target.name}: ${warm.errors} failed uploads: ${warm.firstError}`);
    }
    const phases = new Map(
      targets.map((target) => [target.name, { small: [] as UploadPhase[], large: [] as UploadPhase[] }]),
    );
    for (let r = 0; r < uploadRounds; r++) {
      const order = r % 2 === 0 ? targets : [...targets].reverse();
      for (const target of order) {
        // Fresh packages for every target and round, written before the clock starts.
        const dir = path.join(workDir, `round-${r}-${target.name}`);
        const small = await writePackages(dir, "small", smallCount, SMALL_PAYLOAD);
        const large = await writePackages(dir, "large", largeCount, LARGE_PAYLOAD);
        const feed = `bench-up-${r}`;
        await createFeed(target.ctx, feed);
        const results = phases.get(target.name);
        if (results === undefined) throw new Error(`no results for ${target.name}`);
        log(`uploads round ${r + 1}/${uploadRounds}, ${target.name}: ${smallCount} small, ${largeCount} of 1 MiB`);
        const smallPhase = await uploadAll(target.ctx, feed, small);
        const largePhase = await uploadAll(target.ctx, feed, large);
        results.small.push(smallPhase);
        results.large.push(largePhase);
        log(
          `  ${round(smallPhase.uploads / smallPhase.seconds)} small uploads/s, ` +
            `${round(largePhase.bytes / MiB / largePhase.seconds)} MiB/s of 1 MiB uploads` +
            (smallPhase.errors + largePhase.errors > 0
              ? `; ${smallPhase.errors + largePhase.errors} failed: ${smallPhase.firstError ?? largePhase.firstError}`
              : ""),
        );
        await fs.rm(dir, { recursive: true, force: true });
      }
    }
    const summarize = (name: UploadTarget["name"]) => {
      const results = phases.get(name);
      if (results === undefined) throw new Error(`no results for ${name}`);
      return { small: uploadSide(results.small), large: uploadSide(results.large) };
    };
    const up = {
      sqliteAzure: summarize("sqliteAzure"),
      postgresAzure: summarize("postgresAzure"),
      sqliteDisk: summarize("sqliteDisk"),
    };
    const uploads = {
      rounds: uploadRounds,
      concurrency: uploadConcurrency,
      small: { packages: smallCount, bytesEach: fileBytes },
      large: { packages: largeCount, payloadBytes: LARGE_PAYLOAD },
      ...up,
      postgresOverSqliteSameStore: {
        smallUploadsPerSec: ratio(up.postgresAzure.small.uploadsPerSec, up.sqliteAzure.small.uploadsPerSec),
        largeMibPerSec: ratio(up.postgresAzure.large.mibPerSec, up.sqliteAzure.large.mibPerSec),
      },
      postgresAzureOverSqliteDisk: {
        smallUploadsPerSec: ratio(up.postgresAzure.small.uploadsPerSec, up.sqliteDisk.small.uploadsPerSec),
        largeMibPerSec: ratio(up.postgresAzure.large.mibPerSec, up.sqliteDisk.large.mibPerSec),
      },
    };

    const report = {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? "unknown",
      platform: `${process.platform}-${process.arch}`,
      postgres: postgresVersion ?? null,
      server: "compiled build",
      serverLogLevel: logLevel,
      downloads10KiB: downloads,
      uploads,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } finally {
    log("cleaning up");
    await cleanUp();
  }
}

await main();
