import { z } from "zod";
import { userMetadataJson } from "../../domain/asset-metadata.js";
import { cacheHeaderJson } from "../../domain/cache-header.js";
import type { AssetItem } from "./repository.js";
import { contentTypeOf } from "./service.js";

/**
 * The item JSON of docs/compat.md 4.1 (ItemData / Metadata of docs/seed-api.md area F): folders have type
 * `dir` and no size, content or hashes; `created` and `modified` are never null (clients read
 * them as non-nullable dates); `parent` is omitted for items in the root.
 */
export const assetItemSchema = z.object({
  name: z.string(),
  parent: z.string().optional().describe("Full path of the parent folder; omitted in the root"),
  type: z.string().describe("Content-Type of a file, or `dir`"),
  content: z.string().optional().describe("Absolute download URL of a file"),
  created: z.string(),
  modified: z.string(),
  size: z.number().optional(),
  md5: z.string().optional(),
  sha1: z.string().optional(),
  sha256: z.string().optional(),
  sha512: z.string().optional(),
  userMetadata: z.record(
    z.string(),
    z.union([z.string(), z.object({ value: z.string(), includeInResponseHeader: z.literal(true) })]),
  ),
  cacheHeader: z.object({ type: z.string(), value: z.union([z.number(), z.string()]).optional() }),
});
export type AssetItemJson = z.infer<typeof assetItemSchema>;

/** `a b/ü.txt` -> `a%20b/%C3%BC.txt`: each segment escaped, the slashes kept. */
const encodeAssetPath = (path: string) => path.split("/").map(encodeURIComponent).join("/");

/** Where a directory's files are downloaded: `<base>/endpoints/<dir>/content/`. */
export const contentBaseUrl = (baseUrl: string, directory: string) =>
  `${baseUrl}/endpoints/${encodeURIComponent(directory)}/content/`;

/**
 * Builds every item with one literal of one shape: members that do not apply are `undefined`,
 * which JSON.stringify leaves out. Spreading optional parts instead made a 10,000-item listing
 * spend ~130 ms here (bench/endpoints-scenarios.ts), ten times the rest of the presentation.
 */
export function presentAssetItem(item: AssetItem, contentBase: string): AssetItemJson {
  const slash = item.path.lastIndexOf("/");
  const file = item.file;
  return {
    name: item.path.slice(slash + 1),
    parent: slash < 0 ? undefined : item.path.slice(0, slash),
    type: file === undefined ? "dir" : contentTypeOf(item),
    content: file === undefined ? undefined : contentBase + encodeAssetPath(item.path),
    created: item.createdAt,
    modified: item.modifiedAt,
    size: file?.size,
    md5: file?.md5,
    sha1: file?.sha1,
    sha256: file?.sha256,
    sha512: file?.sha512,
    userMetadata: userMetadataJson(item.userMetadata),
    cacheHeader: cacheHeaderJson(item.cacheHeader),
  };
}
