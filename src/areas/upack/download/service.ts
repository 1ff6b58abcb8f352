import type { Readable } from "node:stream";
import { DomainError, notFound } from "../../../domain/errors.js";
import { parsePackagePath, quote } from "../../../domain/upack-manifest.js";
import { formatVersion } from "../../../domain/upack-version.js";
import { zipSubtreeToZip } from "../../../storage/archives.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import { zipSubtreeToTgz } from "../../../storage/tgz.js";
import { type ArchiveEntry, openZipBlob, type ZipReader } from "../../../storage/zip.js";
import type { Feed, FeedService } from "../../management/index.js";
import type { PackageDeploymentService } from "../../package-deployment/index.js";
import type { PackageFilePath } from "./path.js";
import { getUniversalFeed } from "../feed-lookup.js";
import type { DownloadRow, UpackQueryRepository } from "../read/query-repository.js";
import { packageNotFound, versionNotFound } from "../errors.js";

/** One version as addressed by a download URL. */
export interface DownloadTarget {
  readonly feedId: number;
  readonly versionId: number;
  readonly packageId: number;
  readonly group: string;
  readonly name: string;
  /** As stored (canonical text). */
  readonly version: string;
  readonly isVirtual: boolean;
  readonly stored: StoredPackage;
}

/** A package file in the blob store. */
export interface StoredPackage {
  readonly sha256: string;
  readonly size: number;
  readonly lastModified: Date;
}

/** What an assembler needs to build a virtual package (docs/compat.md 1.6). */
export interface VirtualPackageVersion {
  readonly feed: Feed;
  readonly versionId: number;
  readonly group: string;
  readonly name: string;
  readonly version: string;
  /** The stored virtual manifest (upack.json with `contents`), JSON text. */
  readonly manifest: string;
  /** When the virtual version was published: the time stamp of the entries Wharf writes itself. */
  readonly publishedAt: Date;
}

/**
 * Builds (or finds already built) the real package of a virtual one and stores it as a blob.
 * Plugged in through the read routes' options; the default refuses (VIRTUAL_ASSEMBLY_UNAVAILABLE).
 */
export type AssembleVirtual = (version: VirtualPackageVersion) => Promise<StoredPackage>;

export const assemblyUnavailable: AssembleVirtual = async () => {
  throw new DomainError("unsupported", "VIRTUAL_ASSEMBLY_UNAVAILABLE", "virtual package assembly is not available yet");
};

export interface UpackDownloadService {
  /**
   * The feed and version a download URL names: `tail` is everything after `download…/`, the
   * version its last segment unless `latest` is present (docs/compat.md 2.12). 400 without a version
   * and without `latest`; 404 for an unknown feed, package or version.
   */
  resolve(feedName: string, tail: string, latest: boolean): Promise<{ feed: Feed; target: DownloadTarget }>;
  /** The package file to serve: the stored one, or for a virtual package the assembled one. */
  packageFile(feed: Feed, target: DownloadTarget): Promise<StoredPackage>;
  countDownload(target: DownloadTarget): Promise<void>;
  /** The `package/` contents as a new archive, streamed (never buffered) from the stored file. */
  openContents(file: StoredPackage, format: "zip" | "tgz"): Promise<Readable>;
  /** The entry `path` names, exact match first, then ignoring case (docs/compat.md 1.1); 403/404. */
  openFile(file: StoredPackage, path: PackageFilePath): Promise<PackageFile>;
  /** The virtual manifest of a virtual package; 404 for any other (docs/PRODUCT.md). */
  virtualManifest(target: DownloadTarget): Promise<string>;
  /** Stores the deployment a download announces (X-ProGet-Deployment-* headers, docs/compat.md 2.4); absent: ignored. */
  readonly recordDeployment?: PackageDeploymentService["recordDownload"] | undefined;
}

/** One file inside a package; `close` releases the archive when the file is not streamed. */
export interface PackageFile {
  readonly entry: ArchiveEntry;
  /** The file's bytes; the archive closes when the stream ends or is destroyed. */
  stream(): Readable;
  close(): Promise<void>;
}

