import { createHash, randomUUID } from "node:crypto";
import { lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { BlobServiceClient, type ContainerClient, type StoragePipelineOptions } from "@azure/storage-blob";
import { invalid } from "../domain/errors.js";
import type { ResolveHost } from "../net/fetch-target.js";
import type { ProxySettings } from "../net/outbound-proxy.js";
import {
  type BlobInfo,
  type BlobReader,
  type BlobStore,
  contentRangeTotal,
  type PutOptions,
  type SizedReads,
  type TemporaryFiles,
} from "./blob-store.js";
import { azureFailure, isAzureAlreadyExists, isAzureNotFound } from "./azure-errors.js";
import { createFileBlobStore } from "./file-blob-store.js";
import { objectStoreAgent, storeProxyRouter } from "./store-lookup.js";

const ADDRESS = /^[0-9a-f]{64}$/;
const MiB = 1024 * 1024;
/** Azure allows up to 50,000 blocks of up to 4000 MiB; 8 MiB blocks reach 390 GiB, far past any package. */
const DEFAULT_BLOCK_BYTES = 8 * MiB;
/** How long a summed totalBytes is trusted when this instance wrote nothing (other nodes may have). */
const TOTAL_BYTES_MAX_AGE_MS = 30_000;
const LIST_PAGE_SIZE = 5000;

export interface AzureBlobStoreOptions {
  /** The seed's `ConnectionString`: account, key (or SAS) and endpoint. Never logged nor repeated in errors. */
  readonly connectionString: string;
  /** The seed's `ContainerName`; created on the first put when missing. */
  readonly containerName: string;
  /** The seed's `TargetPath`: a folder inside the container ("" or undefined: the container's root). */
  readonly targetPath?: string;
  /**
   * A local folder for the spool: each put is written (and hashed) here first, because a blob's
   * name is its SHA-256, known only after the last byte. Must not be shared with another store.
   */
  readonly tempDir: string;
  /** Size of the staged blocks; tests use small ones to exercise several blocks. */
  readonly blockBytes?: number;
  /** Passed to the SDK (retries, for instance). */
  readonly pipeline?: StoragePipelineOptions;
  /** Resolves the endpoint's host name (the system's DNS by default; tests answer themselves). */
  readonly resolveHost?: ResolveHost;
  /** The server's proxies (config.ts `outboundProxy`); none: the store is reached directly. */
  readonly outboundProxy?: ProxySettings;
}

/**
 * The BlobStore on an Azure blob container (the seed's Azure package store), through the official
 * SDK. Blobs are block blobs named `<TargetPath>/blobs/<sha256>`.
 *
 * A put streams into a local spool (a file blob store under `tempDir`, which gives the same
 * hashing, size limit, digest checks and abort handling as the filesystem store), then uploads the
 * file with its MD5 for Azure to verify: one Put Blob when it fits one block, else staged blocks,
 * each with its own MD5, and a commit of the block list. Either way a blob is wholly present or
 * absent: uncommitted blocks are invisible, and Azure discards blocks never committed (after a
 * week) on its own. The spool copy is removed once the blob is stored.
 */
export function createAzureBlobStore(options: AzureBlobStoreOptions): BlobStore & SizedReads {
  const container = containerClient(options);
  const prefix = `${normalizeTargetPath(options.targetPath)}blobs/`;
  const blockBytes = options.blockBytes ?? DEFAULT_BLOCK_BYTES;
  const spool = createFileBlobStore(options.tempDir);
  const blobClient = (sha256: string) => container.getBlockBlobClient(`${prefix}${sha256}`);

  /** Puts in this process holding the spool copy of an address: it is removed when the last one is done. */
  const spoolHolds = new Map<string, number>();
  /** Spool copies being removed, by address: a put of the same bytes waits before it looks for its copy. */
  const spoolRemovals = new Map<string, Promise<void>>();
  /** Uploads running in this process, by address: concurrent puts of the same bytes share one. */
  const uploads = new Map<string, Promise<void>>();
  let containerReady: Promise<void> | undefined;
  let totalCache: { bytes: number; at: number } | undefined;

  function ensureContainer() {
    containerReady ??= container.createIfNotExists().then(
      () => undefined,
      (error: unknown) => {
        containerReady = undefined;
        throw azureFailure(`creating the container ${options.containerName}`, error);
      },
    );
    return containerReady;
  }

  async function put(source: Readable | AsyncIterable<Uint8Array>, putOptions: PutOptions = {}): Promise<BlobInfo> {
    const { signal } = putOptions;
    let held: string | undefined;
    try {
      const info = await spool.put(source, {
        ...putOptions,
        beforePublish: async (sha256) => {
          await putOptions.beforePublish?.(sha256);
          // Held before the spool looks for its own copy, so no other put's cleanup removes it.
          spoolHolds.set(sha256, (spoolHolds.get(sha256) ?? 0) + 1);
          held = sha256;
          // A copy that the last put holding it is removing would be taken for this put's own,
          // then be gone when published: the spool looks once it is gone, and keeps this one.
          await spoolRemovals.get(sha256)?.catch(() => undefined);
        },
      });
      signal?.throwIfAborted();
      for (;;) {
        const shared = uploads.get(info.sha256);
        if (!shared) {
          const own = publish(info, signal).finally(() => uploads.delete(info.sha256));
          uploads.set(info.sha256, own);
          await own;
          return info;
        }
        try {
          await shared;
          return info;
        } catch (error) {
          // Another put's upload of the same bytes failed, perhaps only because that put was
          // aborted: this one still holds the spooled copy and uploads it itself.
          signal?.throwIfAborted();
          if (uploads.get(info.sha256) === shared) throw error;
        }
      }
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      throw error;
    } finally {
      if (held !== undefined) await releaseSpool(held);
    }
  }

  async function releaseSpool(sha256: string) {
    const left = (spoolHolds.get(sha256) ?? 1) - 1;
    if (left > 0) {
      spoolHolds.set(sha256, left);
      return;
    }
    spoolHolds.delete(sha256);
    const removal = spool.delete(sha256).finally(() => {
      if (spoolRemovals.get(sha256) === removal) spoolRemovals.delete(sha256);
    });
    spoolRemovals.set(sha256, removal);
    await removal;
  }

  /**
   * Uploads the spooled blob unless Azure already has it (same name, same size: the same bytes).
   * A blob that fits one block goes up in one Put Blob on condition that the name is free, so a new
   * blob costs one request and only one already there costs a look at its size; a larger one is
   * looked up first, then staged in blocks.
   */
  async function publish(info: BlobInfo, signal: AbortSignal | undefined) {
    if (info.size > blockBytes && (await statBlob(info.sha256))?.size === info.size) return;
    await ensureContainer();
    const reader = await spool.openReader(info.sha256);
    if (!reader) throw new Error(`the spooled copy of ${info.sha256} is missing`);
    try {
      if (info.size <= blockBytes) await publishWhole(info, reader, signal);
      else await publishInBlocks(info, reader, signal);
    } finally {
      await reader.close();
    }
  }

  async function publishWhole(info: BlobInfo, reader: BlobReader, signal: AbortSignal | undefined) {
    const body = Buffer.allocUnsafe(info.size);
    await readFully(reader, body, 0, info.size);
    const md5 = createHash("md5").update(body).digest();
    const upload = (onlyIfAbsent: boolean) =>
      blobClient(info.sha256).upload(body, info.size, {
        blobHTTPHeaders: { blobContentType: "application/octet-stream", blobContentMD5: md5 },
        transactionalContentMD5: md5,
        ...(onlyIfAbsent ? { conditions: { ifNoneMatch: "*" } } : {}),
        abortSignal: signal,
      });
    try {
      await upload(true);
    } catch (error) {
      if (!isAzureAlreadyExists(error)) throw azureFailure(`uploading ${info.sha256}`, error);
      if ((await statBlob(info.sha256))?.size === info.size) return;
      // Another size under this address is not these bytes (a damaged copy): replaced.
      await upload(false).catch((failure: unknown) => {
        throw azureFailure(`replacing ${info.sha256}`, failure);
      });
    }
    totalCache = undefined;
  }

  async function publishInBlocks(info: BlobInfo, reader: BlobReader, signal: AbortSignal | undefined) {
    const client = blobClient(info.sha256);
    // Same length for every block of one upload (Azure requires it); unique per upload so that two
    // nodes uploading the same blob never commit each other's blocks.
    const uploadId = randomUUID().replaceAll("-", "");
    const blockIds: string[] = [];
    const wholeMd5 = createHash("md5");
    const buffer = Buffer.allocUnsafe(blockBytes);
    for (let offset = 0; offset < info.size; offset += blockBytes) {
      const length = await readFully(reader, buffer, offset, Math.min(blockBytes, info.size - offset));
      const block = buffer.subarray(0, length);
      const md5 = createHash("md5").update(block).digest();
      wholeMd5.update(block);
      const blockId = Buffer.from(`${uploadId}-${String(blockIds.length).padStart(6, "0")}`).toString("base64");
      await client
        .stageBlock(blockId, block, length, { transactionalContentMD5: md5, abortSignal: signal })
        .catch((error: unknown) => {
          throw azureFailure(`uploading block ${blockIds.length + 1} of ${info.sha256}`, error);
        });
      blockIds.push(blockId);
    }
    await client
      .commitBlockList(blockIds, {
        blobHTTPHeaders: { blobContentType: "application/octet-stream", blobContentMD5: wholeMd5.digest() },
        abortSignal: signal,
      })
      .catch((error: unknown) => {
        throw azureFailure(`committing ${info.sha256}`, error);
      });
    totalCache = undefined;
  }

  async function statBlob(sha256: string): Promise<{ size: number } | undefined> {
    if (!ADDRESS.test(sha256)) return undefined;
    try {
      const properties = await blobClient(sha256).getProperties();
      return { size: properties.contentLength ?? 0 };
    } catch (error) {
      if (isAzureNotFound(error)) return undefined;
      throw azureFailure(`reading the properties of ${sha256}`, error);
    }
  }

  /** One download, whose answer also says the blob's size: a read needs no properties call first. */
  async function openSized(sha256: string, range?: { start: number; end: number }) {
    if (!ADDRESS.test(sha256)) return undefined;
    const count = range ? range.end - range.start + 1 : undefined;
    const nothingFrom = async () => {
      const stored = await statBlob(sha256);
      return stored === undefined ? undefined : { stream: Readable.from([]), size: stored.size };
    };
    // An empty range (of an empty blob): no bytes to ask for.
    if (count !== undefined && count <= 0) return nothingFrom();
    try {
      const response = await blobClient(sha256).download(range?.start ?? 0, count);
      const size = contentRangeTotal(response.contentRange) ?? response.contentLength ?? 0;
      const body = response.readableStreamBody;
      const stream = !body ? Readable.from([]) : body instanceof Readable ? body : Readable.from(body);
      return { stream, size };
    } catch (error) {
      if (isAzureNotFound(error)) return undefined;
      // 416: an empty blob has no byte 0, or the range lies past what is stored (a blob shorter than
      // its metadata says): its size, and no bytes, for the caller to see.
      if ((error as { statusCode?: number }).statusCode === 416) return nothingFrom();
      throw azureFailure(`downloading ${sha256}`, error);
    }
  }

  const openBlob = async (sha256: string, range?: { start: number; end: number }) =>
    (await openSized(sha256, range))?.stream;

  async function deleteBlob(sha256: string) {
    if (!ADDRESS.test(sha256)) return;
    try {
      await blobClient(sha256).deleteIfExists();
      totalCache = undefined;
    } catch (error) {
      if (isAzureNotFound(error)) return; // the container itself is missing
      throw azureFailure(`deleting ${sha256}`, error);
    }
  }

  /** Every blob under the prefix with its size; nothing when the container does not exist yet. */
  async function* listSized(): AsyncIterable<{ sha256: string; size: number }> {
    try {
      for await (const page of container.listBlobsFlat({ prefix }).byPage({ maxPageSize: LIST_PAGE_SIZE })) {
        for (const item of page.segment.blobItems) {
          const name = item.name.slice(prefix.length);
          // Only names this store writes count; anything else in the folder is not a blob.
          if (ADDRESS.test(name)) yield { sha256: name, size: item.properties.contentLength ?? 0 };
        }
      }
    } catch (error) {
      if (isAzureNotFound(error)) return;
      throw azureFailure(`listing the container ${options.containerName}`, error);
    }
  }

  async function* list(): AsyncIterable<string> {
    for await (const { sha256 } of listSized()) yield sha256;
  }

  async function totalBytes() {
    if (totalCache && Date.now() - totalCache.at < TOTAL_BYTES_MAX_AGE_MS) return totalCache.bytes;
    const at = Date.now();
    let bytes = 0;
    for await (const { size } of listSized()) bytes += size;
    totalCache = { bytes, at };
    return bytes;
  }

  async function clearStaleTemporaryFiles(): Promise<TemporaryFiles> {
    // The spool's temporary files, and spooled copies a crash left before their upload ended:
    // their puts never returned, so nothing refers to them. Uncommitted blocks on Azure's side
    // are invisible and expire there.
    const cleared = { files: 0, bytes: 0 };
    for (const file of await filesUnder(options.tempDir)) {
      cleared.files++;
      cleared.bytes += file.size;
    }
    await rm(options.tempDir, { recursive: true, force: true });
    return cleared;
  }

  return {
    put,
    stat: statBlob,
    open: openBlob,
    openSized,
    delete: deleteBlob,
    list,
    totalBytes,
    clearStaleTemporaryFiles,
  };
}

function containerClient(options: AzureBlobStoreOptions): ContainerClient {
  let service: BlobServiceClient;
  try {
    // Through a proxy, the SDK is given that one (not left to read the environment itself).
    // Reached directly, every connection is vetted: the endpoint's protocol picks the agent, which
    // the SDK passes on to every request it sends.
    const endpoint = new URL(BlobServiceClient.fromConnectionString(options.connectionString).url);
    const proxy = storeProxyRouter(options.outboundProxy)(endpoint);
    const pipeline =
      proxy !== undefined
        ? { ...options.pipeline, proxyOptions: sdkProxyOptions(proxy) }
        : { ...options.pipeline, agent: objectStoreAgent(endpoint.protocol, options.resolveHost) };
    service = BlobServiceClient.fromConnectionString(options.connectionString, pipeline);
  } catch {
    // The SDK's message may quote the connection string, key included: never repeat it.
    throw invalid(
      "AZURE_CONNECTION_STRING_INVALID",
      "ConnectionString is not a valid Azure storage connection string (it needs AccountName and AccountKey with BlobEndpoint or EndpointSuffix, or a SAS).",
    );
  }
  if (!/^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$/.test(options.containerName)) {
    throw invalid(
      "AZURE_CONTAINER_NAME_INVALID",
      "ContainerName must be 3 to 63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit.",
    );
  }
  return service.getContainerClient(options.containerName);
}

/** A proxy URI (`http://user:password@host:port`) as the SDK's proxyOptions take it. */
function sdkProxyOptions(uri: string): NonNullable<StoragePipelineOptions["proxyOptions"]> {
  const url = new URL(uri);
  return {
    host: `${url.protocol}//${url.hostname}`,
    port: Number(url.port || (url.protocol === "https:" ? 443 : 80)),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
  };
}

/** "" or "a/b/" for a TargetPath of "a/b", "/a/b/" or "a\\b". */
function normalizeTargetPath(targetPath: string | undefined) {
  const parts = (targetPath ?? "").split(/[/\\]+/).filter((part) => part !== "");
  if (parts.some((part) => part === "." || part === "..")) {
    throw invalid("AZURE_TARGET_PATH_INVALID", "TargetPath must not contain '.' or '..' segments.");
  }
  return parts.length === 0 ? "" : `${parts.join("/")}/`;
}

/** Reads exactly `length` bytes at `position` (a spooled file does not shrink under its holder). */
async function readFully(
  reader: { read(target: Buffer, position: number): Promise<number> },
  buffer: Buffer,
  position: number,
  length: number,
) {
  let filled = 0;
  while (filled < length) {
    const read = await reader.read(buffer.subarray(filled, length), position + filled);
    if (read === 0) throw new Error(`the spooled file ended ${length - filled} bytes early`);
    filled += read;
  }
  return filled;
}

async function filesUnder(dir: string) {
  try {
    const found = await readdir(dir, { withFileTypes: true, recursive: true });
    return await Promise.all(
      found.filter((entry) => entry.isFile()).map((entry) => lstat(path.join(entry.parentPath, entry.name))),
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
