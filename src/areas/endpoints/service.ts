import { Readable } from "node:stream";
import mime from "mime-types";
import { mergeUserMetadata, parseUserMetadata } from "../../domain/asset-metadata.js";
import { type AssetPath, ancestorPaths } from "../../domain/asset-path.js";
import { type CacheHeader, effectiveCacheControl, INHERIT, parseCacheHeader } from "../../domain/cache-header.js";
import type { Clock } from "../../domain/clock.js";
import { eachConcurrently } from "../../domain/concurrently.js";
import { invalid, notFound } from "../../domain/errors.js";
import type { ClaimedDigests } from "../../http/upload-digests.js";
import type { BlobKeeper, FeedKeepers } from "../../storage/blob-keeper.js";
import type { Feed, FeedService } from "../management/index.js";
import {
  type AssetItem,
  type AssetRepository,
  type DeleteOptions,
  assetNotFound,
  fileExists,
  isFolder,
  replaceForbidden,
  replacingNeedsPermission,
  type StoredContent,
  type WriteMode,
} from "./repository.js";

/** A file upload: the body (undefined: empty file), its declared type and how it treats an existing file. */
export interface FileUpload {
  readonly body: (() => Readable) | undefined;
  /** The request's Content-Type, if it names the file's type (see contentTypeOfUpload). */
  readonly contentType: string | undefined;
  readonly mode: WriteMode;
  /** Whether the caller may replace a file at the path; asked once, before the body is read. */
  readonly mayReplace: () => Promise<boolean>;
  readonly digests?: ClaimedDigests;
}

export interface StoreOptions {
  /** Defaults to WHARF_MAX_UPLOAD_BYTES. */
  readonly maxBytes?: number;
  /** Digests the client claims; a mismatch refuses the content. */
  readonly expected?: ClaimedDigests;
}

/** Content in the blob store, held until `release` is called. */
export interface HeldContent {
  readonly content: StoredContent;
  readonly release: () => void;
  /** The asset directory whose package store holds it. */
  readonly feedId: number;
}

/** storeContent and releaseContents for the many files of one import, into one directory. */
export interface ImportContents {
  store(source: Readable | AsyncIterable<Buffer>, options?: StoreOptions): Promise<HeldContent>;
  /** Releases what `store` held and deletes what no item uses. */
  release(held: readonly HeldContent[]): Promise<void>;
}

/** The MetadataUpdate of docs/seed-api.md area F, as parsed JSON. */
export type MetadataUpdateInput = Record<string, unknown>;

/** A file ready to be served: its item, the type and cache header it is served with. */
export interface ServedFile {
  readonly item: AssetItem & { readonly file: StoredContent };
  readonly contentType: string;
  readonly cacheControl: string;
  /** Whether active content (HTML, SVG) is served as is: the directory is marked as a site. */
  readonly staticSite: boolean;
}

