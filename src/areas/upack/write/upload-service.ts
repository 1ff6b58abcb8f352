import type { ChangeCause } from "../../../lifecycle/events.js";
import { Readable } from "node:stream";
import type { Clock } from "../../../domain/clock.js";
import { DomainError, invalid, notFound } from "../../../domain/errors.js";
import { uploadTooLarge } from "../../../domain/upload-limit.js";
import { parsePackagePath, quote } from "../../../domain/upack-manifest.js";
import { canonicalVersion, formatVersion } from "../../../domain/upack-version.js";
import type { ClaimedDigests } from "../../../http/upload-digests.js";
import type { ArchiveLimits } from "../../../storage/archives.js";
import type { FeedKeepers } from "../../../storage/blob-keeper.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import { type DeleteOptions, type UpackWriteRepository, versionExists } from "../repository.js";
import {
  openSaveSession,
  type PreparedVersion,
  type SaveSession,
  type SaveTarget,
  type UploadResult,
} from "./save-session.js";
import type { UploadParams } from "./upload-params.js";

export type { UploadResult } from "./save-session.js";

export interface UpackWriteServiceDeps {
  readonly repository: UpackWriteRepository;
  readonly blobs: BlobStore;
  readonly keepers: FeedKeepers;
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
  readonly onFeedChanged?: (feedId: number) => Promise<void>;
}

export interface UploadCommand extends SaveTarget {
  readonly params: UploadParams;
  /** Opens the raw request body, when the request has one (anything but JSON or form); not read before. */
  readonly rawBody: (() => Readable) | undefined;
  /** The raw body's declared length (Content-Length), when there is one. */
  readonly rawBodyBytes?: number;
  readonly digests: ClaimedDigests;
}

/** A package file as a request carries it: a stream to read to its end, and what names it to the caller. */
export interface ReceivedFile {
  readonly stream: Readable;
  /** Digests the client claims for this file, verified while it is stored. */
  readonly digests: ClaimedDigests;
  /** The file's name as sent (a form's filename), for messages about it. */
  readonly label: string;
}

/** Several package files from one request (a form): stored all or none. */
export interface UploadFilesCommand extends SaveTarget {
  /**
   * Reads the request: hands each package file to `store` (which reads it to its end before it
   * resolves), then returns the upload's parameters, which apply to every file; they may come
   * after the files (a form's fields), so they are asked for last.
   */
  readonly receive: (store: (file: ReceivedFile) => Promise<void>) => Promise<UploadParams>;
}

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
  /**
   * Several package files (a form): each stored as it arrives, then each validated as `upload`
   * would, then all recorded in one transaction. Any refusal (a file that is no package, two files
   * of one version, a version that exists without the overwrite privilege) stores none.
   */
  uploadFiles(command: UploadFilesCommand): Promise<UploadResult[]>;
  /** Stores the version an imported file holds; a .vpack JSON text is wrapped as an upload's is (a new blob). */
  importPackage(command: ImportCommand): Promise<UploadResult>;
  /**
   * Keeps a pulled package as a cached version (`isCached`), validated and saved like an upload of
   * the same bytes, which must be a complete .upack (nothing is converted: the bytes are the
   * upstream's, served unchanged). Never replaces a version the feed has: 409 then.
   */
  cachePulled(command: CachePullCommand): Promise<UploadResult>;
  /**
   * `tail` is what follows `delete/`: `<group...>/<name>/<version>` (docs/compat.md 2.8, 2.12).
   * Answers true when it deleted; 404 when there is no such version. With `options.expectedBlob`
   * (retention: the blob it evaluated), only while the version is still that blob's, in the
   * delete's transaction: false, deleting nothing, when it is gone or was replaced by other bytes.
   */
  deleteVersion(feedId: number, tail: string, cause: ChangeCause, options?: DeleteOptions): Promise<boolean>;
}

