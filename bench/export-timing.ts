import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startBenchServer } from "./server.js";

/**
 * How long a folder export takes (issue 12: exports stored already-compressed files instead of
 * deflating them again). Not a test and not an `npm run bench` scenario: a quick measure against a
 * real server process. Uploads a folder of FILES random files (incompressible, as packages are)
 * named `.upack`, and one of text, then times a zip and a tgz export of each, draining the answer
 * over the socket, and prints one JSON object.
 *
 *   npx tsx bench/export-timing.ts                      # a compiled build of this checkout
 *   EXPORT_ENTRY=/other/dist/src/cli/main.js npx tsx bench/export-timing.ts   # another build
 *
 * EXPORT_MIB (default 256) is the size of the folder of packages; EXPORT_TEXT_MIB (default 64) of
 * the folder of text; EXPORT_FILES (default 16) how many files each is split into.
 */
const MiB = 1024 * 1024;
const packagesMiB = Number(process.env.EXPORT_MIB ?? 256);
const textMiB = Number(process.env.EXPORT_TEXT_MIB ?? 64);
const fileCount = Number(process.env.EXPORT_FILES ?? 16);

const work = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-export-timing-"));
const adminKey = randomBytes(24).toString("hex");
const server = await startBenchServer({
  dataDir: path.join(work, "data"),
  adminKey,
  logLevel: "warn",
  ...(process.env.EXPORT_ENTRY ? { entry: process.env.EXPORT_ENTRY } : { buildDir: path.join(work, "build") }),
  timeoutMs: 120_000,
});
const headers = { "x-apikey": adminKey };

async function createDirectory(name: string): Promise<void> {
  const res = await fetch(`${server.url}/api/management/feeds/create`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ name, feedType: "asset" }),
  });
  if (res.status !== 201) throw new Error(`creating ${name}: ${res.status} ${await res.text()}`);
}

async function upload(dir: string, name: string, bytes: Buffer): Promise<void> {
  const res = await fetch(`${server.url}/endpoints/${dir}/content/${name}`, {
    method: "PUT",
    headers: { ...headers, "content-type": "application/octet-stream" },
    body: new Uint8Array(bytes),
  });
  if (res.status !== 201) throw new Error(`uploading ${name}: ${res.status} ${await res.text()}`);
}

const LINE = "2026-11-25T16:00:00Z INFO request completed in 12 ms for GET /upack/main/packages\n";

async function seed(): Promise<void> {
  await createDirectory("packages");
  for (let i = 0; i < fileCount; i++) {
    await upload("packages", `pkg-${i}.1.0.0.upack`, randomBytes(Math.floor((packagesMiB * MiB) / fileCount)));
  }
  await createDirectory("text");
  const textFile = Buffer.from(LINE.repeat(Math.ceil((textMiB * MiB) / fileCount / LINE.length)));
  for (let i = 0; i < fileCount; i++) await upload("text", `log-${i}.txt`, textFile);
}

async function timeExport(dir: string, format: string) {
  const started = performance.now();
  const res = await fetch(`${server.url}/endpoints/${dir}/export?format=${format}`, { headers });
  if (res.status !== 200 || res.body === null) throw new Error(`exporting ${dir}: ${res.status}`);
  const hash = createHash("sha256");
  let bytes = 0;
  for await (const chunk of res.body) {
    bytes += chunk.length;
    hash.update(chunk);
  }
  return { seconds: Math.round((performance.now() - started) / 10) / 100, MiB: Math.round((bytes / MiB) * 10) / 10 };
}

try {
  await seed();
  const results: Record<string, unknown> = {};
  for (const dir of ["packages", "text"]) {
    for (const format of ["zip", "tgz"]) results[`${dir}-${format}`] = await timeExport(dir, format);
  }
  console.log(JSON.stringify({ packagesMiB, textMiB, files: fileCount, results }, null, 2));
} finally {
  await server.stop();
  await fs.rm(work, { recursive: true, force: true });
}