/** Asset directory use cases (docs/seed-api.md area F, docs/compat.md 4). Throws DomainError; knows no HTTP. */
export interface AssetService {
  /** The asset directory by name or alternate name; 404 for unknown names and feeds of other types. */
  directory(name: string): Promise<Feed>;
  /** How a file is served: its type, effective cache header and whether active content is sandboxed. */
  serve(directory: Feed, item: AssetItem): Promise<ServedFile>;
  /** Stores a file (docs/compat.md 4.2 POST/PUT/PATCH); returns the stored item. */
  putFile(directory: Feed, path: AssetPath, upload: FileUpload): Promise<AssetItem>;
  /** Stores content already in the blob store (held by the caller) at a path: multipart completion, imports. */
  putStoredFile(
    directory: Feed,
    path: AssetPath,
    held: HeldContent,
    options: { contentType: string | undefined; mode: WriteMode; mayReplace: boolean },
  ): Promise<AssetItem>;
  /**
   * putStoredFile for several files at once (a form upload), in one transaction: every file is
   * stored, or none (each with `mode`'s rule). The held contents are released either way.
   */
  putStoredFiles(
    directory: Feed,
    files: ReadonlyArray<{
      readonly path: AssetPath;
      readonly held: HeldContent;
      readonly contentType: string | undefined;
    }>,
    options: { mode: WriteMode; mayReplace: boolean },
  ): Promise<AssetItem[]>;
  /**
   * Deletes a file or, with `filesOnly: false`, a folder; a missing item is not an error. Whether
   * anything was deleted (with `expectedBlob`: false when the file is gone or has other bytes).
   */
  delete(directory: Feed, path: AssetPath, options: DeleteOptions): Promise<boolean>;
  /** Items of a folder ('' = root); a missing folder gives [] (docs/compat.md 4.3). */
  list(directory: Feed, folder: AssetPath, recursive: boolean): Promise<AssetItem[]>;
  createFolder(directory: Feed, path: AssetPath): Promise<void>;
  /** One item; 404 when missing. */
  item(directory: Feed, path: AssetPath): Promise<AssetItem>;
  findItem(directory: Feed, path: AssetPath): Promise<AssetItem | undefined>;
  /**
   * Puts bytes into the blob store with every digest an item reports (streamed), and holds the
   * blob for the caller until `release`, so that no concurrent deletion takes it before it is
   * stored with putStoredFile.
   */
  storeContent(directory: Feed, source: Readable | AsyncIterable<Buffer>, options?: StoreOptions): Promise<HeldContent>;
  /**
   * Records files whose content is in the blob store, and folders (with missing parents), in one
   * transaction: archive imports. The caller holds every content until this settles. A file that
   * exists when `mode` is "create" is left as it is and counted as kept; any other refusal fails
   * the whole batch. Contents the batch replaced are deleted unless still used.
   */
  writeStoredFiles(
    directory: Feed,
    batch: {
      readonly folders: readonly AssetPath[];
      readonly files: ReadonlyArray<{ readonly path: AssetPath; readonly content: StoredContent }>;
    },
    options: { mode: WriteMode; mayReplace: boolean },
  ): Promise<{ stored: number; kept: number }>;
  /** Releases held contents and deletes those that no item uses. */
  releaseContents(held: readonly HeldContent[]): Promise<void>;
  /**
   * storeContent and releaseContents for an archive import: the directory's package store is
   * resolved once, at the first file (FeedKeepers.pinnedKeeperFor), where storeContent reads the
   * directory's storage setting for each file (on PostgreSQL a round trip, thousands per import).
   */
  importContents(directory: Feed): ImportContents;
  updateMetadata(directory: Feed, path: AssetPath, input: MetadataUpdateInput): Promise<AssetItem>;
}

export interface AssetServiceDeps {
  readonly repository: AssetRepository;
  readonly feeds: FeedService;
  readonly keepers: FeedKeepers;
  readonly clock: Clock;
  readonly maxUploadBytes: number;
}

/** Types by lowercased extension: mime-types' lookup costs ~10 µs, a listing asks once per file. */
const typeByExtension = new Map<string, string>();
const MAX_REMEMBERED_EXTENSIONS = 1000;

