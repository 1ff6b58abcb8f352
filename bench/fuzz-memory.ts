import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import yazl from "yazl";
import { hostileRequest, send } from "./fuzz-requests.js";
import { type BenchServer, startBenchServer } from "./server.js";

/**
 * `npx tsx bench/fuzz-memory.ts`: what hostile traffic leaves in the server's memory (issue 11
 * section 7). Starts a compiled build of src/ (or FUZZ_ENTRY, another checkout's
 * `dist/src/cli/main.js`, to compare) on a temp data dir and a free loopback port, sends
 * FUZZ_REQUESTS (default 10,000) hostile requests, FUZZ_CONCURRENCY (default 16) at a time:
 * random paths, feed and directory names, query strings, methods, odd and oversized headers,
 * wrong keys from many client addresses (X-Forwarded-For from a trusted proxy), invalid upload
 * bodies. Prints one JSON object: resident memory before, at its peak and FUZZ_SETTLE_SECONDS
 * (default 10) after, from /proc (VmRSS, VmHWM), and the statuses answered. Loopback only;
 * nothing passes or fails here.
 */

const COUNT = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = Number(process.env.FUZZ_CONCURRENCY ?? 16);
const SETTLE_SECONDS = Number(process.env.FUZZ_SETTLE_SECONDS ?? 10);
const log = (message: string) => process.stderr.write(`[fuzz] ${message}\n`);

function memoryOf(pid: number): { rssMB: number; peakMB: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, "m").exec(status)?.[1] ?? NaN);
  return { rssMB: Math.round(kib("VmRSS") / 1024), peakMB: Math.round(kib("VmHWM") / 1024) };
}

/** A feed with packages enough for listings that caches keep, and a folder of many files. */
async function setUp(server: BenchServer, adminKey: string): Promise<void> {
  const headers = { "x-apikey": adminKey };
  const post = async (path: string, body: string | Uint8Array, type: string, expected: number) => {
    const res = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { ...headers, "content-type": type },
      body: typeof body === "string" ? body : new Uint8Array(body),
    });
    if (res.status !== expected) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  await post(
    "/api/management/feeds/create",
    JSON.stringify({ name: "fuzz", feedType: "universal" }),
    "application/json",
    201,
  );
  await post(
    "/api/management/feeds/create",
    JSON.stringify({ name: "assets", feedType: "asset" }),
    "application/json",
    201,
  );
  for (let i = 0; i < 400; i++) {
    const manifest = JSON.stringify({ name: `pkg-${i}`, version: "1.0.0", description: "x".repeat(200) });
    await post(
      "/upack/fuzz/upload",
      await zipOf({ "upack.json": manifest, "package/a.txt": `file ${i}` }),
      "application/zip",
      201,
    );
  }
  const files = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`many/f${i}.txt`, `asset ${i}`]));
  await post("/endpoints/assets/import?format=zip", await zipOf(files), "application/zip", 200);
}

async function zipOf(entries: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(entries)) zip.addBuffer(Buffer.from(content), name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function main(): Promise<void> {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-fuzz-"));
  const adminKey = `fuzz-admin-${randomBytes(12).toString("hex")}`;
  const entry = process.env.FUZZ_ENTRY;
  const server = await startBenchServer({
    dataDir: path.join(scratch, "data"),
    adminKey,
    logLevel: "warn",
    ...(entry ? { entry: path.resolve(entry) } : { buildDir: path.join(scratch, "build") }),
    env: { WHARF_TRUST_PROXY: "127.0.0.1" },
    timeoutMs: 120_000,
  });
  try {
    await setUp(server, adminKey);
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    // Warm-up of ordinary requests, so that "before" is a server that has served, not a fresh one.
    for (let i = 0; i < 200; i++) await send(server.url, agent, { method: "GET", path: "/health", headers: {} });
    const before = memoryOf(server.pid);
    log(`before: ${JSON.stringify(before)}; sending ${COUNT} hostile requests`);
    const statuses = new Map<number, number>();
    let sent = 0;
    let answered = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (sent < COUNT) {
          sent += 1;
          const status = await send(server.url, agent, hostileRequest(adminKey));
          statuses.set(status, (statuses.get(status) ?? 0) + 1);
          answered += 1;
          if (answered % 2000 === 0) log(`${answered} answered, ${JSON.stringify(memoryOf(server.pid))}`);
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    const atEnd = memoryOf(server.pid);
    agent.destroy();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
    const after = memoryOf(server.pid);
    const result = {
      requests: COUNT,
      seconds: Math.round(seconds * 10) / 10,
      rssBeforeMB: before.rssMB,
      rssPeakMB: after.peakMB,
      rssAtEndMB: atEnd.rssMB,
      rssAfterMB: after.rssMB,
      settleSeconds: SETTLE_SECONDS,
      statuses: Object.fromEntries([...statuses].sort(([a], [b]) => a - b)),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await server.stop();
    await fs.rm(scratch, { recursive: true, force: true });
  }
}

await main();
