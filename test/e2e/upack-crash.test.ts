import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import yazl from "yazl";
import { type RunningServer, startServer } from "./process.js";

/**
 * docs/PRODUCT.md: "crash at any point loses no acknowledged upload and leaves no partial file
 * visible". Many uploads stream into the real server; it is SIGKILLed while some are still
 * sending, some hashing and some committing; after a restart on the same data directory every
 * upload that got its 201 is there with its bytes, and nothing half-done is.
 */

const KEY = `e2e-crash-${randomBytes(16).toString("hex")}`;
const UPLOADS = 48;
let dataDir: string;
const running: RunningServer[] = [];

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-crash-"));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
  await fs.rm(dataDir, { recursive: true, force: true });
});

async function start(): Promise<RunningServer> {
  const server = await startServer({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: KEY });
  running.push(server);
  return server;
}

async function upackBytes(version: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(JSON.stringify({ name: "crashy", version })), "upack.json");
  // Incompressible and stored, so the upload takes many chunks on the wire.
  zip.addBuffer(randomBytes(256 * 1024 + Math.floor(Math.random() * 256 * 1024)), "package/data.bin", {
    compress: false,
  });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A chunked PUT that trickles its body; resolves with the status once the whole response arrived. */
function uploadSlowly(server: RunningServer, bytes: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: "127.0.0.1",
      port: server.port,
      method: "PUT",
      path: "/upack/main/upload",
      headers: { "X-ApiKey": KEY, "Content-Type": "application/zip" },
    });
    request.on("error", reject);
    request.on("response", (response) => {
      response.resume();
      response.on("error", reject);
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    void (async () => {
      for (let offset = 0; offset < bytes.length; offset += 32 * 1024) {
        if (request.destroyed) return;
        request.write(bytes.subarray(offset, offset + 32 * 1024));
        await sleep(2 + Math.floor(Math.random() * 6));
      }
      request.end();
    })();
  });
}

const sha = (algorithm: string, bytes: Buffer) => createHash(algorithm).update(bytes).digest("hex");
const blobPath = (sha256: string) => path.join(dataDir, "blobs", sha256.slice(0, 2), sha256.slice(2, 4), sha256);

describe("universal uploads survive SIGKILL", () => {
  it("every acknowledged upload is listed with intact bytes; nothing partial is visible", async () => {
    const first = await start();
    const feed = await fetch(`${first.url}/api/management/feeds/create`, {
      method: "POST",
      headers: { "X-ApiKey": KEY, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "main", feedType: "universal" }),
    });
    expect(feed.status).toBe(201);

    const packages = await Promise.all(
      Array.from({ length: UPLOADS }, async (_, i) => ({ version: `1.0.${i}`, bytes: await upackBytes(`1.0.${i}`) })),
    );
    const acknowledged = new Map<string, Buffer>();
    const outcomes = packages.map(async ({ version, bytes }, i) => {
      await sleep(i * 15); // staggered: at the kill some are done, some mid-body, some committing
      try {
        const status = await uploadSlowly(first, bytes);
        if (status === 201) acknowledged.set(version, bytes);
        else throw new Error(`upload ${version} answered ${status}`);
      } catch (error) {
        if (error instanceof Error && /answered/.test(error.message)) throw error;
        // The connection died with the server: this upload was never acknowledged.
      }
    });
    while (acknowledged.size < UPLOADS / 3) await sleep(5);
    process.kill(first.pid, "SIGKILL");
    expect(await first.exited).toMatchObject({ signal: "SIGKILL" });
    await Promise.all(outcomes);
    expect(acknowledged.size).toBeGreaterThanOrEqual(UPLOADS / 3);
    expect(acknowledged.size).toBeLessThan(UPLOADS); // the kill really happened mid-way

    const second = await start();
    const db = new Database(path.join(dataDir, "wharf.sqlite"), { readonly: true });
    try {
      const rows = db
        .prepare("SELECT version, blob_sha256, sha1, size FROM upack_versions ORDER BY sort_key DESC")
        .all() as Array<{ version: string; blob_sha256: string; sha1: string; size: number }>;
      const byVersion = new Map(rows.map((row) => [row.version, row]));
      for (const [version, bytes] of acknowledged) {
        expect(byVersion.get(version), `acknowledged ${version} is listed`).toEqual({
          version,
          blob_sha256: sha("sha256", bytes),
          sha1: sha("sha1", bytes),
          size: bytes.length,
        });
      }
      // No row points at a missing or damaged file, acknowledged or not.
      for (const row of rows) {
        const stored = await fs.readFile(blobPath(row.blob_sha256));
        expect(sha("sha256", stored)).toBe(row.blob_sha256);
        expect(sha("sha1", stored)).toBe(row.sha1);
      }
      // Every stored blob is whole (its name is its hash) and no temporary file is left over.
      const files = await fs.readdir(path.join(dataDir, "blobs"), { recursive: true, withFileTypes: true });
      for (const file of files.filter((entry) => entry.isFile())) {
        const stored = await fs.readFile(path.join(file.parentPath, file.name));
        expect(sha("sha256", stored)).toBe(file.name);
      }
      expect(await fs.readdir(path.join(dataDir, "tmp")).catch(() => [])).toEqual([]);
      // The listing columns agree with the rows.
      const pkg = db.prepare("SELECT versions_desc, latest_version_id FROM upack_packages").get() as
        { versions_desc: string; latest_version_id: number } | undefined;
      expect(JSON.parse(pkg?.versions_desc ?? "[]")).toEqual(rows.map((row) => row.version));
      if (rows.length > 0) {
        expect(db.prepare("SELECT version FROM upack_versions WHERE id = ?").get(pkg?.latest_version_id)).toEqual({
          version: rows[0]?.version,
        });
      }
    } finally {
      db.close();
    }

    // The restarted server serves what it acknowledged and takes new uploads.
    const listed = await fetch(`${second.url}/upack/main/versions?name=crashy`, { headers: { "X-ApiKey": KEY } });
    if (listed.status === 200) {
      const versions = ((await listed.json()) as Array<{ version: string }>).map((v) => v.version);
      for (const version of acknowledged.keys()) expect(versions).toContain(version);
    }
    expect(await uploadSlowly(second, await upackBytes("2.0.0"))).toBe(201);
  }, 120_000);
});
