import type { AssetPath } from "../../domain/asset-path.js";
import { DomainError } from "../../domain/errors.js";
import type { BlobKeeper } from "../../storage/blob-keeper.js";
import type { BlobStore } from "../../storage/blob-store.js";
import type { Feed } from "../management/index.js";
import type { MultipartUpload } from "./multipart-repository.js";
import type { MultipartSpool } from "./multipart-spool.js";
import { type AssetItem, isFolder, replaceForbidden, replacingNeedsPermission } from "./repository.js";
import type { AssetService } from "./service.js";

/** How a completed upload is stored: the request's Content-Type and, over an existing file, its permission. */
export interface CompletionOptions {
  readonly contentType: string | undefined;
  readonly mayReplace: () => Promise<boolean>;
}

export interface AssembleDeps {
  readonly assets: AssetService;
  readonly blobs: BlobStore;
  readonly keeper: BlobKeeper;
  readonly spool: MultipartSpool;
  readonly maxUploadBytes: number;
}

async function findExisting(assets: AssetService, directory: Feed, path: AssetPath): Promise<AssetItem | undefined> {
  try {
    return await assets.item(directory, path);
  } catch (error) {
    if (error instanceof DomainError && error.kind === "not_found") return undefined;
    throw error;
  }
}

/** Streams the spool into the blob store and stores it as the file at the path. */
export async function assemble(
  deps: AssembleDeps,
  directory: Feed,
  path: AssetPath,
  upload: MultipartUpload,
  options: CompletionOptions,
): Promise<AssetItem> {
  // Refused before hashing a file that may be gigabytes.
  const existing = await findExisting(deps.assets, directory, path);
  if (existing?.isFolder === true) throw isFolder(existing.path);
  const needsPermission = replacingNeedsPermission(existing);
  const mayReplace = needsPermission && (await options.mayReplace());
  if (needsPermission && !mayReplace) throw replaceForbidden(existing?.path ?? "");
  const source = await deps.spool.read(upload.spool, upload.totalSize);
  const info = await deps.blobs.put(source, { maxBytes: deps.maxUploadBytes, extraDigests: ["md5", "sha512"] });
  const release = await deps.keeper.hold(info.sha256);
  try {
    const content = {
      sha256: info.sha256,
      size: info.size,
      md5: info.md5 ?? "",
      sha1: info.sha1,
      sha512: info.sha512 ?? "",
    };
    // ProGetAutomation first creates the file empty with its Content-Type, then sends the parts.
    const contentType = options.contentType ?? existing?.contentType;
    return await deps.assets.putStoredFile(directory, path, content, {
      contentType,
      mode: "create-or-replace",
      mayReplace,
    });
  } finally {
    release();
  }
}
