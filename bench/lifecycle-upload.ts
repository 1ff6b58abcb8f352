import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../src/app.js";
import { bootstrapAdminKey } from "../src/areas/security/bootstrap.js";
import { loadConfig } from "../src/config.js";
import { systemClock } from "../src/domain/clock.js";
import { openDatabase } from "../src/storage/database.js";
import { createFileBlobStore } from "../src/storage/file-blob-store.js";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { buildUpack } from "../test/helpers/upack-fixtures.js";

/**
 * What the audit log and a webhook cost an upload (issue 17 section 4: under 10%): 10 KiB
 * packages uploaded one after another to three apps side by side, each on its own data directory:
 * audit off (the bench-only `audit: false` seam), audit on, and audit on with one global webhook
 * delivering to a receiver on loopback, in a process of its own as a real receiver is
 * (bench/receiver-process.ts; every delivery is counted at the end). Rounds alternate between the apps so that drift (disk,
 * CPU frequency) falls on all three alike. Each upload is a real PUT through inject, its commit
 * fsynced (synchronous = FULL). Not a test: one JSON object on stdout.
 *
 *   npx tsx bench/lifecycle-upload.ts        (LIFECYCLE_UPLOADS, default 1500 per app: fewer leave the mean to a few slow fsyncs)
 */
const uploads = Number(process.env.LIFECYCLE_UPLOADS ?? 1500);
const ROUND = 20;
const log = (line: string) => process.stderr.write(`${line}\n`);

interface Subject {
  readonly name: string;
  readonly app: FastifyInstance;
  readonly key: string;
  readonly dataDir: string;
  readonly db: { close(): unknown };
  readonly times: number[];
}

const receiverProcess = spawn(
  process.execPath,
  ["--import", "tsx", path.join(import.meta.dirname, "receiver-process.ts")],
  {
    stdio: ["pipe", "pipe", "inherit"],
  },
);
const receiverLines = createInterface({ input: receiverProcess.stdout })[Symbol.asyncIterator]();
const nextLine = async () => String((await receiverLines.next()).value ?? "");
const receiver = { base: await nextLine() };
/** How many deliveries the receiver has had. */
async function received(): Promise<number> {
  receiverProcess.stdin.write("count\n");
  return Number(await nextLine());
}
const payload = randomBytes(10 * 1024 - 400);

async function subject(name: string, audit: boolean, webhook: boolean): Promise<Subject> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), `wharf-lifecycle-${name}-`));
  const key = randomBytes(24).toString("hex");
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_LOG_LEVEL: "silent",
    WHARF_GC_INTERVAL_HOURS: "0",
    WHARF_FETCH_ALLOW_PRIVATE: "true",
  });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  bootstrapAdminKey(db, dataDir, key, systemClock);
  const app = await buildApp(config, {
    db,
    blobs: createFileBlobStore(dataDir),
    logger: false,
    ...(audit ? {} : { audit: false as const }),
  });
  await app.ready();
  const headers = { "x-apikey": key };
  const feed = await app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers,
    payload: { name: "bench", feedType: "universal" },
  });
  if (feed.statusCode >= 300) throw new Error(`feed: ${feed.statusCode} ${feed.body}`);
  if (webhook) {
    const hook = await app.inject({
      method: "POST",
      url: "/api/webhooks",
      headers,
      payload: { name: "bench", url: `${receiver.base}/hook`, events: ["package.added"] },
    });
    if (hook.statusCode >= 300) throw new Error(`webhook: ${hook.statusCode} ${hook.body}`);
  }
  return { name, app, key, dataDir, db, times: [] };
}

const subjects = [
  await subject("audit-off", false, false),
  await subject("audit-on", true, false),
  await subject("audit-and-webhook", true, true),
];
// Packages built beforehand: only the upload is timed.
const packages = await Promise.all(
  Array.from({ length: uploads + ROUND }, (_, i) =>
    buildUpack({ name: "bench", version: `1.0.${i}`, files: { "data.txt": payload } }),
  ),
);

async function upload(s: Subject, index: number, timed: boolean): Promise<void> {
  const start = performance.now();
  const res = await s.app.inject({
    method: "PUT",
    url: "/upack/bench/upload",
    headers: { "x-apikey": s.key, "content-type": "application/octet-stream" },
    payload: packages[index],
  });
  if (timed) s.times.push(performance.now() - start);
  if (res.statusCode !== 201) throw new Error(`${s.name}: upload ${res.statusCode} ${res.body}`);
}

// Warm-up round, untimed.
for (const s of subjects) for (let i = 0; i < ROUND; i++) await upload(s, uploads + i, false);
for (let round = 0; round * ROUND < uploads; round++) {
  for (const s of subjects) {
    for (let i = round * ROUND; i < Math.min(uploads, (round + 1) * ROUND); i++) await upload(s, i, true);
  }
}
// Deliveries still under way finish (they are sent within milliseconds of each upload).
let delivered = await received();
for (let wait = 0; wait < 50 && delivered < uploads + ROUND; wait++) {
  await new Promise((resolve) => setTimeout(resolve, 100));
  delivered = await received();
}

const stats = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  const mean = times.reduce((a, b) => a + b, 0) / times.length;
  return { mean: +mean.toFixed(3), median: +at(0.5).toFixed(3), p90: +at(0.9).toFixed(3), p99: +at(0.99).toFixed(3) };
};
const [off, on, hooked] = subjects.map((s) => stats(s.times));
const overhead = (x: number, base: number) => `${(((x - base) / base) * 100).toFixed(1)}%`;
const result = {
  uploadsPerApp: uploads,
  packageBytes: packages[0]?.length,
  ms: { auditOff: off, auditOn: on, auditAndWebhook: hooked },
  overheadOfMedian: {
    audit: overhead(on?.median ?? 0, off?.median ?? 1),
    auditAndWebhook: overhead(hooked?.median ?? 0, off?.median ?? 1),
  },
  overheadOfMean: {
    audit: overhead(on?.mean ?? 0, off?.mean ?? 1),
    auditAndWebhook: overhead(hooked?.mean ?? 0, off?.mean ?? 1),
  },
  webhookDeliveriesReceived: delivered,
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
for (const s of subjects) {
  await s.app.close();
  s.db.close();
  await fs.rm(s.dataDir, { recursive: true, force: true });
}
receiverProcess.stdin.end();
await once(receiverProcess, "exit");
log("done");
