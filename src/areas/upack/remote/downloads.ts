import { PassThrough, type Readable, Transform, type TransformCallback } from "node:stream";
import { DomainError } from "../../../domain/errors.js";
import type { Principal } from "../../../domain/principal.js";
import type { FeedKeepers } from "../../../storage/blob-keeper.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import type { StoredPackage } from "../download/service.js";
import { checkPulledIdentity } from "./pulled-identity.js";
import { versionNotFound } from "../errors.js";
import { createRemoteLookup, type Located, type RemoteLookupDeps, type RemoteTarget } from "./lookup.js";
import type { UpackWriteService } from "../write/upload-service.js";

export type { Located, RemoteTarget } from "./lookup.js";

/**
 * Downloads of a universal feed with connectors (docs/compat.md 2.4, 2.5, 5.3): a version the feed
 * does not store is looked up in its connectors (in the feed's order, through their filters) and
 * served from the first upstream that has it.
 *
 * Every file an upstream sends is verified before a client gets all of it: it must hash to the
 * `sha1` the upstream lists for the version (when it lists a valid one), and its upack.json must
 * name the version asked for (remote/pulled-identity.ts). Verifying needs the whole file (a ZIP's
 * directory is at its end), so the bytes are written to the blob store as they arrive:
 *
 * - `download` streams them to the client at the same time, holding back the last WITHHELD_BYTES
 *   until the stored copy is verified. A refused file fails the response: before its first byte
 *   (a 502 naming the connector) when it is that small, else by aborting it without its end, so
 *   that no client ever has a complete wrong file (not even the ZIP's end record). When the feed
 *   caches connectors (`cacheConnectors`) and the caller has Feeds_PullPackage, the verified copy
 *   is saved through the upload service (cachePulled: the same validation as an upload) with
 *   `isCached`, and from then on served by the local path, upstream up or down; otherwise it is
 *   deleted once verified.
 * - `download-file` and `contentOnly` need the whole archive: it is fetched into the store first
 *   (verified the same way), kept as a cached version on the same conditions, and otherwise
 *   dropped once the archive is open.
 * - A version whose upstream lists no valid `sha1`, or a virtual one (its `sha1` is that of the
 *   manifest, not of the package the upstream assembles), is checked by its upack.json only, and
 *   never kept.
 * - A download served from the upstream is not counted (the version is not the feed's yet) and
 *   ignores Range (the whole file is sent); the deployment it announces (X-ProGet-Deployment-*) is
 *   recorded as for a stored version (download/routes.ts). Once kept, it is served like any other
 *   version.
 */
export interface RemoteDownloads {
  /** The version a download URL names, the feed's own or a connector's (remote/lookup.ts). */
  locate(feedName: string, tail: string, latest: boolean): Promise<Located>;
  /** The upstream's package file, streamed as it is verified, and maybe kept (see above). */
  stream(remote: RemoteTarget, options: PullOptions): Promise<{ body: Readable; length: number | undefined }>;
  /**
   * The whole package file in the store, verified, maybe kept as a cached version. Archive reads
   * open the blob range by range: release it only once the response is done (a kept one stays).
   */
  materialize(remote: RemoteTarget, options: PullOptions): Promise<{ file: StoredPackage; release(): Promise<void> }>;
}

export interface PullOptions {
  readonly principal: Principal;
  /** Whether the caller has Feeds_PullPackage on the feed; asked only when the feed caches connectors. */
  readonly canPull: () => Promise<boolean>;
  /** Where a pull that was refused or could not be kept is reported (it outlives the request). */
  readonly log: { warn(fields: object, message: string): void };
}

export interface RemoteDownloadsDeps extends RemoteLookupDeps {
  readonly blobs: BlobStore;
  readonly keepers: FeedKeepers;
  readonly write: Pick<UpackWriteService, "cachePulled">;
  /** Largest package kept (WHARF_MAX_UPLOAD_BYTES: a pulled package is an upload by other means). */
  readonly maxBytes: number;
}

/**
 * Bytes of a streamed file held back until it is verified: more than a ZIP's end record (22 bytes
 * and a comment of up to 64 KiB), so that a refused file never reaches a client as an archive.
 */
const WITHHELD_BYTES = 128 * 1024;

/** A verified upstream file in the store, held until `release` (which deletes it unless a version uses it). */
interface Pulled {
  readonly blob: BlobInfo;
  release(): Promise<void>;
}

