import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import fs from "node:fs";
import http from "node:http";
import { cpuSeconds, memoryOf, MiB, round } from "./load.js";
import type { ScenarioContext } from "./scenarios.js";

/**
 * HTTP helpers, data and measurements for the asset-directory scenarios (docs/compat.md 4.2-4.3).
 * Large files are written to disk once and streamed into Wharf from there, whole or as byte
 * ranges; nothing of a GiB-sized file is ever held in memory, on either side of the socket.
 */

/** What a multipart part or a plain upload answered, and how long it took. */
export interface Sent {
  readonly status: number;
  readonly body: string;
  readonly ms: number;
}

/** The few item JSON fields (docs/compat.md 4.1) the scenarios check. */
export interface ItemJson {
  readonly name: string;
  readonly size?: number;
  readonly sha256?: string;
}

const segments = (assetPath: string) => assetPath.split("/").map(encodeURIComponent).join("/");

/** `<url>/endpoints/<dir>/<kind>/<path>`, each path segment escaped. */
export const assetUrl = (ctx: ScenarioContext, dir: string, kind: "content" | "dir", assetPath: string) =>
  `${ctx.url}/endpoints/${encodeURIComponent(dir)}/${kind}/${segments(assetPath)}`;

export const adminHeaders = (ctx: ScenarioContext) => ({ "X-ApiKey": ctx.adminKey });

/** Creates an asset directory through the feed management API (docs/compat.md 5.1). */
export async function createAssetDirectory(ctx: ScenarioContext, name: string): Promise<void> {
  const res = await fetch(`${ctx.url}/api/management/feeds/create`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...adminHeaders(ctx) },
    body: JSON.stringify({ name, feedType: "asset" }),
  });
  const text = await res.text();
  if (res.status !== 201)
    throw new Error(`creating asset directory ${name} answered ${res.status}: ${text.slice(0, 200)}`);
}

/**
 * Writes `bytes` random bytes to `file` in 1 MiB pieces and returns their SHA-256, so that a
 * scenario can check what Wharf stored without reading the file a second time.
 */
export async function writeRandomFile(file: string, bytes: number): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  const out = fs.createWriteStream(file);
  for (let left = bytes; left > 0; left -= MiB) {
    const piece = randomBytes(Math.min(left, MiB));
    hash.update(piece);
    if (!out.write(piece)) await once(out, "drain");
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
  // Written back now, not while a later measurement runs (a GiB of dirty pages would compete with it).
  const fd = fs.openSync(file, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { size: bytes, sha256: hash.digest("hex") };
}

/**
 * One request whose body is `file` (or bytes `start`..`end` of it, inclusive), streamed from disk
 * with an exact Content-Length; no `file` sends an empty body. Resolves once the answer has arrived.
 */
export function sendFile(
  url: string,
  options: { headers: Record<string, string>; file?: string; start?: number; end?: number },
): Promise<Sent> {
  const { file, start = 0 } = options;
  const end = file === undefined ? -1 : (options.end ?? fs.statSync(file).size - 1);
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: "POST",
        headers: {
          "Content-Type": "application/octet-stream",
          "Content-Length": String(end - start + 1),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString("utf8"),
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          }),
        );
      },
    );
    request.on("error", reject);
    if (file === undefined || end < start) return void request.end();
    fs.createReadStream(file, { start, end, highWaterMark: MiB })
      .on("error", (error) => request.destroy(error))
      .pipe(request);
  });
}

/** A plain `POST content/<path>` of a whole file (create or replace); the item JSON of the 201. */
export async function uploadAsset(ctx: ScenarioContext, dir: string, assetPath: string, file: string) {
  const sent = await sendFile(assetUrl(ctx, dir, "content", assetPath), { headers: adminHeaders(ctx), file });
  if (sent.status !== 201) throw new Error(`POST ${assetPath} answered ${sent.status}: ${sent.body.slice(0, 300)}`);
  return { ms: sent.ms, item: JSON.parse(sent.body) as ItemJson };
}

/**
 * A multipart upload as pgutil sends it (docs/compat.md 4.2): parts of `partSize` bytes, strictly one
 * after the other, each with `offset = index * partSize` and `partSize` = that part's own length
 * (the last one shorter), then `multipart=complete` with an empty body.
 */
