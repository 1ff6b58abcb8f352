import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { buildApp } from "../src/app.js";
import { bootstrapAdminKey } from "../src/areas/security/bootstrap.js";
import { loadConfig } from "../src/config.js";
import { systemClock } from "../src/domain/clock.js";
import { parseVersion } from "../src/domain/upack-version.js";
import { versionSortKey } from "../src/domain/upack-version-sort.js";
import { openDatabase } from "../src/storage/database.js";
import { createFileBlobStore } from "../src/storage/file-blob-store.js";

/**
 * The web UI's browsing pages on a big feed (issue 16 section 4: a feed page of a feed with 100,000
 * versions and a package page of a package with 10,000 versions, server time p99 under 50 ms,
 * paged). One feed holds PAGES_PACKAGES packages (default 9,000) of 10 versions each plus one
 * package of 10,000 versions: 100,000 versions. Rows are written straight into the database (as
 * bench/upack-seed.ts does); every page is rendered through the real app (inject: routing, access,
 * SQL, template), as Anonymous holding view on the feed. Searches and the last-updated order are
 * kept between writes (read/browse-queries.ts), so two scenarios measure them cold: a new term each
 * request, and a write before each request. Not a test: one JSON object on stdout.
 *
 *   npx tsx bench/web-ui-pages.ts
 */
const packages = Number(process.env.PAGES_PACKAGES ?? 9_000);
const samples = Number(process.env.PAGES_SAMPLES ?? 300);
const log = (line: string) => process.stderr.write(`${line}\n`);

const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-pages-bench-"));
const adminKey = randomBytes(24).toString("hex");
const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", WHARF_GC_INTERVAL_HOURS: "0" });
const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
bootstrapAdminKey(db, dataDir, adminKey, systemClock);
const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), logger: false });
await app.ready();

try {
  const created = await app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: { "x-apikey": adminKey },
    payload: { name: "big", feedType: "universal" },
  });
  if (created.statusCode !== 201) throw new Error(`creating the feed: ${created.statusCode} ${created.body}`);
  seed();
  const scenarios: Record<string, string | ((i: number) => string)> = {
    "feed page 1 by name": "/feeds/big",
    "feed page 100 by name": "/feeds/big?page=100",
    "feed page 1 by last update": "/feeds/big?sort=updated",
    "feed page 100 by last update": "/feeds/big?sort=updated&page=100",
    "feed search (name prefix)": "/feeds/big?q=pkg-004",
    "feed search (no match: every row ranked)": "/feeds/big?q=nothing-matches",
    // Every request a term not asked before: what a search costs before its ranking is kept.
    "feed search, a new term each time": (i) => `/feeds/big?q=pkg-0${String(i).padStart(4, "0")}`,
    "feed page 1 by last update after each write": (i) => (write(i), "/feeds/big?sort=updated"),
    "package page, 10,000 versions, page 1": "/feeds/big/packages/huge",
    "package page, 10,000 versions, last page": "/feeds/big/packages/huge?page=200",
    "package page, 10 versions": "/feeds/big/packages/pkg-04500",
  };
  const results: Record<string, { p50: number; p99: number; max: number; bytes: number }> = {};
  for (const [name, url] of Object.entries(scenarios)) results[name] = await measure(url);
  process.stdout.write(
    `${JSON.stringify(
      { packages: packages + 1, versions: packages * 10 + 10_000, samples, results, firstLoad: await firstLoad() },
      null,
      2,
    )}\n`,
  );
} finally {
  await app.close();
  db.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}

/**
 * What a browser transfers to show the feed page the first time (issue 16 section 4: under 150 KB):
 * the page, its stylesheet and its script, as sent to a browser that accepts gzip and brotli.
 */
