import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { buildApp } from "../src/app.js";
import { bootstrapAdminKey } from "../src/areas/security/bootstrap.js";
import { loadConfig } from "../src/config.js";
import type { Clock } from "../src/domain/clock.js";
import { parseVersion } from "../src/domain/upack-version.js";
import { versionSortKey } from "../src/domain/upack-version-sort.js";
import { openDatabase } from "../src/storage/database.js";
import { createFileBlobStore } from "../src/storage/file-blob-store.js";
import { buildUpack } from "../test/helpers/upack-fixtures.js";

/**
 * Retention at scale (issue 17 section 1): a feed of RETENTION_VERSIONS versions (default 100,000:
 * 1,000 packages of 100, inserted straight into SQL), the preview timed (GET /api/retention/preview,
 * the HTTP answer included); then 10 KiB uploads one after another into another feed, first alone
 * for RETENTION_IDLE_MS (default 5 s), then beside a run deleting RETENTION_DELETE versions (default
 * 2,000): each phase reports the uploads' latency (median, p99, max), the longest stall a run
 * causes them. Not a test: one JSON object on stdout.
 *
 *   npx tsx bench/retention.ts
 */
const total = Number(process.env.RETENTION_VERSIONS ?? 100_000);
const perPackage = 100;
const toDelete = Number(process.env.RETENTION_DELETE ?? 2_000);
const idleMs = Number(process.env.RETENTION_IDLE_MS ?? 5_000);
const log = (line: string) => process.stderr.write(`${line}\n`);

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-retention-bench-"));
const now = Date.parse("2030-01-01T00:00:00.000Z");
const clock: Clock = { now: () => new Date(now) };
const adminKey = randomBytes(24).toString("hex");
const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", WHARF_RETENTION_CHECK_SECONDS: "0" });
const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
bootstrapAdminKey(db, dataDir, adminKey, clock);
const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), clock, logger: false });
await app.ready();
const headers = { "x-apikey": adminKey };

async function call(method: "GET" | "POST", url: string, payload?: object) {
  const res = await app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload }) });
  if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res;
}

function seed(): void {
  const feedId = (db.prepare("SELECT id FROM feeds WHERE name = 'big'").get() as { id: number }).id;
  const insertPackage = db.prepare(
    "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', ?, '', ?) RETURNING id",
  );
  const insertVersion = db.prepare(
    `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
       file_list, is_virtual, published_at, last_downloaded_at)
     VALUES (?, ?, ?, ?, '{}', ?, ?, 10240, '[]', 0, ?, ?)`,
  );
  const refresh = db.prepare(
    `UPDATE upack_packages SET latest_version_id = (SELECT id FROM upack_versions WHERE package_id = :id
       ORDER BY sort_key DESC LIMIT 1) WHERE id = :id`,
  );
  db.transaction(() => {
    for (let p = 0; p < total / perPackage; p++) {
      const name = `package-${p}`;
      const packageId = (insertPackage.get(feedId, name, name) as { id: number }).id;
      for (let v = 0; v < perPackage; v++) {
        const version = `1.${v}.0`;
        const published = new Date(now - (perPackage - v) * 86_400_000).toISOString();
        const downloaded = v % 3 === 0 ? null : new Date(now - v * 3_600_000).toISOString();
        const sha = randomBytes(32).toString("hex");
        const sortKey = versionSortKey(parseVersion(version) as NonNullable<ReturnType<typeof parseVersion>>);
        insertVersion.run(packageId, version, version, sortKey, sha, sha.slice(0, 40), published, downloaded);
      }
      refresh.run({ id: packageId });
    }
  })();
}

function stats(latencies: number[]) {
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0) * 10) / 10;
  return { uploads: sorted.length, medianMs: at(0.5), p99Ms: at(0.99), maxMs: at(1) };
}

let uploadNumber = 0;
const payload = randomBytes(10 * 1024);
async function uploadsWhile(keepGoing: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  while (keepGoing()) {
    const bytes = await buildUpack({
      name: "upload",
      version: `1.0.${uploadNumber++}`,
      files: { "data.bin": payload },
    });
    const started = performance.now();
    const res = await app.inject({ method: "PUT", url: "/upack/uploads/upload", headers, payload: bytes });
    latencies.push(performance.now() - started);
    if (res.statusCode !== 201) throw new Error(`upload: ${res.statusCode} ${res.body}`);
  }
  return latencies;
}

try {
  for (const name of ["big", "uploads"]) {
    await call("POST", "/api/management/feeds/create", { name, feedType: "universal" });
  }
  log(`seeding ${total} versions`);
  seed();
  // Keep the latest 90 of each package: 10,000 of 100,000 versions selected.
  await call("POST", "/api/management/feeds/update/big", { retentionRules: [{ keepVersionsCount: 90 }] });
  const previewMs: number[] = [];
  let selected = 0;
  for (let i = 0; i < 3; i++) {
    const started = performance.now();
    const res = await call("GET", "/api/retention/preview?feed=big");
    previewMs.push(Math.round(performance.now() - started));
    selected = (JSON.parse(res.body) as { versions: number }).versions;
  }
  log(`preview: ${previewMs.join(", ")} ms for ${selected} of ${total}`);

  log("uploads alone");
  const idleEnd = performance.now() + idleMs;
  const alone = await uploadsWhile(() => performance.now() < idleEnd);

  // A run deleting `toDelete` versions: only the oldest of the first packages.
  const packages = Math.ceil(toDelete / 10);
  await call("POST", "/api/management/feeds/update/big", {
    retentionRules: [
      { keepVersionsCount: 90, deletePackageIds: Array.from({ length: packages }, (_, p) => `package-${p}`) },
    ],
  });
  log(`uploads beside a run deleting ${packages * 10} versions`);
  const runStarted = performance.now();
  const started = JSON.parse((await call("POST", "/api/retention/run?feed=big")).body) as { id: number };
  let status = "pending";
  let run: Record<string, unknown> = {};
  const poll = (async () => {
    while (status === "pending" || status === "executing") {
      await new Promise((resolve) => setTimeout(resolve, 100));
      run = JSON.parse((await call("GET", `/api/retention/runs/${started.id}?feed=big`)).body) as Record<
        string,
        unknown
      >;
      status = String(run.status);
    }
  })();
  const beside = await uploadsWhile(() => status === "pending" || status === "executing");
  await poll;
  const runMs = Math.round(performance.now() - runStarted);
  process.stdout.write(
    `${JSON.stringify(
      {
        versions: total,
        preview: { selected, ms: previewMs },
        run: { status, versionsDeleted: run.versionsDeleted, bytesFreed: run.bytesFreed, ms: runMs },
        uploadsAlone: stats(alone),
        uploadsBesideRun: stats(beside),
      },
      null,
      2,
    )}\n`,
  );
} finally {
  await app.close();
  db.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}
