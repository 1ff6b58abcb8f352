import type { Readable } from "node:stream";
import type { Clock } from "../../../domain/clock.js";
import { invalid } from "../../../domain/errors.js";
import { type Principal, principalName } from "../../../domain/principal.js";
import { manifestToJson } from "../../../domain/upack-manifest.js";
import { versionSortKey } from "../../../domain/upack-version-sort.js";
import { formatVersion } from "../../../domain/upack-version.js";
import type { ArchiveLimits } from "../../../storage/archives.js";
import type { BlobKeeper, HeldBlob } from "../../../storage/blob-keeper.js";
import type { BlobInfo, BlobStore, PutOptions } from "../../../storage/blob-store.js";
import { actorOf, type ChangeCause } from "../../../lifecycle/events.js";
import type { NewVersion, UpackWriteRepository } from "../repository.js";
import { packageFromUpload } from "./upload-archive.js";
import type { UploadParams } from "./upload-params.js";

/** What an upload, import or pull answers: the stored version. */
export interface UploadResult {
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly sha1: string;
  readonly sha256: string;
  readonly size: number;
  readonly replaced: boolean;
}

/** Who stores versions where. */
export interface SaveTarget {
  readonly feedId: number;
  readonly principal: Principal;
  /** Whether the caller may replace an existing version (Feeds_OverwritePackage). */
  readonly canOverwrite: () => Promise<boolean>;
  /**
   * How the save is told as an event (lifecycle/events.ts); by default the principal's own
   * upload. A promotion says `{ actor, as: "package.promoted", data }`.
   */
  readonly cause?: ChangeCause;
}

/** A package file read and validated, ready to be recorded. */
export interface PreparedVersion {
  readonly row: Omit<NewVersion, "feedId" | "publishedAt" | "publishedBy" | "isCached">;
}

/**
 * One save of one or several versions (an upload, a form of several packages, an import, a pulled
 * file), the way docs/STYLE.md "Data" orders writes: stream the package files into the blob store,
 * read and validate each (packageFromUpload), then one short transaction records them all, or none.
 * Every blob the save touched is held until `close`, which deletes those nothing references then.
 */
export interface SaveSession {
  /** Stores a package file from a stream (hashed, counted, checked against claimed digests). */
  store(source: Readable, options: Pick<PutOptions, "maxBytes" | "expected">): Promise<BlobInfo>;
  /** A package file already in the store (an asset's content, a pulled file). */
  hold(blob: BlobInfo): Promise<BlobInfo>;
  /** Reads and validates the package file `uploaded`; a plain archive is converted with `params`. */
  prepare(uploaded: BlobInfo, params: UploadParams, options?: { readonly pulled?: boolean }): Promise<PreparedVersion>;
  /** Records the versions in one transaction; results in the order given. */
  commit(
    target: SaveTarget,
    versions: readonly PreparedVersion[],
    options?: { readonly pulled?: boolean },
  ): Promise<UploadResult[]>;
  /** Releases every blob and deletes those that no version references. Call it whatever happened. */
  close(): Promise<void>;
}

export interface SaveSessionDeps {
  readonly repository: UpackWriteRepository;
  readonly blobs: BlobStore;
  readonly keeper: BlobKeeper;
  readonly clock: Clock;
  /** For TGZ conversion; on the data filesystem. */
  readonly tempDir: string;
  readonly limits?: ArchiveLimits;
  /** Called after every commit in a feed: assembled virtual packages may have been built from it. */
  readonly onFeedChanged?: (feedId: number) => Promise<void>;
}

export function openSaveSession(deps: SaveSessionDeps): SaveSession {
  const { keeper } = deps;
  const releases: Array<() => void> = [];
  const touched: string[] = [];
  const committed = new Set<string>();
  const replaced: string[] = [];
  const keep = ({ blob, release }: HeldBlob): BlobInfo => {
    touched.push(blob.sha256);
    releases.push(release);
    return blob;
  };

  return {
    store: async (source, options) => keep(await keeper.put(source, options)),
    hold: async (blob) => keep({ blob, release: await keeper.hold(blob.sha256) }),

    async prepare(uploaded, params, options = {}) {
      const store = async (source: Readable) => keep(await keeper.put(source));
      const file = await packageFromUpload(
        { blobs: deps.blobs, tempDir: deps.tempDir, store, ...(deps.limits ? { limits: deps.limits } : {}) },
        uploaded,
        params,
      );
      const { manifest, blob } = file;
      if (options.pulled && blob.sha256 !== uploaded.sha256) {
        throw invalid(
          "PULLED_NOT_A_PACKAGE",
          "The upstream's file is not a universal package (.upack with upack.json).",
        );
      }
      return {
        row: {
          group: manifest.group,
          name: manifest.name,
          version: formatVersion(manifest.version),
          sortKey: versionSortKey(manifest.version),
          manifest: JSON.stringify(manifestToJson(manifest)),
          blobSha256: blob.sha256,
          sha1: blob.sha1,
          ...(blob.md5 ? { md5: blob.md5 } : {}),
          ...(blob.sha512 ? { sha512: blob.sha512 } : {}),
          size: blob.size,
          fileList: JSON.stringify(file.fileList),
          isVirtual: manifest.isVirtual,
        },
      };
    },

    async commit(target, versions, options = {}) {
      const replace = await target.canOverwrite();
      const publishedBy = principalName(target.principal);
      const publishedAt = deps.clock.now().toISOString();
      const rows = versions.map(({ row }) => ({
        ...row,
        feedId: target.feedId,
        publishedAt,
        publishedBy,
        isCached: options.pulled === true,
      }));
      // Everything slow is done: one short transaction (docs/STYLE.md).
      const cause = target.cause ?? { actor: actorOf(target.principal) };
      const outcomes = await deps.repository.saveVersions(rows, { replace, cause });
      for (const row of rows) committed.add(row.blobSha256);
      for (const outcome of outcomes) if (outcome.replacedBlob !== undefined) replaced.push(outcome.replacedBlob);
      await deps.onFeedChanged?.(target.feedId);
      return rows.map((row, index) => ({
        group: row.group,
        name: row.name,
        version: row.version,
        sha1: row.sha1,
        sha256: row.blobSha256,
        size: row.size,
        replaced: outcomes[index]?.replaced === true,
      }));
    },

    async close() {
      for (const release of releases.splice(0)) release();
      const leftovers = new Set([...touched, ...replaced]);
      for (const sha256 of committed) leftovers.delete(sha256);
      // Best effort: what is not deleted now is garbage collection's.
      for (const sha256 of leftovers) await keeper.discardIfUnused(sha256).catch(() => undefined);
    },
  };
}
