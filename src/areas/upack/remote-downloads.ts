import { createHash } from "node:crypto";
import { PassThrough, type Readable, Transform, type TransformCallback } from "node:stream";
import { DomainError } from "../../domain/errors.js";
import type { Principal } from "../../domain/principal.js";
import type { BlobKeeper } from "../../storage/blob-keeper.js";
import type { BlobInfo, BlobStore } from "../../storage/blob-store.js";
import type { StoredPackage } from "./download-service.js";
import { versionNotFound } from "./query-service.js";
import { createRemoteLookup, type Located, type RemoteLookupDeps, type RemoteTarget } from "./remote-lookup.js";
import type { UpackWriteService } from "./upload-service.js";

export type { Located, RemoteTarget } from "./remote-lookup.js";

/**
 * Downloads of a universal feed with connectors (compat.md 2.4, 2.5, 5.3): a version the feed
 * does not store is looked up in its connectors (in the feed's order, through their filters) and
 * served from the first upstream that has it.
 *
 * - `download` streams the upstream's bytes to the client while, when the feed caches connectors
 *   (`cacheConnectors`) and the caller has Feeds_PullPackage, putting the same bytes into the blob
 *   store; the file must hash to the `sha1` the upstream lists for the version, else nothing is
 *   kept and the client's response is aborted before its last bytes (the client sees a failed
 *   download, never a complete wrong file). Once stored, the version is saved through the upload
 *   service (cachePulled: the same validation as an upload) with `isCached`, and from then on is
 *   served by the local path, upstream up or down.
 * - `download-file` and `contentOnly` need the whole archive: it is fetched into the store first
 *   (verified the same way), kept as a cached version on the same conditions, and otherwise
 *   dropped once the archive is open.
 * - A version whose upstream lists no valid `sha1`, or a virtual one (its `sha1` is that of the
 *   manifest, not of the package the upstream assembles), cannot be verified: it is streamed but
 *   never kept.
 * - A download served from the upstream is not counted, records no deployment it announces
 *   (X-ProGet-Deployment-*) and ignores Range (the whole file is sent): the version is not the
 *   feed's yet. Once kept, it is served like any other version.
 */
export interface RemoteDownloads {
  /** The version a download URL names, the feed's own or a connector's (remote-lookup.ts). */
  locate(feedName: string, tail: string, latest: boolean): Promise<Located>;
  /** The upstream's package file, streamed, and maybe kept (see above). */
  stream(remote: RemoteTarget, options: PullOptions): Promise<{ body: Readable; length: number | undefined }>;
  /**
   * The whole package file in the store, maybe kept as a cached version. Archive reads open the
   * blob range by range: release it only once the response is done (a kept one stays).
   */
  materialize(remote: RemoteTarget, options: PullOptions): Promise<{ file: StoredPackage; release(): Promise<void> }>;
}

export interface PullOptions {
  readonly principal: Principal;
  /** Whether the caller has Feeds_PullPackage on the feed; asked only when the feed caches connectors. */
  readonly canPull: () => Promise<boolean>;
  /** Where a pull that could not be kept is reported (it outlives the request). */
  readonly log: { warn(fields: object, message: string): void };
}

export interface RemoteDownloadsDeps extends RemoteLookupDeps {
  readonly blobs: BlobStore;
  readonly keeper: BlobKeeper;
  readonly write: Pick<UpackWriteService, "cachePulled">;
  /** Largest package kept (WHARF_MAX_UPLOAD_BYTES: a pulled package is an upload by other means). */
  readonly maxBytes: number;
}

