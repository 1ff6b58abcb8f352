import { Readable } from "node:stream";
import type { Clock } from "../../../domain/clock.js";
import { DomainError, invalid, notFound } from "../../../domain/errors.js";
import type { Principal } from "../../../domain/principal.js";
import { manifestToJson, parsePackagePath, quote } from "../../../domain/upack-manifest.js";
import { versionSortKey } from "../../../domain/upack-version-sort.js";
import { canonicalVersion, formatVersion } from "../../../domain/upack-version.js";
import type { ArchiveLimits } from "../../../storage/archives.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import { type UpackWriteRepository, versionExists } from "../repository.js";
import { packageFromUpload } from "./upload-archive.js";
import type { BlobKeeper, HeldBlob } from "../../../storage/blob-keeper.js";
import type { ClaimedDigests } from "../../../http/upload-digests.js";
import type { UploadParams } from "./upload-params.js";

export interface UpackWriteServiceDeps {
  readonly repository: UpackWriteRepository;
  readonly blobs: BlobStore;
  readonly keeper: BlobKeeper;
  readonly clock: Clock;
  readonly maxUploadBytes: number;
  /** For TGZ conversion; on the data filesystem. */
  readonly tempDir: string;
  /** Fetches a `content-url` (through the SSRF guard); absent when an administrator has not enabled it. */
  readonly fetchContentUrl?: (url: string) => Promise<Readable>;
  readonly limits?: ArchiveLimits;
  /**
   * Called after every committed upload, replacement or deletion in a feed: assembled virtual
   * packages of that feed may have been built from what changed (virtual/download.ts).
   */
  readonly onFeedChanged?: (feedId: number) => void;
}

export interface UploadCommand {
  readonly feedId: number;
  readonly params: UploadParams;
  /** Opens the raw request body, when the request has one (anything but JSON or form); not read before. */
  readonly rawBody: (() => Readable) | undefined;
  readonly digests: ClaimedDigests;
  readonly principal: Principal;
  /** Whether the caller may replace an existing version (Feeds_OverwritePackage). */
  readonly canOverwrite: () => Promise<boolean>;
}

export interface UploadResult {
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly sha1: string;
  readonly sha256: string;
  readonly size: number;
  readonly replaced: boolean;
}

/** Who stores a version where: what uploads and imports share. */
type SaveTarget = Pick<UploadCommand, "feedId" | "principal" | "canOverwrite">;

/**
 * An import (docs/compat.md 2.9): a package file that is not a request body. It is validated and
 * stored exactly as an upload of the same bytes would be, identity and metadata from its
 * upack.json alone.
 */
export interface ImportCommand extends SaveTarget {
  /**
   * The file: a blob already in the store (an asset's content), which the version then references
   * as it is, without copying a byte; or a stream, stored first like an upload body.
   */
  readonly source: { readonly blob: BlobInfo } | { readonly open: () => Readable };
}

/**
 * A package file pulled from a connector's upstream (remote/downloads.ts), already stored as a
 * blob whose SHA-1 matched the one the upstream lists.
 */
