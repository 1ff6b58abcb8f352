import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import { DomainError } from "../../domain/errors.js";
import type { PackageSource, ResolvedPackage } from "../../drift/model.js";
import type { BlobStore } from "../../storage/blob-store.js";
import { openZipBlob } from "../../storage/zip.js";
import type { UpackDownloadService } from "../upack/index.js";

/**
 * Where `package` items get their packages on the Wharf host (issue 13 section 2): the universal
 * feeds' stored packages, read as the system, like the deploy-package step (releases
 * packageOpener). `resolve` names the exact version (`latest`: the highest) and the files under
 * package/ with size and SHA-256, read from the stored .upack once per package blob (content
 * addressed, so the answer never goes stale) and kept for the next check. The agent protocol
 * serves the same to agents (agent-routes.ts).
 */
const CONTENT_PREFIX = "package/";
/** Resolved file lists kept (a few hundred bytes to a few hundred KiB each). */
const CACHED_PACKAGES = 64;

export interface FeedPackageSourceDeps {
  readonly downloads: UpackDownloadService;
  readonly downloadBlobs: BlobStore;
}

export function createFeedPackageSource(upack: FeedPackageSourceDeps): PackageSource {
  /** By blob SHA-256, in use order (a Map iterates oldest first). */
  const files = new Map<string, Promise<ResolvedPackage["files"]>>();

  async function locate(feedName: string, group: string, name: string, version: string) {
    const latest = version.toLowerCase() === "latest";
    const tail = [group, name, ...(latest ? [] : [version])].filter((part) => part !== "").join("/");
    const { feed, target } = await upack.downloads.resolve(feedName, tail, latest);
    const file = await upack.downloads.packageFile(feed, target);
    return { version: target.version, sha256: file.sha256 };
  }

  async function listFiles(sha256: string): Promise<ResolvedPackage["files"]> {
    const reader = await openZipBlob(upack.downloadBlobs, sha256);
    try {
      const out: { path: string; size: number; sha256: string }[] = [];
      for (const entry of reader.entries()) {
        if (entry.isDirectory || !entry.name.startsWith(CONTENT_PREFIX)) continue;
        const hash = createHash("sha256");
        for await (const chunk of reader.openEntry(entry.name) as AsyncIterable<Buffer>) hash.update(chunk);
        out.push({ path: entry.name.slice(CONTENT_PREFIX.length), size: entry.size, sha256: hash.digest("hex") });
      }
      return out;
    } finally {
      await reader.close();
    }
  }

  function filesOf(sha256: string): Promise<ResolvedPackage["files"]> {
    let listed = files.get(sha256);
    if (listed !== undefined) {
      files.delete(sha256);
      files.set(sha256, listed);
      return listed;
    }
    listed = listFiles(sha256);
    files.set(sha256, listed);
    listed.catch(() => files.delete(sha256));
    while (files.size > CACHED_PACKAGES) files.delete(files.keys().next().value as string);
    return listed;
  }

  return {
    async resolve(feed, group, name, version, signal) {
      signal.throwIfAborted();
      let located: { version: string; sha256: string };
      try {
        located = await locate(feed, group, name, version);
      } catch (error) {
        // No such feed, package or version: the item is drifted or unknown, not the check failed.
        if (error instanceof DomainError && (error.kind === "not_found" || error.kind === "invalid")) return undefined;
        throw error;
      }
      return { version: located.version, files: await filesOf(located.sha256) };
    },

    async open(feed, group, name, version, signal): Promise<Readable> {
      signal.throwIfAborted();
      const located = await locate(feed, group, name, version);
      const stream = await upack.downloadBlobs.open(located.sha256);
      if (stream === undefined) {
        throw new DomainError(
          "unavailable",
          "PACKAGE_FILE_MISSING",
          `The file of ${name} ${located.version} is missing.`,
        );
      }
      return stream;
    },
  };
}