export function createRemoteDownloads(deps: RemoteDownloadsDeps): RemoteDownloads {
  const { upstreams, blobs, keeper } = deps;
  /** Versions being pulled into the store: a second download meanwhile only streams. */
  const pulling = new Set<string>();

  async function shouldKeep(remote: RemoteTarget, options: PullOptions, key: string): Promise<boolean> {
    if (remote.sha1 === undefined || !remote.feed.settings.cacheConnectors || pulling.has(key)) return false;
    return options.canPull();
  }

  /** Saves the blob `store` puts as a cached version; until then a second download only streams. */
  async function keep(
    remote: RemoteTarget,
    options: PullOptions,
    key: string,
    store: () => Promise<BlobInfo>,
  ): Promise<void> {
    pulling.add(key);
    try {
      const blob = await store();
      // The save path holds the blob, and deletes it again unless the version was saved.
      await deps.write.cachePulled({ feedId: remote.feed.id, principal: options.principal, blob, ...identity(remote) });
    } finally {
      pulling.delete(key);
    }
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
      const source = download.body;
      const client = verifying(remote);
      const store = kept ? new PassThrough() : undefined;
      source.on("error", (error) => {
        client.destroy(error);
        store?.destroy(error);
      });
      // A client that goes away stops the upstream, unless the bytes are being kept.
      client.on("close", () => {
        if (store === undefined || store.destroyed) source.destroy();
      });
      source.pipe(client);
      if (store !== undefined) {
        source.pipe(store);
        const put = () => blobs.put(store, { maxBytes: deps.maxBytes, expected: { sha1: remote.sha1 ?? "" } });
        keep(remote, options, key, put).catch((error: unknown) => {
          // Unpiped by its close, so that the client's copy goes on.
          store.destroy();
          if (client.destroyed) source.destroy();
          reportUnkept(options, remote, error);
        });
      }
      return { body: client, length: download.length };
    },

    async materialize(remote, options) {
      const download = await open(remote);
      const expected = remote.sha1 === undefined ? {} : { expected: { sha1: remote.sha1 } };
      let blob;
      try {
        blob = await blobs.put(download.body, { maxBytes: deps.maxBytes, ...expected });
      } catch (error) {
        download.body.destroy();
        throw storeError(remote, error, deps.maxBytes);
      }
      const release = await keeper.hold(blob.sha256);
      const key = pullKey(remote);
      if (await shouldKeep(remote, options, key).catch(() => false)) {
        await keep(remote, options, key, async () => blob).catch((error: unknown) =>
          reportUnkept(options, remote, error),
        );
      }
      const file = { sha256: blob.sha256, size: blob.size, lastModified: remote.published ?? new Date() };
      return {
        file,
        async release() {
          release();
          // A kept version references the blob; otherwise it goes now.
          await keeper.discardIfUnused(blob.sha256).catch(() => undefined);
        },
      };
    },
  };
}

const identity = (remote: RemoteTarget) => ({ group: remote.group, name: remote.name, version: remote.version });

function pullKey(remote: RemoteTarget): string {
  return `${remote.feed.id}\0${remote.group}\0${remote.name}\0${remote.version}`.toLowerCase();
}

/**
 * The client's copy: hashed on the way, with the last chunk held back until the whole file is
 * known to hash to the upstream's `sha1`. A mismatch fails the stream, which aborts the response
 * one chunk short of complete.
 */
function verifying(remote: RemoteTarget): Transform {
  const expected = remote.sha1;
  const hash = createHash("sha1");
  let held: Buffer | undefined;
  return new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      hash.update(chunk);
      if (expected === undefined) return callback(null, chunk);
      const previous = held;
      held = chunk;
      callback(null, previous);
    },
    flush(callback: TransformCallback) {
      if (expected === undefined) return callback();
      const actual = hash.digest("hex");
      if (actual !== expected) return callback(sha1Mismatch(remote, actual));
      callback(null, held);
    },
  });
}

function sha1Mismatch(remote: RemoteTarget, actual: string): DomainError {
  return new DomainError(
    "bad_gateway",
    "CONNECTOR_SHA1_MISMATCH",
    `Connector '${remote.connector.name}' sent a file for ${remote.name} ${remote.version} whose SHA-1 (${actual}) ` +
      `is not the one it lists (${remote.sha1 ?? ""}); the download was refused.`,
  );
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
    );
  }
  if (error.code === "UPLOAD_TOO_LARGE") {
    return new DomainError(
      "bad_gateway",
      "CONNECTOR_TOO_LARGE",
      `Connector '${name}': the package is larger than ${maxBytes} bytes.`,
    );
  }
  return error;
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
