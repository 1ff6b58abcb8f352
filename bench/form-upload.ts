import { randomBytes } from "node:crypto";
import { createWriteStream, openAsBlob } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { startBenchServer } from "./server.js";

/**
 * Upload throughput of one file sent raw (`curl --upload-file`) and as a form (`curl -F`), to an
 * asset directory of a compiled build in its own process: the price of parsing the form. Not a
 * test; prints one JSON object. The file is read from disk as it is sent, by Node's fetch (undici).
 *
 * Usage: `node --import tsx bench/form-upload.ts [MiB=256] [runs=3]`
 */
const MIB = 1024 * 1024;
const sizeMiB = Number(process.argv[2] ?? 256);
const runs = Number(process.argv[3] ?? 3);

const scratch = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-form-bench-"));
const file = path.join(scratch, "upload.bin");
await pipeline(
  (function* () {
    for (let i = 0; i < sizeMiB; i++) yield randomBytes(MIB);
  })(),
  createWriteStream(file),
);
const adminKey = randomBytes(24).toString("hex");
const server = await startBenchServer({
  dataDir: path.join(scratch, "data"),
  adminKey,
  logLevel: "warn",
  buildDir: path.join(scratch, "build"),
});
const headers = { "x-apikey": adminKey };

try {
  const created = await fetch(`${server.url}/api/management/feeds/create`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ name: "bench", feedType: "asset" }),
  });
  if (created.status !== 201) throw new Error(`creating the directory: ${created.status} ${await created.text()}`);

  const upload = async (kind: "raw" | "form", run: number): Promise<number> => {
    const blob = await openAsBlob(file);
    const form = new FormData();
    form.append("file", blob, "upload.bin");
    const url = `${server.url}/endpoints/bench/content/${kind}-${run}.bin`;
    const started = process.hrtime.bigint();
    const res = await fetch(url, { method: "POST", headers, body: kind === "form" ? form : blob });
    const answer = await res.text();
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    if (res.status !== 201) throw new Error(`${kind} upload: ${res.status} ${answer}`);
    return ms;
  };

  const times: Record<"raw" | "form", number[]> = { raw: [], form: [] };
  await upload("raw", 0); // warm-up: the first request pays for lazy initialisation
  for (let run = 1; run <= runs; run++) {
    for (const kind of ["raw", "form"] as const) times[kind].push(await upload(kind, run));
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
  const result = Object.fromEntries(
    (["raw", "form"] as const).map((kind) => [
      kind,
      { medianMs: Math.round(median(times[kind])), mibPerSec: Math.round((sizeMiB / median(times[kind])) * 1000) },
    ]),
  );
  process.stdout.write(
    `${JSON.stringify({ sizeMiB, runs, ...result, serverPeakRssMiB: Math.round((server.peakRssBytes() ?? 0) / MIB) })}\n`,
  );
} finally {
  await server.stop();
  await fs.rm(scratch, { recursive: true, force: true });
}