export interface UpackDownloadServiceDeps {
  readonly repository: UpackQueryRepository;
  readonly feeds: FeedService;
  readonly blobs: BlobStore;
  readonly assembleVirtual: AssembleVirtual;
  /** Where deployments announced by downloads are recorded (the package-deployment area); absent: nowhere. */
  readonly recordDeployment?: PackageDeploymentService["recordDownload"];
}

const CONTENT_PREFIX = "package/";

export function createUpackDownloadService(deps: UpackDownloadServiceDeps): UpackDownloadService {
  const { repository, feeds, blobs } = deps;

  return {
    recordDeployment: deps.recordDeployment,

    async resolve(feedName, tail, latest) {
      const feed = await getUniversalFeed(feeds, feedName);
      const path = parsePackagePath(tail.split("/"), { versionExpected: !latest });
      const groupKey = path.group.toLowerCase();
      const nameKey = path.name.toLowerCase();
      const versionText = path.version && formatVersion(path.version);
      const row = await repository.findDownload(feed.id, groupKey, nameKey, versionText?.toLowerCase());
      if (row) return { feed, target: toTarget(feed.id, row) };
      // Only a miss pays for the second lookup that makes the message precise.
      if (versionText === undefined || !(await repository.packageExists(feed.id, groupKey, nameKey))) {
        throw packageNotFound(path.group, path.name);
      }
      throw versionNotFound(path.group, path.name, versionText);
    },

    async packageFile(feed, target) {
      if (!target.isVirtual) return target.stored;
      const manifest = await repository.manifestOf(target.versionId);
      if (manifest === undefined) throw versionNotFound(target.group, target.name, target.version);
      const { versionId, group, name, version } = target;
      const publishedAt = target.stored.lastModified;
      return deps.assembleVirtual({ feed, versionId, group, name, version, manifest, publishedAt });
    },

    async countDownload(target) {
      await repository.recordDownload(target.feedId, target.versionId, target.packageId);
    },

    async openContents(file, format) {
      const reader = await openZipBlob(blobs, file.sha256);
      try {
        // Both take ownership of the reader: it closes when the stream ends, fails or is destroyed.
        return format === "tgz" ? zipSubtreeToTgz(reader, CONTENT_PREFIX) : zipSubtreeToZip(reader, CONTENT_PREFIX);
      } catch (error) {
        await reader.close();
        throw error;
      }
    },

    async openFile(file, path) {
      const reader = await openZipBlob(blobs, file.sha256);
      try {
        const entry = findFile(reader, path);
        return {
          entry,
          stream() {
            const stream = reader.openEntry(entry.name);
            stream.once("close", () => void reader.close());
            return stream;
          },
          close: () => reader.close(),
        };
      } catch (error) {
        await reader.close();
        throw error;
      }
    },

    async virtualManifest(target) {
      const manifest = target.isVirtual ? await repository.manifestOf(target.versionId) : undefined;
      if (manifest === undefined) {
        throw notFound(
          "NOT_A_VIRTUAL_PACKAGE",
          `${quote(`${target.name} ${target.version}`)} is not a virtual package; it has no .vpack file.`,
        );
      }
      return manifest;
    },
  };
}

function toTarget(feedId: number, row: DownloadRow): DownloadTarget {
  return {
    feedId,
    versionId: row.version_id,
    packageId: row.package_id,
    group: row.group_name,
    name: row.name,
    version: row.version,
    isVirtual: row.is_virtual === 1,
    stored: { sha256: row.blob_sha256, size: row.size, lastModified: new Date(row.published_at) },
  };
}

function findFile(reader: ZipReader, { path, namesDirectory }: PackageFilePath): ArchiveEntry {
  const entry = namesDirectory ? undefined : reader.findEntry(path, { ignoreCase: true });
  if (entry !== undefined && !entry.isDirectory) return entry;
  // Zips need not hold directory entries: a path is a directory when anything lies below it.
  const below = `${path.toLowerCase()}/`;
  if (entry !== undefined || reader.entries().some((e) => e.name.toLowerCase().startsWith(below))) {
    throw new DomainError("forbidden", "PATH_IS_DIRECTORY", `The path ${quote(path)} names a directory, not a file.`);
  }
  throw notFound("FILE_NOT_FOUND", `The file ${quote(path)} was not found in the package.`);
}