export interface CachePullCommand extends Pick<SaveTarget, "feedId" | "principal"> {
  readonly blob: BlobInfo;
  /** The version the download asked for: the file's upack.json must name exactly this one. */
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

/** Uploads, imports and deletes of universal packages (docs/seed-api.md area A); throws DomainError, knows no HTTP. */
export interface UpackWriteService {
  upload(command: UploadCommand): Promise<UploadResult>;
  /** Stores the version an imported file holds; a .vpack JSON text is wrapped as an upload's is (a new blob). */
  importPackage(command: ImportCommand): Promise<UploadResult>;
  /**
   * Keeps a pulled package as a cached version (`isCached`), validated and saved like an upload of
   * the same bytes, which must be a complete .upack (nothing is converted: the bytes are the
   * upstream's, served unchanged). Never replaces a version the feed has: 409 then.
   */
  cachePulled(command: CachePullCommand): Promise<UploadResult>;
  /** `tail` is what follows `delete/`: `<group...>/<name>/<version>` (docs/compat.md 2.8, 2.12). */
  deleteVersion(feedId: number, tail: string): Promise<void>;
}

export function createUpackWriteService(deps: UpackWriteServiceDeps): UpackWriteService {
  const { repository, blobs, keeper } = deps;

  /**
   * The one source of the package bytes, or 400 for every combination the spec refuses. Returned
   * as a thunk so that nothing is fetched or decoded before the early checks pass.
   */
  function contentSource(command: UploadCommand): () => Promise<Readable> {
    const { contentB64, contentUrl } = command.params;
    if (contentB64 !== undefined && contentUrl !== undefined) {
      throw invalid("CONFLICTING_CONTENT", "Give either 'content-b64' or 'content-url', not both.");
    }
    if ((contentB64 !== undefined || contentUrl !== undefined) && command.rawBody !== undefined) {
      const which = contentB64 !== undefined ? "content-b64" : "content-url";
      throw invalid("CONFLICTING_CONTENT", `'${which}' cannot be combined with a package in the request body.`);
    }
    if (contentB64 !== undefined) {
      const bytes = decodeBase64(contentB64, deps.maxUploadBytes);
      return async () => Readable.from([bytes]);
    }
    if (contentUrl !== undefined) {
      const fetchContentUrl = deps.fetchContentUrl;
      if (!fetchContentUrl) {
        throw invalid(
          "CONTENT_URL_DISABLED",
          "content-url uploads are disabled; an administrator must enable them (WHARF_CONTENT_URL_UPLOADS=true).",
        );
      }
      return () => fetchContentUrl(contentUrl);
    }
    if (command.rawBody === undefined) {
      throw invalid(
        "NO_CONTENT",
        "The upload has no content: send the package as the request body, or give 'content-b64' or 'content-url'.",
      );
    }
    const body = command.rawBody;
    return async () => body();
  }

  /** Refuses a re-upload before its body is read, when the request already names the whole identity. */
  async function refuseEarly(command: UploadCommand): Promise<void> {
    const { group, name } = command.params;
    const version = command.params.version === undefined ? undefined : canonicalVersion(command.params.version);
    if (group === undefined || name === undefined || version === undefined) return;
    const existing = await repository.findVersion(command.feedId, { group, name, version });
    if (existing && !(await command.canOverwrite())) throw versionExists({ group, name, version: existing.version });
  }

  function publisherName(principal: Principal): string | undefined {
    if (principal.type === "user") return principal.userName;
    if (principal.type === "anonymous") return undefined;
    return principal.displayName ?? `API key ${principal.keyId}`;
  }

  /** A blob stored before this save (an asset's content, a pulled file), held for it. */
  async function holdStored(blob: BlobInfo): Promise<HeldBlob> {
    return { blob, release: await keeper.hold(blob.sha256) };
  }

  /**
   * The one save path of uploads and imports: the package file is the blob `obtain` stores or
   * holds (held until the end), read and validated by packageFromUpload, then recorded in one
   * short transaction. Every blob touched here that nothing references afterwards is deleted.
   */
  async function savePackage(
    target: SaveTarget,
    params: UploadParams,
    obtain: () => Promise<HeldBlob>,
    options: { readonly pulled?: boolean } = {},
  ): Promise<UploadResult> {
    // Every blob this save touches is held until the end, then deleted unless something uses it.
    const releases: Array<() => void> = [];
    const touched: string[] = [];
    const keep = ({ blob, release }: HeldBlob): BlobInfo => {
      touched.push(blob.sha256);
      releases.push(release);
      return blob;
    };
    let committed: string | undefined;
    let replacedBlob: string | undefined;
    try {
      const uploaded = keep(await obtain());
      const store = async (source: Readable) => keep(await keeper.put(source));
      const file = await packageFromUpload(
        { blobs, tempDir: deps.tempDir, store, ...(deps.limits ? { limits: deps.limits } : {}) },
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
      const version = formatVersion(manifest.version);
      const replace = await target.canOverwrite();
      const publishedBy = publisherName(target.principal);
      // Everything slow is done: one short transaction (docs/STYLE.md).
      const outcome = await repository.saveVersion(
        {
          feedId: target.feedId,
          group: manifest.group,
          name: manifest.name,
          version,
          sortKey: versionSortKey(manifest.version),
          manifest: JSON.stringify(manifestToJson(manifest)),
          blobSha256: blob.sha256,
          sha1: blob.sha1,
          ...(blob.md5 ? { md5: blob.md5 } : {}),
          ...(blob.sha512 ? { sha512: blob.sha512 } : {}),
          size: blob.size,
          fileList: JSON.stringify(file.fileList),
          isVirtual: manifest.isVirtual,
          publishedAt: deps.clock.now().toISOString(),
          publishedBy,
          isCached: options.pulled === true,
        },
        { replace },
      );
      committed = blob.sha256;
      replacedBlob = outcome.replacedBlob;
      deps.onFeedChanged?.(target.feedId);
      const { group, name } = manifest;
      return {
        group,
        name,
        version,
        sha1: blob.sha1,
        sha256: blob.sha256,
        size: blob.size,
        replaced: outcome.replaced,
      };
    } finally {
      for (const release of releases) release();
      const leftovers = new Set([...touched, ...(replacedBlob ? [replacedBlob] : [])]);
      if (committed !== undefined) leftovers.delete(committed);
      // Best effort: what is not deleted now is garbage collection's.
      for (const sha256 of leftovers) await keeper.discardIfUnused(sha256).catch(() => undefined);
    }
  }

  return {
    async upload(command) {
      const open = contentSource(command);
      await refuseEarly(command);
      // The one pass over the bytes: hashed, counted and checked against the claims while stored.
      return savePackage(command, command.params, async () =>
        keeper.put(await open(), { maxBytes: deps.maxUploadBytes, expected: command.digests }),
      );
    },

    async importPackage(command) {
      const { source } = command;
      const obtain =
        "blob" in source
          ? async () => holdStored(source.blob)
          : async () => keeper.put(source.open(), { maxBytes: deps.maxUploadBytes });
      try {
        // No request parameters: the identity and metadata come from the file alone.
        return await savePackage(command, { metadata: {} }, obtain);
      } catch (error) {
        // The upload message suggests naming the package, which an import cannot do.
        if (error instanceof DomainError && error.code === "MANIFEST_NOT_FOUND") {
          throw invalid(
            "MANIFEST_NOT_FOUND",
            "upack.json not found in package: only universal packages (.upack) and virtual packages (.vpack) " +
              "can be imported.",
          );
        }
        throw error;
      }
    },

    async cachePulled(command) {
      const { group, name, version, blob } = command;
      const target = { feedId: command.feedId, principal: command.principal, canOverwrite: async () => false };
      return savePackage(target, { group, name, version, metadata: {} }, async () => holdStored(blob), {
        pulled: true,
      });
    },

    async deleteVersion(feedId, tail) {
      const path = parsePackagePath(tail.split("/"), { versionExpected: true });
      if (path.version === undefined) throw new Error("parsePackagePath returned no version");
      const version = formatVersion(path.version);
      const removed = await repository.deleteVersion(feedId, { group: path.group, name: path.name, version });
      if (!removed) {
        const id = `${path.group ? `${path.group}/` : ""}${path.name} ${version}`;
        throw notFound("PACKAGE_NOT_FOUND", `The package was not found: ${quote(id)}.`);
      }
      deps.onFeedChanged?.(feedId);
      await keeper.discardIfUnused(removed.blobSha256).catch(() => undefined);
    },
  };
}

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * Strict base64 (standard or URL alphabet, padding optional, line breaks ignored): a typo is a 400,
 * not garbage. A space can only be a '+' that a form encoder left unescaped, so it is read as one.
 */
function decodeBase64(text: string, maxBytes: number): Buffer {
  const compact = text.replace(/[\r\n\t]+/g, "").replaceAll(" ", "+");
  if (!BASE64.test(compact) || compact.replace(/=+$/, "").length % 4 === 1) {
    throw invalid("INVALID_BASE64", "'content-b64' is not valid base64.");
  }
  if (Math.floor((compact.length * 3) / 4) - 2 > maxBytes) {
    throw new DomainError("too_large", "UPLOAD_TOO_LARGE", `The upload exceeds the limit of ${maxBytes} bytes.`);
  }
  return Buffer.from(compact, "base64");
}