async function firstLoad() {
  const headers = { "accept-encoding": "gzip, deflate, br" };
  const page = await app.inject({ method: "GET", url: "/feeds/big", headers });
  // The assets it names, read from the page as it is before compression.
  const plain = await app.inject({ method: "GET", url: "/feeds/big" });
  const assets = [...plain.body.matchAll(/(?:href|src)="(\/ui\/[^"]+)"/g)].map((match) => match[1] ?? "");
  const sizes: Record<string, number> = { "/feeds/big": page.rawPayload.length };
  for (const url of assets) {
    const res = await app.inject({ method: "GET", url: url.replaceAll("&amp;", "&"), headers });
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    sizes[url] = res.rawPayload.length;
  }
  const totalBytes = Object.values(sizes).reduce((sum, size) => sum + size, 0);
  log(`first load of /feeds/big: ${totalBytes} bytes transferred`);
  return { sizes, totalBytes };
}

/** A write that moves the ChangeWatch, as an upload would (untimed: done before the request). */
function write(i: number): void {
  db.prepare("UPDATE upack_versions SET published_by = ? WHERE id = 1").run(`bench ${i}`);
}

async function measure(target: string | ((i: number) => string)) {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < samples + 20; i += 1) {
    const url = typeof target === "string" ? target : target(i);
    const started = performance.now();
    const res = await app.inject({ method: "GET", url });
    const took = performance.now() - started;
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    bytes = res.rawPayload.length;
    if (i >= 20) times.push(took); // the first ones warm the statement and template caches
  }
  times.sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round((times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0) * 100) / 100;
  log(`${typeof target === "string" ? target : target(0)}: p50 ${at(0.5)} ms, p99 ${at(0.99)} ms`);
  return { p50: at(0.5), p99: at(0.99), max: at(1), bytes };
}

function sortKeyOf(version: string): string {
  const parsed = parseVersion(version);
  if (parsed === undefined) throw new Error(`bad version ${version}`);
  return versionSortKey(parsed);
}

function seed(): void {
  const started = Date.now();
  const feedId = (db.prepare("SELECT id FROM feeds WHERE name = 'big'").get() as { id: number }).id;
  db.prepare(
    `INSERT INTO permissions (principal_type, task_id, feed_id, deny)
     VALUES ('anonymous', (SELECT id FROM tasks WHERE name_key = 'view & download packages'), ?, 0)`,
  ).run(feedId);
  const insertPackage = db.prepare<[number, string, string], { id: number }>(
    "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', ?, '', ?) RETURNING id",
  );
  const insertVersion = db.prepare(
    `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
       file_list, is_virtual, published_at, downloads)
     VALUES (?, ?, ?, ?, ?, ?, ?, 2048, '[]', 0, ?, ?)`,
  );
  const refresh = db.prepare(
    `UPDATE upack_packages SET
       latest_version_id = (SELECT id FROM upack_versions WHERE package_id = :id ORDER BY sort_key DESC LIMIT 1),
       versions_desc = (SELECT json_group_array(version ORDER BY sort_key DESC) FROM upack_versions WHERE package_id = :id)
     WHERE id = :id`,
  );
  let minute = 0;
  const add = (name: string, versions: number) => {
    const { id } = insertPackage.get(feedId, name, name.toLowerCase()) as { id: number };
    for (let i = 0; i < versions; i += 1) {
      const version = `1.${i}.0`;
      const manifest = JSON.stringify({
        name,
        version,
        title: `${name} ${version}`,
        description: `Seeded by the benchmark: version ${version} of ${name}.`,
        tags: ["bench", "seeded"],
      });
      // Publication times shuffled against names, so that "last updated" is an order of its own.
      const published = new Date(Date.UTC(2030, 0, 1) + ((minute++ * 7919) % 1_000_000) * 60_000).toISOString();
      insertVersion.run(
        id,
        version,
        version,
        sortKeyOf(version),
        manifest,
        "0".repeat(64),
        "0".repeat(40),
        published,
        i,
      );
    }
    refresh.run({ id });
  };
  db.transaction(() => {
    for (let p = 0; p < packages; p += 1) add(`pkg-${String(p).padStart(5, "0")}`, 10);
    add("huge", 10_000);
  })();
  log(`seeded ${packages + 1} packages, ${packages * 10 + 10_000} versions in ${Date.now() - started} ms`);
}
