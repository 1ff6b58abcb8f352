import type { AssetPath } from "../../../domain/asset-path.js";
import type { Feed } from "../../management/index.js";
import type { MultipartUpload } from "./repository.js";
import type { MultipartSpool } from "./spool.js";
import { type AssetItem, isFolder, replaceForbidden, replacingNeedsPermission } from "../repository.js";
import type { AssetService } from "../service.js";

/** How a completed upload is stored: the request's Content-Type and, over an existing file, its permission. */
export interface CompletionOptions {
  readonly contentType: string | undefined;
  readonly mayReplace: () => Promise<boolean>;
}

export interface AssembleDeps {
  readonly assets: AssetService;
  readonly spool: MultipartSpool;
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
  const existing = await deps.assets.findItem(directory, path);
  if (existing?.isFolder === true) throw isFolder(existing.path);
  const needsPermission = replacingNeedsPermission(existing);
  const mayReplace = needsPermission && (await options.mayReplace());
  if (needsPermission && !mayReplace) throw replaceForbidden(existing?.path ?? "");
  const source = await deps.spool.read(upload.spool, upload.totalSize);
  const held = await deps.assets.storeContent(directory, source);
  // ProGetAutomation first creates the file empty with its Content-Type, then sends the parts.
  return deps.assets.putStoredFile(directory, path, held, {
    contentType: options.contentType ?? existing?.contentType,
    mode: "create-or-replace",
    mayReplace,
  });
}
