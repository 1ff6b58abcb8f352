import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import yazl from "yazl";
import { type RunningServer, runWharf, startServer } from "./process.js";

/**
 * Issue 11, "After a crash": a server SIGKILLed while uploads stream in leaves temporary files, and
 * blobs and multipart spools that no row names; the next start removes all of them before it
 * serves, and keeps every blob and spool a row names. The leftovers are made for certain, not by
 * timing: stalled uploads hold temporary files, and a write lock held by this test (as the CLI or
 * a backup tool may hold it) keeps finished uploads from committing their rows.
 */

const KEY = `e2e-leftovers-${randomBytes(16).toString("hex")}`;
let dataDir: string;
const running: RunningServer[] = [];
const sockets: http.ClientRequest[] = [];

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-leftovers-"));
});
afterEach(async () => {
  for (const request of sockets.splice(0)) request.destroy();
  await Promise.all(running.splice(0).map((server) => server.stop()));
  await fs.rm(dataDir, { recursive: true, force: true });
});

const env = () => ({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: KEY, WHARF_DB_BUSY_WAIT_MS: "30000" });

async function start(): Promise<RunningServer> {
  const server = await startServer(env());
  running.push(server);
  return server;
}

async function upackBytes(version: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(JSON.stringify({ name: "pkg", version })), "upack.json");
  zip.addBuffer(randomBytes(300 * 1024), "package/data.bin", { compress: false });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

const call = (server: RunningServer, method: string, url: string, body?: Buffer | string, type?: string) =>
  fetch(`${server.url}${url}`, {
    method,
    headers: { "X-ApiKey": KEY, ...(type ? { "Content-Type": type } : {}) },
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : new Uint8Array(body) }),
  });

/** Sends the headers and `sent` bytes of a `total`-byte body, then nothing more: an upload under way. */
function stalledUpload(server: RunningServer, url: string, sent: Buffer, total: number): void {
  const request = http.request(`${server.url}${url}`, {
    method: "PUT",
    headers: { "X-ApiKey": KEY, "Content-Type": "application/zip", "Content-Length": total },
  });
  request.on("error", () => undefined); // the server dies under it
  request.write(sent);
  sockets.push(request);
}

/** Sends a whole request without waiting for its answer (it will not come: the server is killed). */
function unanswered(server: RunningServer, url: string, body: Buffer): void {
  const request = http.request(`${server.url}${url}`, {
    method: url.includes("/endpoints/") ? "POST" : "PUT",
    headers: { "X-ApiKey": KEY, "Content-Type": "application/octet-stream", "Content-Length": body.length },
  });
  request.on("error", () => undefined);
  request.end(body);
  sockets.push(request);
}

const partUrl = (id: string, index: number, size: number) =>
  `/endpoints/files/content/${id}.bin?multipart=upload&id=${id}&index=${index}&offset=${index * size}` +
  `&totalSize=${2 * size}&partSize=${size}&totalParts=2`;

async function filesIn(dir: string): Promise<string[]> {
  const found = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return found.filter((entry) => entry.isFile()).map((entry) => path.join(entry.parentPath, entry.name));
}

/** What is on disk, and which of it a row names, read through `db`. */
async function census(db: Database.Database) {
  const referenced = new Set(
    db
      .prepare("SELECT blob_sha256 AS sha FROM blob_references")
      .all()
      .map((row) => (row as { sha: string }).sha),
  );
  const named = new Set(
    db
      .prepare("SELECT spool FROM asset_multipart_uploads")
      .all()
      .map((row) => (row as { spool: string }).spool),
  );
  const blobs = (await filesIn(path.join(dataDir, "blobs"))).map((file) => path.basename(file));
  const spools = (await filesIn(path.join(dataDir, "multipart"))).map((file) => path.basename(file));
  return {
    temp: (await filesIn(path.join(dataDir, "tmp"))).length,
    referencedBlobs: blobs.filter((blob) => referenced.has(blob)).sort(),
    unreferencedBlobs: blobs.filter((blob) => !referenced.has(blob)).length,
    namedSpools: spools.filter((spool) => named.has(spool)).sort(),
    orphanSpools: spools.filter((spool) => !named.has(spool)).length,
  };
}

