import type { AssetPath } from "../../../domain/asset-path.js";
import type { Feed } from "../../management/index.js";
import type { Readable } from "node:stream";
import { type AssetItem, isFolder, replaceForbidden, replacingNeedsPermission } from "../repository.js";
import type { AssetService } from "../service.js";

/** How a completed upload is stored: the request's Content-Type and, over an existing file, its permission. */
export interface CompletionOptions {
  readonly contentType: string | undefined;
  readonly mayReplace: () => Promise<boolean>;
}

/**
 * Streams the parts' bytes in order (`openParts`: the spool, or in cluster mode the parts' blobs)
 * into the blob store and stores them as the file at the path.
 */
export async function assemble(
  assets: AssetService,
  directory: Feed,
  path: AssetPath,
  openParts: () => Promise<Readable>,
  options: CompletionOptions,
): Promise<AssetItem> {
  // Refused before hashing a file that may be gigabytes.
  const existing = await assets.findItem(directory, path);
  if (existing?.isFolder === true) throw isFolder(existing.path);
  const needsPermission = replacingNeedsPermission(existing);
  const mayReplace = needsPermission && (await options.mayReplace());
  if (needsPermission && !mayReplace) throw replaceForbidden(existing?.path ?? "");
  const held = await assets.storeContent(directory, await openParts());
  // ProGetAutomation first creates the file empty with its Content-Type, then sends the parts.
  return assets.putStoredFile(directory, path, held, {
    contentType: options.contentType ?? existing?.contentType,
    mode: "create-or-replace",
    mayReplace,
  });
}