export function createUpackWriteService(deps: UpackWriteServiceDeps): UpackWriteService {
  const { repository, keepers } = deps;

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

  /** Runs `work` in a save session (save-session.ts) in the feed's package store, closed whatever happens. */
  async function inSession<T>(feedId: number, work: (session: SaveSession) => Promise<T>): Promise<T> {
    const session = openSaveSession({ ...deps, keeper: keepers.keeperFor(feedId) });
    try {
      return await work(session);
    } finally {
      await session.close();
    }
  }

  return {
    async upload(command) {
      const open = contentSource(command);
      await refuseEarly(command);
      return inSession(command.feedId, async (session) => {
        // The one pass over the bytes: hashed, counted and checked against the claims while stored.
        const uploaded = await session.store(await open(), {
          maxBytes: deps.maxUploadBytes,
          expected: command.digests,
          ...(command.rawBody !== undefined && command.rawBodyBytes !== undefined
            ? { declaredBytes: command.rawBodyBytes }
            : {}),
        });
        return only(await session.commit(command, [await session.prepare(uploaded, command.params)]));
      });
    },

    async uploadFiles(command) {
      return inSession(command.feedId, async (session) => {
        const files: Array<{ readonly label: string; readonly blob: BlobInfo }> = [];
        const params = await command.receive(async ({ stream, digests, label }) => {
          files.push({
            label,
            blob: await session.store(stream, { maxBytes: deps.maxUploadBytes, expected: digests }),
          });
        });
        if (params.contentB64 !== undefined || params.contentUrl !== undefined) {
          const which = params.contentB64 !== undefined ? "content-b64" : "content-url";
          throw invalid("CONFLICTING_CONTENT", `'${which}' cannot be combined with a package in the request body.`);
        }
        const prepared: PreparedVersion[] = [];
        for (const { label, blob } of files) prepared.push(await naming(label, session.prepare(blob, params)));
        refuseDuplicates(prepared);
        return session.commit(command, prepared);
      });
    },

    async importPackage(command) {
      const { source } = command;
      try {
        return await inSession(command.feedId, async (session) => {
          const file =
            "blob" in source
              ? await session.hold(source.blob)
              : await session.store(source.open(), { maxBytes: deps.maxUploadBytes });
          // No request parameters: the identity and metadata come from the file alone.
          return only(await session.commit(command, [await session.prepare(file, { metadata: {} })]));
        });
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
      return inSession(command.feedId, async (session) => {
        const file = await session.hold(blob);
        const prepared = await session.prepare(file, { group, name, version, metadata: {} }, { pulled: true });
        return only(await session.commit(target, [prepared], { pulled: true }));
      });
    },

    async deleteVersion(feedId, tail, cause, options) {
      const path = parsePackagePath(tail.split("/"), { versionExpected: true });
      if (path.version === undefined) throw new Error("parsePackagePath returned no version");
      const version = formatVersion(path.version);
      const identity = { group: path.group, name: path.name, version };
      const removed = await repository.deleteVersion(feedId, identity, cause, options);
      if (!removed) {
        if (options?.expectedBlob !== undefined) return false;
        const id = `${path.group ? `${path.group}/` : ""}${path.name} ${version}`;
        throw notFound("PACKAGE_NOT_FOUND", `The package was not found: ${quote(id)}.`);
      }
      await deps.onFeedChanged?.(feedId);
      await keepers
        .keeperFor(feedId)
        .discardIfUnused(removed.blobSha256)
        .catch(() => undefined);
      return true;
    },
  };
}

/** The one result of a save of one version. */
function only(results: readonly UploadResult[]): UploadResult {
  const [result] = results;
  if (result === undefined || results.length !== 1) throw new Error(`expected one result, got ${results.length}`);
  return result;
}

/** A refusal of one of several files names the file it is about. */
async function naming<T>(label: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!(error instanceof DomainError) || label === "") throw error;
    throw new DomainError(error.kind, error.code, `${quote(label)}: ${error.message}`, {
      cause: error,
      retryAfterSeconds: error.retryAfterSeconds,
    });
  }
}

/** Two files of one version in one request would replace each other: refused (docs/seed-api.md A: duplicates are 400). */
function refuseDuplicates(prepared: readonly PreparedVersion[]): void {
  const seen = new Set<string>();
  for (const { row } of prepared) {
    const key = `${row.group}/${row.name}/${row.version}`.toLowerCase();
    if (seen.has(key)) {
      const id = `${row.group ? `${row.group}/` : ""}${row.name} ${row.version}`;
      throw invalid("FORM_DUPLICATE_PACKAGE", `The request holds ${quote(id)} twice: send each version once.`);
    }
    seen.add(key);
  }
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
    throw uploadTooLarge(maxBytes);
  }
  return Buffer.from(compact, "base64");
}