async function until<T>(what: string, attempt: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await attempt();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

describe("a restart after SIGKILL during uploads", () => {
  it("removes every temporary file, unreferenced blob and orphaned spool, and keeps what rows name", async () => {
    const first = await start();
    for (const [name, feedType] of [
      ["main", "universal"],
      ["files", "asset"],
    ]) {
      const created = await call(
        first,
        "POST",
        "/api/management/feeds/create",
        JSON.stringify({ name, feedType }),
        "application/json",
      );
      expect(created.status).toBe(201);
    }
    const stored = await upackBytes("1.0.0");
    expect((await call(first, "PUT", "/upack/main/upload", stored, "application/zip")).status).toBe(201);
    const asset = randomBytes(200 * 1024);
    expect((await call(first, "POST", "/endpoints/files/content/kept.bin", asset)).status).toBe(201);
    // An unfinished multipart upload: its spool is named by its row and must survive the restart.
    const unfinished = "aa".repeat(16);
    const parts = [randomBytes(64 * 1024), randomBytes(64 * 1024)];
    expect((await call(first, "POST", partUrl(unfinished, 0, 65536), parts[0])).status).toBe(200);

    // Uploads under way: their bytes sit in temporary files.
    for (let i = 0; i < 3; i++) stalledUpload(first, "/upack/main/upload", randomBytes(256 * 1024), 1024 * 1024);
    const db = new Database(path.join(dataDir, "wharf.sqlite"));
    try {
      await until(
        "temporary files of the stalled uploads",
        () => census(db),
        (seen) => seen.temp >= 3,
      );
      // Finished uploads whose rows wait for the lock: a blob and a spool that no row names yet.
      db.exec("BEGIN IMMEDIATE");
      unanswered(first, "/upack/main/upload", await upackBytes("2.0.0"));
      unanswered(first, partUrl("bb".repeat(16), 0, 65536), randomBytes(65536));
      const before = await until(
        "a blob and a spool without rows",
        () => census(db),
        (seen) => seen.unreferencedBlobs >= 1 && seen.orphanSpools >= 1,
      );
      process.kill(first.pid, "SIGKILL");
      expect(await first.exited).toMatchObject({ signal: "SIGKILL" });
      db.exec("ROLLBACK");

      const second = await start();
      const after = await census(db);
      expect(after).toEqual({
        temp: 0,
        referencedBlobs: before.referencedBlobs,
        unreferencedBlobs: 0,
        namedSpools: before.namedSpools,
        orphanSpools: 0,
      });
      expect(before.referencedBlobs).toHaveLength(2);
      expect(before.namedSpools).toHaveLength(1);
      const logged = await second.waitForOutput(/removed temporary files and unreferenced blobs/);
      expect(JSON.parse(logged)).toMatchObject({ tempFiles: before.temp, blobs: before.unreferencedBlobs, spools: 1 });

      // What the rows name still works: downloads, and the multipart upload can be finished.
      const download = await call(second, "GET", "/upack/main/download/pkg/1.0.0");
      expect(Buffer.from(await download.arrayBuffer()).equals(stored)).toBe(true);
      const file = await call(second, "GET", "/endpoints/files/content/kept.bin");
      expect(Buffer.from(await file.arrayBuffer()).equals(asset)).toBe(true);
      expect((await call(second, "POST", partUrl(unfinished, 1, 65536), parts[1])).status).toBe(200);
      const completed = await call(
        second,
        "POST",
        `/endpoints/files/content/${unfinished}.bin?multipart=complete&id=${unfinished}`,
      );
      expect(completed.status).toBe(200);
      const whole = await call(second, "GET", `/endpoints/files/content/${unfinished}.bin`);
      expect(Buffer.from(await whole.arrayBuffer()).equals(Buffer.concat(parts))).toBe(true);

      // A second server on the same directory would take this one's uploads for leftovers: refused.
      const another = await runWharf(["serve"], { ...env(), WHARF_PORT: "0", WHARF_HOST: "127.0.0.1" });
      expect(another.code).toBe(1);
      expect(another.stderr).toContain("Another Wharf server is already running on the data directory");
      expect((await call(second, "GET", "/upack/main/download/pkg/1.0.0")).status).toBe(200);
    } finally {
      db.close();
    }
  }, 60_000);
});
