/**
 * Universal package fixtures for read-side tests: .upack files built in memory with yazl, and
 * package/version rows saved through the write side's own repository, on the app's database
 * (SQLite, or PostgreSQL on a cluster node), with what an upload could not set (a publication
 * date, download counts) and without an upload's checks. Blobs go into the store the app reads
 * packages from (packageStoreOf).
 *
 * Typical use:
 *   const upack = createUpackFixtures(t);
 *   await upack.createFeed("main");
 *   await upack.addVersion("main", { group: "g", name: "pkg", version: "1.0.0", files: { "a.txt": "A" } });
 */
import { createHash } from "node:crypto";
import path from "node:path";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import tar from "tar-stream";
import yauzl from "yauzl";
import { expect } from "vitest";
import yazl from "yazl";
import { flushDownloadCounts } from "../../src/areas/upack/download/counts.js";
import { flushPostgresDownloadCounts } from "../../src/areas/upack/read/download-counts-postgres.js";
import {
  createUpackWriteRepository,
  type NewVersion,
  type UpackWriteRepository,
} from "../../src/areas/upack/repository.js";
import { createPostgresUpackWriteRepository } from "../../src/areas/upack/repository-postgres.js";
import { manifestToJson, validateManifest } from "../../src/domain/upack-manifest.js";
import { versionSortKey } from "../../src/domain/upack-version-sort.js";
import type { BlobStore } from "../../src/storage/blob-store.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { byDatabase, isPostgres } from "../../src/storage/metadata-db.js";
import { createObjectStore, storeKeyOf } from "../../src/storage/store-factory.js";
import type { TestApp } from "./app.js";
import { execute, feedIdOf, readOne } from "./fixtures.js";

/** The actor of the package.added events the fixtures' saves raise, as an upload's would. */
const FIXTURE_ACTOR = "test fixture";

export interface ZipEntrySpec {
  readonly content: string | Buffer;
  readonly mtime?: Date;
}

/** Archive entries by path: a string/Buffer is a file, `null` an explicit directory entry ("dir/"). */
export type ZipEntries = Readonly<Record<string, string | Buffer | ZipEntrySpec | null>>;

export const FIXED_MTIME = new Date(Date.UTC(2024, 0, 2, 3, 4, 6));

/** A ZIP in memory, entries in the given order. */
export async function buildZip(entries: ZipEntries): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, value] of Object.entries(entries)) {
    if (value === null) {
      zip.addEmptyDirectory(name, { mtime: FIXED_MTIME });
      continue;
    }
    const spec = typeof value === "string" || Buffer.isBuffer(value) ? { content: value } : value;
    zip.addBuffer(Buffer.from(spec.content), name, { mtime: spec.mtime ?? FIXED_MTIME });
  }
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

export interface PackageSpec {
  readonly group?: string;
  readonly name: string;
  readonly version: string;
  /** Other upack.json properties (title, description, tags, `_custom`, contents for virtual ones). */
  readonly manifest?: Readonly<Record<string, unknown>>;
  /** Files under `package/`, by path relative to it. */
  readonly files?: ZipEntries;
  /** Entries at the archive root besides upack.json (metacontent). */
  readonly rootFiles?: ZipEntries;
}

/** The upack.json object of a spec (group left out when empty). */
export function manifestOf(spec: PackageSpec): Record<string, unknown> {
  return {
    ...(spec.group ? { group: spec.group } : {}),
    name: spec.name,
    version: spec.version,
    ...spec.manifest,
  };
}

/** A .upack: upack.json first, then metacontent, then `package/...`. */
export async function buildUpack(spec: PackageSpec): Promise<Buffer> {
  const entries: Record<string, string | Buffer | ZipEntrySpec | null> = {
    "upack.json": JSON.stringify(manifestOf(spec)),
    ...spec.rootFiles,
  };
  for (const [path, value] of Object.entries(spec.files ?? { "readme.txt": `${spec.name} ${spec.version}` })) {
    entries[`package/${path}`] = value;
  }
  return buildZip(entries);
}

export interface AddVersionOptions {
  readonly publishedAt?: Date;
  readonly downloads?: number;
  readonly isCached?: boolean;
  /** Store these bytes instead of building the package from the spec (rows still from the spec). */
  readonly bytes?: Buffer;
}

export interface AddedVersion {
  readonly versionId: number;
  readonly packageId: number;
  readonly bytes: Buffer;
  readonly sha1: string;
  readonly sha256: string;
}

