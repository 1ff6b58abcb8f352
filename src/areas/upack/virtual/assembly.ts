/**
 * Assembling a virtual package (docs/compat.md 1.6): the package a download of a virtual version
 * returns, built from the packages of the same feed and the URLs its manifest names. The archive
 * is streamed to a temporary file (nothing is held in memory whole), then put into the blob store;
 * virtual/cache.ts remembers the result so that assembly happens once per version.
 */
import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type yazl from "yazl";
import { conflict, DomainError } from "../../../domain/errors.js";
import type { UpackVersion } from "../../../domain/upack-version.js";
import {
  assembledManifestJson,
  type VirtualContentItem,
  type VirtualManifest,
  type VirtualSource,
} from "../../../domain/vpack.js";
import type { GuardedFetch } from "../../../net/fetch-guard.js";
import {
  type ArchiveLimits,
  checkEntryName,
  DEFAULT_ARCHIVE_LIMITS,
  selectSubtree,
  writeZipFile,
  zipMode,
} from "../../../storage/archives.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import { type ArchiveEntry, openZipBlob, type ZipReader } from "../../../storage/zip.js";
import { describeFailure, describeSource } from "./errors.js";
import { AssemblyBudget, fileNameFromUrl, PathClaims, SourceMeter } from "./paths.js";

export { type AssembledCache, type AssembledPackage, createAssembledCache } from "./cache.js";

export interface AssemblyDeps {
  /** A package version of the feed the virtual package is in (docs/compat.md 1.6: "the same feed"). */
  resolvePackage(
    group: string,
    name: string,
    version: UpackVersion,
  ): Promise<{ blobSha256: string; sha1: string } | undefined>;
  readonly blobs: BlobStore;
  /** The server-side fetch guard: it bounds every URL source's address, time and size. */
  readonly fetch: GuardedFetch;
  /** Where the archive is written before it goes into the blob store; created if missing. */
  readonly tmpDir: string;
  /** Applied to each referenced package and to the assembled package as a whole. */
  readonly limits?: ArchiveLimits;
  /**
   * Timestamp of the entries Wharf writes itself (upack.json, URL files). Fixed rather than "now"
   * so that assembling the same sources twice gives the same bytes: racing downloads then store
   * one blob, and the SHA-1 a client saw stays valid.
   */
  readonly modified?: Date;
}

const DEFAULT_MODIFIED = new Date(Date.UTC(2000, 0, 1));

/**
 * Builds the package: `upack.json` (the virtual manifest minus `contents` and `metaContents`),
 * then `contents` under `package/` and `metaContents` at the archive root, in order. A path that
 * is already taken is skipped (first writer wins, the current doc's "ignore if it already
 * exists"). Any failure fails the whole assembly with a DomainError that names the item:
 * conflict (409) for references this feed cannot satisfy (missing package, other SHA-1, refused
 * URL), bad_gateway/gateway_timeout for URL sources that fail, too_large past the limits.
 */
export async function assembleVirtualPackage(manifest: VirtualManifest, deps: AssemblyDeps): Promise<BlobInfo> {
  await mkdir(deps.tmpDir, { recursive: true });
  const file = join(deps.tmpDir, `vpack-${randomUUID()}.upack`);
  const assembly = new Assembly(deps);
  try {
    await writeZipFile(file, [], (zip) => assembly.fill(zip, manifest));
    return await deps.blobs.put(createReadStream(file));
  } finally {
    await assembly.close();
    await rm(file, { force: true });
  }
}

type Fail = (error: unknown) => void;

class Assembly {
  readonly #claims = new PathClaims();
  readonly #budget: AssemblyBudget;
  readonly #limits: ArchiveLimits;
  readonly #modified: Date;
  /** By blob address: a package named twice is read once. */
  readonly #readers = new Map<string, Promise<ZipReader>>();
  readonly #streams = new Set<Readable>();
  #closed = false;

  constructor(private readonly deps: AssemblyDeps) {
    this.#limits = deps.limits ?? DEFAULT_ARCHIVE_LIMITS;
    this.#budget = new AssemblyBudget(this.#limits);
    this.#modified = deps.modified ?? DEFAULT_MODIFIED;
  }

