import { randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import Database from "better-sqlite3";
import yazl from "yazl";
import { parseVersion } from "../src/domain/upack-version.js";
import { versionSortKey } from "../src/domain/upack-version-sort.js";
import { createFileBlobStore } from "../src/storage/file-blob-store.js";
import type { ScenarioContext } from "./scenarios.js";
import { createApiKey } from "./api-keys.js";

/**
 * Data for the upack scenarios. Packages that are downloaded or uploaded are real .upack files
 * written to the bench's work directory (the baselines serve and copy the very same files) and
 * streamed into Wharf's upload endpoint, never buffered whole. The 10,000- and 100,000-version
 * feeds are written straight into the server's database instead (uploading that many packages
 * would take minutes): one real package blob is put through the blob store and every seeded row
 * points at it, which listings never notice (they read rows, not blobs).
 */

const DB_FILE = "wharf.sqlite";

/** Creates a feed (universal unless said otherwise) through the management API. */
export async function createFeed(ctx: ScenarioContext, name: string, feedType = "universal"): Promise<void> {
  const res = await fetch(`${ctx.url}/api/management/feeds/create`, {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-ApiKey": ctx.adminKey },
    body: JSON.stringify({ name, feedType }),
  });
  const text = await res.text();
  if (res.status !== 201) throw new Error(`creating feed ${name} answered ${res.status}: ${text.slice(0, 200)}`);
}

/** A Feed API key allowed to view and download from one feed, created through the API-key API. */
export function createFeedKey(ctx: ScenarioContext, feed: string): Promise<string> {
  return createApiKey(ctx, { type: "Feed", feed, packagePermissions: ["view"] });
}

/**
 * Writes a .upack to `file`: upack.json and `package/data.bin` of `payloadBytes` random bytes,
 * stored uncompressed so the file is as large as asked. Random bytes come in 1 MiB pieces, so a
 * 100 MiB package never sits in memory.
 */
export async function writeUpack(
  file: string,
  manifest: { group?: string; name: string; version: string },
  payloadBytes: number,
): Promise<number> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(Buffer.from(JSON.stringify(manifest)), "upack.json");
  async function* payload() {
    for (let left = payloadBytes; left > 0; left -= 1024 * 1024) yield randomBytes(Math.min(left, 1024 * 1024));
  }
  zip.addReadStream(Readable.from(payload()), "package/data.bin", { compress: false, size: payloadBytes });
  zip.end();
  await pipeline(zip.outputStream, fs.createWriteStream(file));
  // Written back now, not while a later measurement runs (100 MiB of dirty pages would compete with it).
  const fd = fs.openSync(file, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return fs.statSync(file).size;
}

/** Streams `file` into `PUT /upack/<feed>/upload`; resolves with the wall time in ms once 201 arrives. */
export function uploadFile(ctx: ScenarioContext, feed: string, file: string): Promise<number> {
  const size = fs.statSync(file).size;
  const started = process.hrtime.bigint();
  return new Promise((resolve, reject) => {
    const request = http.request(
      `${ctx.url}/upack/${encodeURIComponent(feed)}/upload`,
      {
        method: "PUT",
        headers: { "Content-Type": "application/zip", "Content-Length": String(size), "X-ApiKey": ctx.adminKey },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("error", reject);
        res.on("end", () => {
          const ms = Number(process.hrtime.bigint() - started) / 1e6;
          if (res.statusCode === 201) resolve(ms);
          else
            reject(new Error(`upload of ${path.basename(file)} answered ${res.statusCode}: ${Buffer.concat(chunks)}`));
        });
      },
    );
    request.on("error", reject);
    fs.createReadStream(file, { highWaterMark: 1024 * 1024 })
      .on("error", reject)
      .pipe(request);
  });
}

/** Inserts packages and versions straight into the server's database, in one transaction. */
export async function seedVersions(
  ctx: ScenarioContext,
  feed: string,
  packages: ReadonlyArray<{ name: string; versions: readonly string[] }>,
): Promise<void> {
  const started = Date.now();
  const blobFile = path.join(ctx.workDir, `seed-${feed}.upack`);
  await writeUpack(blobFile, { name: "seed", version: "1.0.0" }, 2048);
  const blob = await createFileBlobStore(ctx.dataDir).put(fs.createReadStream(blobFile));

  const db = new Database(path.join(ctx.dataDir, DB_FILE));
  try {
    db.pragma("busy_timeout = 10000");
    const feedId = (
      db.prepare("SELECT id FROM feeds WHERE name = ? COLLATE NOCASE").get(feed) as { id: number } | undefined
    )?.id;
    if (feedId === undefined) throw new Error(`no feed ${feed}`);
    const insertPackage = db.prepare<[number, string, string], { id: number }>(
      "INSERT INTO upack_packages (feed_id, group_name, name, group_key, name_key) VALUES (?, '', ?, '', ?) RETURNING id",
    );
    const insertVersion = db.prepare(
      `INSERT INTO upack_versions (package_id, version, version_key, sort_key, manifest, blob_sha256, sha1, size,
         file_list, is_virtual, published_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, '[]', 0, ?)`,
    );
    const refresh = db.prepare(
      `UPDATE upack_packages SET
         latest_version_id = (SELECT id FROM upack_versions WHERE package_id = :id ORDER BY sort_key DESC LIMIT 1),
         versions_desc = (SELECT json_group_array(version ORDER BY sort_key DESC) FROM upack_versions WHERE package_id = :id)
       WHERE id = :id`,
    );
    const published = new Date().toISOString();
    db.transaction(() => {
      for (const pkg of packages) {
        const { id } = insertPackage.get(feedId, pkg.name, pkg.name.toLowerCase()) as { id: number };
        for (const version of pkg.versions) {
          const parsed = parseVersion(version);
          if (parsed === undefined) throw new Error(`bad version ${version}`);
          const manifest = JSON.stringify({
            name: pkg.name,
            version,
            title: `${pkg.name} ${version}`,
            description: `Seeded by the benchmark: version ${version} of ${pkg.name}.`,
            tags: ["bench", "seeded"],
          });
          insertVersion.run(
            id,
            version,
            version,
            versionSortKey(parsed),
            manifest,
            blob.sha256,
            blob.sha1,
            blob.size,
            published,
          );
        }
        refresh.run({ id });
      }
    }).immediate();
  } finally {
    db.close();
  }
  const versions = packages.reduce((sum, pkg) => sum + pkg.versions.length, 0);
  ctx.log(`seeded ${packages.length} packages, ${versions} versions into ${feed} in ${Date.now() - started} ms`);
}