export interface UpackFixtures {
  /** The app's default package store: the data directory's disk, or a cluster node's object store. */
  readonly blobs: BlobStore;
  /** A universal feed, created through the management API with the admin key. */
  createFeed(name: string, feedType?: string): Promise<void>;
  addVersion(feed: string, spec: PackageSpec, options?: AddVersionOptions): Promise<AddedVersion>;
  /**
   * Many versions in one transaction (as a form of several packages saves them), their blobs put a
   * few at a time: a page of packages to browse without the round trips of as many uploads (about
   * 30 each on PostgreSQL). Their ids, in the order given.
   */
  addVersions(feed: string, versions: readonly { spec: PackageSpec; publishedAt?: Date }[]): Promise<number[]>;
  /** Downloads as stored: [version, package]. */
  downloadsOf(
    feed: string,
    group: string,
    name: string,
    version: string,
  ): Promise<{ version: number; package: number }>;
}

export function createUpackFixtures(t: TestApp): UpackFixtures {
  const database = t.database;
  const blobs = packageStoreOf(t);
  let repository: UpackWriteRepository | undefined;
  const writer = () =>
    (repository ??= byDatabase(database, createUpackWriteRepository, createPostgresUpackWriteRepository));

  async function createFeed(name: string, feedType = "universal"): Promise<void> {
    const res = await t.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: { "x-apikey": t.adminKey },
      payload: { name, feedType },
    });
    if (res.statusCode !== 201) throw new Error(`feed ${name}: ${res.statusCode} ${res.body}`);
  }

  /** The row saveVersions takes for `spec`, its bytes already in the store (`info`). */
  async function newVersion(
    feedId: number,
    spec: PackageSpec,
    info: { sha256: string; sha1: string; size: number },
    options: Pick<AddVersionOptions, "publishedAt" | "isCached">,
  ): Promise<NewVersion> {
    const manifest = validateManifest(manifestOf(spec));
    return {
      feedId,
      group: manifest.group,
      name: spec.name,
      version: spec.version,
      sortKey: versionSortKey(manifest.version),
      manifest: JSON.stringify(manifestToJson(manifest)),
      blobSha256: info.sha256,
      sha1: info.sha1,
      size: info.size,
      fileList: JSON.stringify(await archiveFileList(spec)),
      isVirtual: manifest.isVirtual,
      publishedAt: (options.publishedAt ?? new Date()).toISOString(),
      publishedBy: undefined,
      isCached: options.isCached ?? false,
    };
  }

  async function addVersion(feed: string, spec: PackageSpec, options: AddVersionOptions = {}): Promise<AddedVersion> {
    validateManifest(manifestOf(spec)); // a spec no upload would take fails before anything is stored
    const bytes = options.bytes ?? (await buildUpack(spec));
    const info = await blobs.put(Readable.from([bytes]));
    const version = await newVersion(await feedIdOf(database, feed), spec, info, options);
    const [saved] = await writer().saveVersions([version], { replace: false, cause: { actor: FIXTURE_ACTOR } });
    if (saved === undefined) throw new Error(`${feed}: ${spec.name} ${spec.version} was not saved`);
    const versionId = saved.versionId;
    const row = await readOne<{ package_id: number }>(
      database,
      "SELECT package_id FROM upack_versions WHERE id = ?",
      versionId,
    );
    if (row === undefined) throw new Error(`version ${versionId} is gone`);
    const packageId = row.package_id;
    if (options.downloads !== undefined) await setDownloads(versionId, packageId, options.downloads);
    return { versionId, packageId, bytes, sha1: info.sha1, sha256: info.sha256 };
  }

  async function addVersions(
    feed: string,
    versions: readonly { spec: PackageSpec; publishedAt?: Date }[],
  ): Promise<number[]> {
    const feedId = await feedIdOf(database, feed);
    const rows: NewVersion[] = [];
    const atOnce = 8;
    for (let start = 0; start < versions.length; start += atOnce) {
      const batch = versions.slice(start, start + atOnce).map(async ({ spec, publishedAt }) => {
        const info = await blobs.put(Readable.from([await buildUpack(spec)]));
        return newVersion(feedId, spec, info, { publishedAt });
      });
      rows.push(...(await Promise.all(batch)));
    }
    const saved = await writer().saveVersions(rows, { replace: false, cause: { actor: FIXTURE_ACTOR } });
    return saved.map((outcome) => outcome.versionId);
  }

  /** Downloads as if counted long ago: no last_downloaded_at (retention reads it), the package's sum rewritten. */
  async function setDownloads(versionId: number, packageId: number, downloads: number): Promise<void> {
    await execute(database, "UPDATE upack_versions SET downloads = ? WHERE id = ?", [downloads, versionId]);
    await execute(
      database,
      "UPDATE upack_packages SET downloads = (SELECT coalesce(sum(downloads), 0) FROM upack_versions WHERE package_id = ?) WHERE id = ?",
      [packageId, packageId],
    );
  }

  async function downloadsOf(feed: string, group: string, name: string, version: string) {
    // Counts are batched (download/counts.ts); this reads the table itself, so it writes them first.
    if (isPostgres(database)) await flushPostgresDownloadCounts(database);
    else flushDownloadCounts(database);
    const row = await readOne<{ version: number; package: number }>(
      database,
      `SELECT v.downloads AS version, p.downloads AS package FROM upack_versions v
         JOIN upack_packages p ON p.id = v.package_id
        WHERE p.feed_id = ? AND p.group_key = ? AND p.name_key = ? AND v.version_key = ?`,
      await feedIdOf(database, feed),
      group.toLowerCase(),
      name.toLowerCase(),
      version.toLowerCase(),
    );
    if (!row) throw new Error(`no version ${group}/${name} ${version}`);
    return row;
  }

  return { blobs, createFeed, addVersion, addVersions, downloadsOf };
}