  async fill(zip: yazl.ZipFile, manifest: VirtualManifest): Promise<void> {
    const json = Buffer.from(`${JSON.stringify(assembledManifestJson(manifest), null, 2)}\n`);
    // Claimed first, so that no source can replace the manifest (referenced manifests are not used).
    this.#claims.claimFile("upack.json");
    this.#budget.addEntry("upack.json", json.length);
    zip.addBuffer(json, "upack.json", { mtime: this.#modified });
    const items = [
      ...manifest.contents.map((item, index) => ({ item, at: `contents[${index}]`, root: "package/" })),
      ...manifest.metaContents.map((item, index) => ({ item, at: `metaContents[${index}]`, root: "" })),
    ];
    for (const { item, at, root } of items) {
      const fail: Fail = (error) => zip.emit("error", describeFailure(error, at, item.source));
      try {
        await this.#add(zip, item, root, fail);
      } catch (error) {
        throw describeFailure(error, at, item.source);
      }
    }
  }

  /** Destroys what is still streaming (after a failure) and closes every package read. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const stream of this.#streams) stream.destroy();
    const readers = [...this.#readers.values()];
    // A reader that failed to open has nothing to close; its error was reported where it was used.
    await Promise.all(readers.map((reader) => reader.then((r) => r.close()).catch(() => undefined)));
  }

  async #add(zip: yazl.ZipFile, item: VirtualContentItem, root: string, fail: Fail): Promise<void> {
    const { source, virtualPath } = item;
    if (source.kind === "asset") {
      throw conflict(
        "VPACK_ASSET_SOURCE_UNSUPPORTED",
        "Asset-directory sources are not supported; use a url source pointing at the asset's content URL.",
      );
    }
    if (source.kind === "url") {
      // The doc's own example puts a URL at `virtualPath` whatever the type: the path is the file.
      // With no path (a bare URL string), the file keeps the URL's file name.
      const leaf = virtualPath !== "" ? virtualPath : fileNameFromUrl(source.url);
      if (leaf === undefined) {
        throw conflict("VPACK_URL_NO_FILE_NAME", "The URL names no file; give the item a virtualPath.");
      }
      return this.#addUrl(zip, checkEntryName(root + leaf), source, fail);
    }
    const reader = await this.#openPackage(source);
    if (item.type === "virtualFile") {
      const entry = reader.findEntry(source.packagePath, { ignoreCase: true });
      if (entry === undefined || entry.isDirectory) {
        const where = JSON.stringify(source.packagePath);
        throw conflict("VPACK_PACKAGE_PATH_NOT_FOUND", `The package has no file ${where} (packagePath).`);
      }
      return this.#addEntry(zip, reader, entry, checkEntryName(root + virtualPath), fail);
    }
    const dir = virtualPath === "" ? root : `${root}${virtualPath}/`;
    const prefix = source.packagePath === "" ? "" : `${source.packagePath}/`;
    for (const { entry, path } of selectSubtree(reader, prefix)) {
      // The whole archive was asked for; its manifest is still not used (docs/compat.md 1.6).
      if (prefix === "" && path.toLowerCase() === "upack.json") continue;
      const name = checkEntryName(dir + path);
      if (!entry.isDirectory) this.#addEntry(zip, reader, entry, name, fail);
      else if (this.#claims.claimDirectory(name)) {
        this.#budget.addEntry(name, 0);
        zip.addEmptyDirectory(name, { mtime: entry.modified, ...zipMode(true, entry.mode) });
      }
    }
  }

  async #openPackage(source: Extract<VirtualSource, { kind: "package" }>): Promise<ZipReader> {
    const found = await this.deps.resolvePackage(source.group, source.name, source.version);
    const id = describeSource(source);
    if (found === undefined) throw conflict("VPACK_PACKAGE_MISSING", `The package ${id} is not in this feed.`);
    const actual = found.sha1.toLowerCase();
    if (source.sha1 !== undefined && actual !== source.sha1) {
      throw conflict(
        "VPACK_PACKAGE_HASH_MISMATCH",
        `The package ${id} in this feed has SHA-1 ${actual}, not ${source.sha1}.`,
      );
    }
    let reader = this.#readers.get(found.blobSha256);
    if (reader === undefined) {
      reader = openZipBlob(this.deps.blobs, found.blobSha256, this.#limits);
      this.#readers.set(found.blobSha256, reader);
    }
    return reader;
  }

  #addEntry(zip: yazl.ZipFile, reader: ZipReader, entry: ArchiveEntry, name: string, fail: Fail): void {
    if (!this.#claims.claimFile(name)) return;
    this.#budget.addEntry(name, entry.size);
    const options = { size: entry.size, mtime: entry.modified, ...zipMode(false, entry.mode) };
    zip.addReadStreamLazy(name, options, (ready) => {
      // After a failure the archive is being thrown away: leave yazl waiting rather than read on.
      if (this.#closed) return;
      try {
        ready(null, this.#track(reader.openEntry(entry.name), fail));
      } catch (error) {
        fail(error);
      }
    });
  }

  #addUrl(zip: yazl.ZipFile, name: string, source: { url: string; sha1?: string }, fail: Fail): void {
    // Claimed before fetching: a URL whose path is taken is never fetched at all.
    if (!this.#claims.claimFile(name)) return;
    this.#budget.addEntry(name, 0);
    // Fetched only when yazl reaches the entry: a response waiting its turn would run into the
    // guard's deadline, which covers the body too.
    zip.addReadStreamLazy(name, { mtime: this.#modified }, (ready) => {
      if (this.#closed) return;
      const meter = this.#track(new SourceMeter(name, source.sha1, this.#budget), fail);
      ready(null, meter);
      this.#fetchBody(source.url).then(
        (body) => {
          if (meter.destroyed) body.destroy();
          else pipeline(body, meter).catch(() => undefined); // a failure is already meter's error
        },
        (error: Error) => meter.destroy(error),
      );
    });
  }

  async #fetchBody(url: string): Promise<Readable> {
    const response = await this.deps.fetch(url);
    if (response.status !== 200) {
      response.body.destroy();
      throw new DomainError("bad_gateway", "VPACK_URL_FAILED", `The server answered ${response.status}.`);
    }
    return response.body;
  }

  #track<T extends Readable>(stream: T, fail: Fail): T {
    this.#streams.add(stream);
    stream.once("close", () => this.#streams.delete(stream));
    stream.on("error", fail); // yazl does not listen for errors on the streams it reads
    return stream;
  }
}