/** The type a file is served with: as uploaded, else from its extension, else bytes. */
export function contentTypeOf(item: Pick<AssetItem, "path" | "contentType">): string {
  if (item.contentType !== undefined) return item.contentType;
  const name = item.path.slice(item.path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  const extension = dot < 0 ? "" : name.slice(dot + 1).toLowerCase();
  let type = typeByExtension.get(extension);
  if (type === undefined) {
    type = (extension !== "" && mime.contentType(extension)) || "application/octet-stream";
    if (typeByExtension.size < MAX_REMEMBERED_EXTENSIONS) typeByExtension.set(extension, type);
  }
  return type;
}

const MEDIA_TYPE = /^[A-Za-z0-9!#$&^_.+-]+\/[A-Za-z0-9!#$&^_.+-]+(?:\s*;[\x20-\x7e]*)?$/;

/**
 * The Content-Type an upload declares for the file (docs/compat.md 4.2: the request's type becomes the
 * item's type; absent, the server decides from the extension). A form-urlencoded label is what
 * curl puts on `--data-binary` when nobody chose a type, so it counts as absent too.
 */
export function contentTypeOfUpload(header: string | undefined): string | undefined {
  const value = header?.trim();
  if (value === undefined || value === "") return undefined;
  if (value.toLowerCase().startsWith("application/x-www-form-urlencoded")) return undefined;
  if (value.length > 255 || !MEDIA_TYPE.test(value)) {
    throw invalid("INVALID_CONTENT_TYPE", "The Content-Type must be a media type such as 'text/plain; charset=utf-8'.");
  }
  return value;
}

const ASSET_FEED_TYPE = "asset";
/** Blobs an import's release looks at at once (discardAll). */
const CONCURRENT_DISCARDS = 8;

export function createAssetService(deps: AssetServiceDeps): AssetService {
  const { repository, keepers, clock } = deps;
  const discardThrough = (keeper: BlobKeeper, sha256: string) => keeper.discardIfUnused(sha256).catch(() => undefined);
  const discard = (directory: { readonly id: number }, sha256: string) =>
    discardThrough(keepers.keeperFor(directory.id), sha256);
  const now = () => clock.now().toISOString();

  /** The settings an item inherits when its own is Inherit: its folders' (innermost first), then the directory's. */
  async function inheritedCacheHeaders(directory: Feed, item: AssetItem): Promise<CacheHeader[]> {
    const folders = ancestorPaths(item).reverse();
    const found = new Map(
      (
        await repository.findAll(
          directory.id,
          folders.map((f) => f.key),
        )
      ).map((i) => [i.key, i]),
    );
    return [...folders.map((f) => found.get(f.key)?.cacheHeader ?? INHERIT), directory.settings.cacheHeader ?? INHERIT];
  }

  async function getItem(directory: Feed, path: AssetPath): Promise<AssetItem> {
    const item = await repository.find(directory.id, path.key);
    if (item === undefined) throw assetNotFound();
    return item;
  }

  async function storeContent(
    directory: Feed,
    source: Readable | AsyncIterable<Buffer>,
    options: StoreOptions = {},
    keeper = keepers.keeperFor(directory.id),
  ): Promise<HeldContent> {
    const { blob: info, release } = await keeper.put(source, {
      maxBytes: options.maxBytes ?? deps.maxUploadBytes,
      extraDigests: ["md5", "sha512"],
      ...(options.expected ? { expected: options.expected } : {}),
    });
    const content = {
      sha256: info.sha256,
      size: info.size,
      md5: info.md5 ?? "",
      sha1: info.sha1,
      sha512: info.sha512 ?? "",
    };
    return { content, release, feedId: directory.id };
  }

  /**
   * Discards each blob once, a few at a time: an import's thousands of files each cost a round trip
   * or two here (the feed's store, the references) on a cluster node, where they add up to seconds.
   */
  async function discardAll(
    blobs: ReadonlyArray<{ feedId: number; sha256: string }>,
    keeperOf = (feedId: number) => keepers.keeperFor(feedId),
  ): Promise<void> {
    const unique = [...new Map(blobs.map((blob) => [`${blob.feedId} ${blob.sha256}`, blob])).values()];
    await eachConcurrently(unique, CONCURRENT_DISCARDS, (blob) => discardThrough(keeperOf(blob.feedId), blob.sha256));
  }

  async function releaseContents(held: readonly HeldContent[], keeperOf?: (feedId: number) => BlobKeeper) {
    for (const { release } of held) release();
    await discardAll(
      held.map(({ content, feedId }) => ({ feedId, sha256: content.sha256 })),
      keeperOf,
    );
  }

  async function putStoredFile(
    directory: Feed,
    path: AssetPath,
    held: HeldContent,
    options: { contentType: string | undefined; mode: WriteMode; mayReplace: boolean },
  ): Promise<AssetItem> {
    const { content } = held;
    let committed = false;
    try {
      const { replaced } = await repository.writeFile(directory.id, { path, content, ...options, now: now() });
      committed = true;
      if (replaced !== undefined && replaced.sha256 !== content.sha256) {
        await discard(directory, replaced.sha256);
      }
    } finally {
      // Released first: a blob still held is never discarded, so a refused write would leave it behind.
      held.release();
      if (!committed) await discard(directory, content.sha256);
    }
    return getItem(directory, path);
  }

  return {
    async directory(name) {
      const feed = await deps.feeds.findFeed(name);
      if (feed === undefined || feed.feedType !== ASSET_FEED_TYPE) {
        throw notFound("ASSET_DIRECTORY_NOT_FOUND", "asset directory not found");
      }
      return feed;
    },

    async serve(directory, item) {
      if (item.file === undefined) throw isFolder(item.path);
      const settings =
        item.cacheHeader.type === "Inherit" ? await inheritedCacheHeaders(directory, item) : [item.cacheHeader];
      return {
        item: item as ServedFile["item"],
        contentType: contentTypeOf(item),
        cacheControl: effectiveCacheControl(settings),
        staticSite: directory.settings.staticSite,
      };
    },

    async putFile(directory, path, upload) {
      // Everything that can be refused without the body is refused before reading it.
      const existing = await repository.find(directory.id, path.key);
      if (existing?.isFolder === true) throw isFolder(existing.path);
      if (existing !== undefined && upload.mode === "create") throw fileExists(existing.path);
      if (existing === undefined && upload.mode === "replace") throw assetNotFound();
      // Asked even with nothing there yet: a file that appears meanwhile is replaced only if allowed.
      const allowed = await upload.mayReplace();
      if (replacingNeedsPermission(existing) && !allowed) throw replaceForbidden(existing?.path ?? "");
      const held = await storeContent(
        directory,
        upload.body?.() ?? Readable.from([]),
        upload.digests ? { expected: upload.digests } : {},
      );
      return putStoredFile(directory, path, held, {
        contentType: upload.contentType,
        mode: upload.mode,
        mayReplace: allowed,
      });
    },

    putStoredFile,

    async putStoredFiles(directory, files, options) {
      const held = files.map((file) => file.held);
      let written: { readonly replaced: readonly StoredContent[] };
      try {
        written = await repository.writeBatch(directory.id, {
          folders: [],
          files: files.map((file) => ({
            path: file.path,
            content: file.held.content,
            contentType: file.contentType,
            ...options,
          })),
          now: now(),
          keepExisting: false,
        });
      } catch (error) {
        await releaseContents(held);
        throw error;
      }
      // Released first: a blob still held is never discarded.
      for (const { release } of held) release();
      for (const content of written.replaced) await discard(directory, content.sha256);
      return Promise.all(files.map(({ path }) => getItem(directory, path)));
    },

    async delete(directory, path, options) {
      const { deleted, contents } = await repository.delete(directory.id, path, options);
      for (const content of contents) await discard(directory, content.sha256);
      return deleted > 0;
    },

    list: async (directory, folder, recursive) => repository.list(directory.id, folder.key, recursive),

    async createFolder(directory, path) {
      await repository.createFolder(directory.id, path, now());
    },

    item: getItem,
    findItem: async (directory, path) => repository.find(directory.id, path.key),
    storeContent,

    async writeStoredFiles(directory, batch, options) {
      const files = batch.files.map(({ path, content }) => ({ path, content, contentType: undefined, ...options }));
      const written = await repository.writeBatch(directory.id, {
        folders: batch.folders,
        files,
        now: now(),
        keepExisting: true,
      });
      await discardAll(written.replaced.map((content) => ({ feedId: directory.id, sha256: content.sha256 })));
      return { stored: files.length - written.kept, kept: written.kept };
    },

    releaseContents: (held) => releaseContents(held),

    importContents(directory) {
      const keeper = keepers.pinnedKeeperFor?.(directory.id) ?? keepers.keeperFor(directory.id);
      return {
        store: (source, options) => storeContent(directory, source, options, keeper),
        // Every content it held is the directory's (HeldContent.feedId), in the store it pinned.
        release: (held) => releaseContents(held, () => keeper),
      };
    },

    async updateMetadata(directory, path, input) {
      const item = await getItem(directory, path);
      const fields = new Map(Object.entries(input).map(([name, value]) => [name.toLowerCase(), value]));
      const type = fields.get("type");
      const mode = fields.get("usermetadataupdatemode");
      const userMetadata = fields.get("usermetadata");
      const cacheHeader = fields.get("cacheheader");
      if (mode !== undefined && mode !== null && (typeof mode !== "string" || !/^(update|replace)$/i.test(mode))) {
        throw invalid("INVALID_UPDATE_MODE", "'userMetadataUpdateMode' must be 'update' or 'replace'.");
      }
      const replace = typeof mode === "string" && mode.toLowerCase() === "replace";
      const given = userMetadata === undefined || userMetadata === null ? undefined : parseUserMetadata(userMetadata);
      await repository.updateMetadata(directory.id, path.key, {
        // `type` is ignored for folders (docs/seed-api.md MetadataUpdate).
        ...(type !== undefined && type !== null && !item.isFolder
          ? { contentType: contentTypeOfUpload(typeof type === "string" ? type : String(type)) }
          : {}),
        ...(given !== undefined || replace
          ? { userMetadata: mergeUserMetadata(item.userMetadata, given ?? {}, replace ? "replace" : "update") }
          : {}),
        ...(cacheHeader !== undefined && cacheHeader !== null ? { cacheHeader: parseCacheHeader(cacheHeader) } : {}),
        now: now(),
      });
      return getItem(directory, path);
    },
  };
}