/**
 * Every address in the app's default package store (the data directory's disk, or a cluster
 * node's object store), for tests of what an upload or a deletion leaves stored.
 */
export async function storedBlobAddresses(t: TestApp): Promise<string[]> {
  const found: string[] = [];
  for await (const address of packageStoreOf(t).list()) found.push(address);
  return found;
}

/**
 * The store the app keeps packages in when a feed names none: the server-wide object store of a
 * cluster node (WHARF_PACKAGE_STORE), else a file store on the data directory (content addressed,
 * so two store objects on one directory agree).
 */
function packageStoreOf(t: TestApp): BlobStore {
  const storage = t.config.defaultStorage;
  if (storage === undefined || storage.id === "disk") return createFileBlobStore(t.dataDir);
  return createObjectStore(storage, storeKeyOf(storage), path.join(t.dataDir, "fixture-spool"));
}

/** `[{name, size, date}]` of every archive entry, as the write side records it at upload. */
async function archiveFileList(spec: PackageSpec): Promise<Array<{ name: string; size: number; date: string }>> {
  const list = [{ name: "upack.json", size: Buffer.byteLength(JSON.stringify(manifestOf(spec))), date: "" }];
  for (const [path, value] of Object.entries(spec.rootFiles ?? {})) list.push(entryOf(path, value));
  for (const [path, value] of Object.entries(spec.files ?? { "readme.txt": `${spec.name} ${spec.version}` })) {
    list.push(entryOf(`package/${path}`, value));
  }
  return list.map((entry) => ({ ...entry, date: FIXED_MTIME.toISOString() }));
}

function entryOf(name: string, value: string | Buffer | ZipEntrySpec | null) {
  if (value === null) return { name, size: 0, date: "" };
  const content = typeof value === "string" || Buffer.isBuffer(value) ? value : value.content;
  return { name, size: Buffer.byteLength(content), date: "" };
}

export function sha1Hex(bytes: Buffer): string {
  return createHash("sha1").update(bytes).digest("hex");
}

// Reading archives back: every entry of a ZIP or gzipped TAR held in memory.

/** Entry name -> content ("dir/" entries map to an empty string). */
export async function readZip(bytes: Buffer): Promise<Map<string, string>> {
  const zip = await yauzl.fromBufferPromise(bytes, { lazyEntries: true });
  const entries = new Map<string, string>();
  for await (const entry of zip.eachEntry()) {
    if (entry.fileName.endsWith("/")) {
      entries.set(entry.fileName, "");
      continue;
    }
    const stream = await zip.openReadStreamPromise(entry);
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
    entries.set(entry.fileName, Buffer.concat(chunks).toString("utf8"));
  }
  return entries;
}

/** Entry name -> content for a .tgz; directories end with "/". */
export async function readTgz(bytes: Buffer): Promise<Map<string, string>> {
  const extract = tar.extract();
  const entries = new Map<string, string>();
  const done = (async () => {
    for await (const entry of extract) {
      const chunks: Buffer[] = [];
      for await (const chunk of entry as AsyncIterable<Buffer>) chunks.push(chunk);
      const name =
        entry.header.type === "directory" && !entry.header.name.endsWith("/")
          ? `${entry.header.name}/`
          : entry.header.name;
      entries.set(name, Buffer.concat(chunks).toString("utf8"));
    }
  })();
  extract.end(gunzipSync(bytes));
  await done;
  return entries;
}

/**
 * Replaces every occurrence of `from` in an archive's bytes (local headers and central directory
 * alike) by `to`, of the same length: yazl refuses unsafe names, so tests build an archive with a
 * stand-in name and patch it into the hostile one.
 */
export function renameInArchive(bytes: Buffer, from: string, to: string): Buffer {
  const needle = Buffer.from(from);
  const replacement = Buffer.from(to);
  expect(replacement.length).toBe(needle.length);
  const out = Buffer.from(bytes);
  let found = 0;
  for (let at = out.indexOf(needle); at !== -1; at = out.indexOf(needle, at + 1)) {
    replacement.copy(out, at);
    found += 1;
  }
  expect(found).toBeGreaterThan(0);
  return out;
}