export async function uploadMultipart(
  ctx: ScenarioContext,
  dir: string,
  assetPath: string,
  file: string,
  partSize: number,
): Promise<{ partsMs: number; completeMs: number; parts: number; item: ItemJson }> {
  const totalSize = fs.statSync(file).size;
  const totalParts = Math.max(1, Math.ceil(totalSize / partSize));
  const id = randomBytes(16).toString("hex");
  const base = assetUrl(ctx, dir, "content", assetPath);
  let partsMs = 0;
  for (let index = 0; index < totalParts; index++) {
    const offset = index * partSize;
    const length = Math.min(partSize, totalSize - offset);
    const query = new URLSearchParams({
      multipart: "upload",
      id,
      index: String(index),
      offset: String(offset),
      totalSize: String(totalSize),
      partSize: String(length),
      totalParts: String(totalParts),
    });
    const sent = await sendFile(`${base}?${query}`, {
      headers: adminHeaders(ctx),
      file,
      start: offset,
      end: offset + length - 1,
    });
    if (sent.status !== 200) throw new Error(`part ${index} answered ${sent.status}: ${sent.body.slice(0, 300)}`);
    partsMs += sent.ms;
  }
  const done = await sendFile(`${base}?multipart=complete&id=${id}`, { headers: adminHeaders(ctx) });
  if (done.status !== 200) throw new Error(`multipart=complete answered ${done.status}: ${done.body.slice(0, 300)}`);
  return { partsMs, completeMs: done.ms, parts: totalParts, item: JSON.parse(done.body) as ItemJson };
}

/** `DELETE content/<path>`; a missing file is not an error (docs/compat.md 4.2). */
export async function deleteAsset(ctx: ScenarioContext, dir: string, assetPath: string): Promise<void> {
  const res = await fetch(assetUrl(ctx, dir, "content", assetPath), { method: "DELETE", headers: adminHeaders(ctx) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`DELETE ${assetPath} answered ${res.status}: ${text.slice(0, 200)}`);
}

/**
 * Uploads `count` small distinct files `<folder>/file-00000.txt`... through HTTP, `inFlight` at a
 * time: every file goes through the same path a client's would (blob, hashes, rows).
 */
export async function seedFolder(
  ctx: ScenarioContext,
  dir: string,
  folder: string,
  count: number,
  inFlight: number,
): Promise<number> {
  const started = Date.now();
  let next = 0;
  const workers = Array.from({ length: inFlight }, async () => {
    for (let i = next++; i < count; i = next++) {
      const name = `${folder}/file-${String(i).padStart(5, "0")}.txt`;
      const res = await fetch(assetUrl(ctx, dir, "content", name), {
        method: "POST",
        headers: { "Content-Type": "text/plain", ...adminHeaders(ctx) },
        body: `Seeded by the benchmark: file ${i} of ${count}.\n`,
      });
      const text = await res.text();
      if (res.status !== 201) throw new Error(`POST ${name} answered ${res.status}: ${text.slice(0, 200)}`);
    }
  });
  await Promise.all(workers);
  return Date.now() - started;
}

/**
 * GETs `url` and counts and hashes the body as it arrives (a 1 GiB answer is never buffered):
 * the check, before measuring, that a download is complete and intact.
 */
export function downloadDigest(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; bytes: number; sha256: string }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers }, (res) => {
      const hash = createHash("sha256");
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
      });
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode ?? 0, bytes, sha256: hash.digest("hex") }));
    });
    request.on("error", reject);
  });
}

/** CPU seconds a process spends while `work` runs. */
export async function withCpu<T>(
  pid: number,
  work: () => Promise<T>,
): Promise<{ result: T; cpuSec: number | undefined }> {
  const before = cpuSeconds(pid);
  const result = await work();
  const after = cpuSeconds(pid);
  return { result, cpuSec: before === undefined || after === undefined ? undefined : round(after - before, 3) };
}

/** The server's RSS every `everyMs` while `work` runs: flat means an upload is streamed, not buffered. */
export async function withRssSamples<T>(pid: number, everyMs: number, work: () => Promise<T>) {
  const samples: number[] = [];
  const take = () => {
    const rss = memoryOf(pid)?.rssMB;
    if (rss !== undefined) samples.push(rss);
  };
  take();
  const timer = setInterval(take, everyMs);
  try {
    const result = await work();
    take();
    const rss = {
      samples: samples.length,
      startRssMB: samples[0] ?? null,
      maxRssMB: samples.length > 0 ? Math.max(...samples) : null,
      // Right after the answer: what the server keeps once the upload is done.
      finalRssMB: samples.at(-1) ?? null,
    };
    return { result, rss };
  } finally {
    clearInterval(timer);
  }
}