export function createRemoteDownloads(deps: RemoteDownloadsDeps): RemoteDownloads {
  const { upstreams, blobs, keepers } = deps;
  /** Versions being pulled into the store: a second download meanwhile does not keep its copy. */
  const pulling = new Set<string>();

  async function shouldKeep(remote: RemoteTarget, options: PullOptions, key: string): Promise<boolean> {
    if (remote.sha1 === undefined || !remote.feed.settings.cacheConnectors || pulling.has(key)) return false;
    return options.canPull();
  }

  /** Saves a verified file as a cached version; a failure is reported, not thrown (it outlives the request). */
  async function keep(remote: RemoteTarget, options: PullOptions, blob: BlobInfo): Promise<void> {
    try {
      await deps.write.cachePulled({ feedId: remote.feed.id, principal: options.principal, blob, ...identity(remote) });
    } catch (error) {
      reportUnkept(options, remote, error);
    }
  }

  /** The upstream's file into the store, then verified (see above); a refused one is deleted again. */
  async function fetchVerified(remote: RemoteTarget, body: Readable, maxBytes?: number): Promise<Pulled> {
    const expected = remote.sha1 === undefined ? {} : { expected: { sha1: remote.sha1 } };
    // Into the store of the feed that caches it.
    const keeper = keepers.keeperFor(remote.feed.id);
    let blob: BlobInfo;
    let hold: () => void;
    try {
      ({ blob, release: hold } = await keeper.put(body, {
        ...(maxBytes === undefined ? {} : { maxBytes }),
        ...expected,
      }));
    } catch (error) {
      body.destroy();
      throw storeError(remote, error, deps.maxBytes);
    }
    const release = async () => {
      hold();
      await keeper.discardIfUnused(blob.sha256).catch(() => undefined);
    };
    try {
      await checkPulledIdentity(blobs, blob, remote);
    } catch (error) {
      await release();
      throw error;
    }
    return { blob, release };
  }

  async function open(remote: RemoteTarget) {
    const { connector, group, name, version } = remote;
    const download = await upstreams.download(connector, { group, name, version });
    if (download === undefined) throw versionNotFound(group, name, version);
    return download;
  }

  return {
    locate: createRemoteLookup(deps),

    async stream(remote, options) {
      const key = pullKey(remote);
      const download = await open(remote);
      const kept = await shouldKeep(remote, options, key).catch(() => false);
      if (kept) pulling.add(key);
      const source = download.body;
      // The upstream's guard bounds the body (WHARF_FETCH_MAX_BYTES); keeping checks maxBytes below.
      const spool = new PassThrough();
      const verified = fetchVerified(remote, spool);
      const client = withheldUntil(verified);
      source.on("error", (error) => {
        client.destroy(error);
        spool.destroy(error);
      });
      // A client that goes away stops the upstream, unless the bytes are being kept.
      client.on("close", () => {
        if (kept && !spool.destroyed) return;
        source.destroy();
        spool.destroy();
      });
      source.pipe(client);
      source.pipe(spool);
      void (async () => {
        try {
          const pulled = await verified;
          if (kept && pulled.blob.size <= deps.maxBytes) await keep(remote, options, pulled.blob);
          await pulled.release();
        } catch (error) {
          client.destroy(error instanceof Error ? error : new Error(String(error)));
          reportRefused(options, remote, error);
        } finally {
          if (kept) pulling.delete(key);
        }
      })();
      return { body: client, length: download.length };
    },

    async materialize(remote, options) {
      const download = await open(remote);
      const pulled = await fetchVerified(remote, download.body, deps.maxBytes);
      const key = pullKey(remote);
      if (await shouldKeep(remote, options, key).catch(() => false)) {
        pulling.add(key);
        await keep(remote, options, pulled.blob).finally(() => pulling.delete(key));
      }
      const file = { sha256: pulled.blob.sha256, size: pulled.blob.size, lastModified: remote.published ?? new Date() };
      // A kept version references the blob; otherwise it goes once the response is done.
      return { file, release: pulled.release };
    },
  };
}

const identity = (remote: RemoteTarget) => ({ group: remote.group, name: remote.name, version: remote.version });

function pullKey(remote: RemoteTarget): string {
  return `${remote.feed.id}\0${remote.group}\0${remote.name}\0${remote.version}`.toLowerCase();
}

/**
 * The client's copy: passed on as it comes, except for its last WITHHELD_BYTES (at least), which
 * go out once `verified` resolves. When it rejects, the stream fails with its error: before any
 * byte for a small file, else one tail short of complete, which aborts the response.
 */
function withheldUntil(verified: Promise<unknown>): Transform {
  const held: Buffer[] = [];
  let heldBytes = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      held.push(chunk);
      heldBytes += chunk.length;
      for (let first = held[0]; first !== undefined && heldBytes - first.length >= WITHHELD_BYTES; first = held[0]) {
        held.shift();
        heldBytes -= first.length;
        this.push(first);
      }
      callback();
    },
    flush(callback: TransformCallback) {
      verified.then(
        () => {
          for (const chunk of held.splice(0)) this.push(chunk);
          callback();
        },
        (error: unknown) => callback(error instanceof Error ? error : new Error(String(error))),
      );
    },
  });
}

/** A failed put of the upstream's bytes, as the 502 (or 504) the client gets. */
function storeError(remote: RemoteTarget, error: unknown, maxBytes: number): Error {
  if (!(error instanceof DomainError)) return error instanceof Error ? error : new Error(String(error));
  const name = remote.connector.name;
  if (error.code === "DIGEST_MISMATCH") {
    return new DomainError(
      "bad_gateway",
      "CONNECTOR_SHA1_MISMATCH",
      `Connector '${name}' sent a file for ${remote.name} ${remote.version} that does not hash to the SHA-1 it lists.`,
      { cause: error },
    );
  }
  if (error.code === "UPLOAD_TOO_LARGE") {
    return new DomainError(
      "bad_gateway",
      "CONNECTOR_TOO_LARGE",
      `Connector '${name}': the package is larger than ${maxBytes} bytes.`,
      { cause: error },
    );
  }
  return error;
}

/** A refusal (SHA-1, identity) is worth the administrator's attention; a client that went away is not. */
function reportRefused(options: PullOptions, remote: RemoteTarget, error: unknown): void {
  if (!(error instanceof DomainError) || error.kind !== "bad_gateway") return;
  options.log.warn(
    {
      code: error.code,
      connector: remote.connector.name,
      package: `${remote.group}/${remote.name}`,
      version: remote.version,
    },
    error.message,
  );
}

function reportUnkept(options: PullOptions, remote: RemoteTarget, error: unknown): void {
  const conflict = error instanceof DomainError && error.code === "VERSION_EXISTS";
  if (conflict) return; // another download or an upload stored it meanwhile: nothing lost
  options.log.warn(
    {
      err: error,
      connector: remote.connector.name,
      package: `${remote.group}/${remote.name}`,
      version: remote.version,
    },
    "package pulled from a connector was not cached",
  );
}
