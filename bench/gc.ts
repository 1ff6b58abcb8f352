import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { monitorEventLoopDelay, PerformanceObserver, performance } from "node:perf_hooks";
import { buildApp } from "../src/app.js";
import { bootstrapAdminKey } from "../src/areas/security/bootstrap.js";
import { loadConfig } from "../src/config.js";
import type { Clock } from "../src/domain/clock.js";
import { openDatabase } from "../src/storage/database.js";
import { createFileBlobStore } from "../src/storage/file-blob-store.js";
import { GC_GRACE_MS } from "../src/storage/garbage-collector.js";

/**
 * Blob garbage collection over a large store (issue 15 section 6): GC_BLOBS blobs (default
 * 100,000) of which GC_GARBAGE_PERCENT (default 10) no row references, written straight into the
 * file store's layout with asset-file rows for the rest. Times the marking collection and the one
 * that deletes (after the grace period, on an injected clock), while uploads of small asset files
 * run beside them through the real app. Each phase (no collection for GC_IDLE_MS, default 10 s;
 * the marking collection; the deleting one) reports the uploads' latency (median, p99, max, how
 * many took over 50 ms), the longest event-loop stall, the longest V8 garbage-collection pause in
 * it, and the slowest fsync of a probe writing beside it (a 1 KiB file every 20 ms, in the data
 * directory): what an upload waits for that is not the collector's work on the event loop, since
 * every upload fsyncs its blob, its directory and (SQLite synchronous=FULL) its commit.
 * Not a test: one JSON object on stdout.
 *
 *   npx tsx bench/gc.ts
 */
const total = Number(process.env.GC_BLOBS ?? 100_000);
const garbagePercent = Number(process.env.GC_GARBAGE_PERCENT ?? 10);
const garbage = Math.round((total * garbagePercent) / 100);
const idleMs = Number(process.env.GC_IDLE_MS ?? 10_000);
const log = (line: string) => process.stderr.write(`${line}\n`);

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-gc-bench-"));
let now = Date.parse("2030-01-01T00:00:00.000Z");
const clock: Clock = { now: () => new Date(now) };
const adminKey = randomBytes(24).toString("hex");
const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", WHARF_GC_INTERVAL_HOURS: "0" });
const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
bootstrapAdminKey(db, dataDir, adminKey, clock);
const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), clock, logger: false });
await app.ready();
const headers = { "x-apikey": adminKey };
let uploadNumber = 0;

try {
  for (const name of ["seeded", "uploads"]) {
    const res = await app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers,
      payload: { name, feedType: "asset" },
    });
    if (res.statusCode !== 201) throw new Error(`creating ${name}: ${res.statusCode} ${res.body}`);
  }
  await seed();
  // The seed's 100,000 files would otherwise be written back by the kernel some 30 s later, in the
  // middle of a measured phase, and every fsync there would wait for them.
  execFileSync("sync");

  const withoutGc = await uploadsWhile(async () => new Promise((resolve) => setTimeout(resolve, idleMs)));
  const marking = await uploadsWhile(() => collect());
  now += GC_GRACE_MS;
  const deleting = await uploadsWhile(() => collect());
  process.stdout.write(`${JSON.stringify({ blobs: total, garbage, withoutGc, marking, deleting }, null, 2)}\n`);
} finally {
  await app.close();
  db.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}

/** Blob files written as the file store lays them out; rows in one transaction. */
async function seed() {
  const started = performance.now();
  const feedId = (db.prepare("SELECT id FROM feeds WHERE name = 'seeded'").get() as { id: number }).id;
  const insert = db.prepare(
    `INSERT INTO asset_items (feed_id, path, path_key, parent_key, is_folder, blob_sha256, size, md5, sha1, sha512,
       created_at, modified_at) VALUES (?, ?, ?, '', 0, ?, ?, 'x', 'x', 'x', ?, ?)`,
  );
  const rows: [string, number][] = [];
  const files: [string, Buffer][] = [];
  for (let i = 0; i < total; i++) {
    const bytes = randomBytes(64);
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    files.push([sha256, bytes]);
    if (i >= garbage) rows.push([sha256, bytes.length]);
  }
  const at = clock.now().toISOString();
  db.transaction(() => {
    rows.forEach(([sha256, size], i) => insert.run(feedId, `f${i}`, `f${i}`, sha256, size, at, at));
  })();
  const blobsDir = path.join(dataDir, "blobs");
  for (let start = 0; start < files.length; start += 256) {
    await Promise.all(
      files.slice(start, start + 256).map(async ([sha256, bytes]) => {
        const dir = path.join(blobsDir, sha256.slice(0, 2), sha256.slice(2, 4));
        await fs.mkdir(dir, { recursive: true });
        await fs.writeFile(path.join(dir, sha256), bytes);
      }),
    );
  }
  log(`seeded ${total} blobs (${garbage} garbage) in ${Math.round(performance.now() - started)} ms`);
}

async function collect() {
  const res = await app.inject({ method: "POST", url: "/api/storage/gc?dryRun=false", headers });
  if (res.statusCode !== 200) throw new Error(`gc: ${res.statusCode} ${res.body}`);
  const { examined, unreferenced, deleted, bytesFreed, durationMs } = res.json() as Record<string, number>;
  log(`gc: examined ${examined}, deleted ${deleted} in ${durationMs} ms`);
  return { examined, unreferenced, deleted, bytesFreed, durationMs };
}

/**
 * Runs `work` while two uploaders send small asset files back to back; their latencies, the loop's
 * longest stall, V8's longest pause and the probe's slowest fsync.
 */
async function uploadsWhile<T>(work: () => Promise<T>) {
  const latencies: number[] = [];
  let stop = false;
  const v8Pauses: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) v8Pauses.push(entry.duration);
  });
  observer.observe({ entryTypes: ["gc"] });
  const fsyncs: number[] = [];
  const probe = async () => {
    const file = path.join(dataDir, "fsync-probe");
    while (!stop) {
      const handle = await fs.open(file, "w");
      await handle.write(randomBytes(1024));
      const started = performance.now();
      await handle.sync();
      fsyncs.push(performance.now() - started);
      await handle.close();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  const uploader = async () => {
    while (!stop) {
      const body = randomBytes(1024);
      const started = performance.now();
      const res = await app.inject({
        method: "POST",
        url: `/endpoints/uploads/content/u${uploadNumber++}.bin`,
        headers,
        payload: body,
      });
      if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
      latencies.push(performance.now() - started);
    }
  };
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  const started = performance.now();
  const loadBefore = os.loadavg()[0] ?? NaN;
  const running = [uploader(), uploader(), probe()];
  const result = await work();
  const durationMs = Math.round(performance.now() - started);
  stop = true;
  await Promise.all(running);
  delay.disable();
  observer.disconnect();
  latencies.sort((a, b) => a - b);
  const pick = (q: number) => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0);
  return {
    ...(result === undefined ? { durationMs } : { collection: result }),
    uploads: {
      count: latencies.length,
      p50Ms: pick(0.5),
      p99Ms: pick(0.99),
      maxMs: pick(1),
      over50Ms: latencies.filter((ms) => ms > 50).length,
    },
    longestEventLoopStallMs: round(delay.max / 1e6),
    longestV8GcPauseMs: round(Math.max(0, ...v8Pauses)),
    slowestProbeFsyncMs: round(Math.max(0, ...fsyncs)),
    // Other work on this 2-core machine (tests, builds) stretches every figure: how busy it was.
    loadAverage: { before: round(loadBefore), after: round(os.loadavg()[0] ?? NaN) },
  };
}

function round(ms: number) {
  return Math.round(ms * 10) / 10;
}
