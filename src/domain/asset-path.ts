import { invalid } from "./errors.js";
import { relativePathProblem } from "./relative-path.js";
import { quote } from "./upack-manifest.js";

/**
 * A path inside an asset directory (docs/seed-api.md area F), normalised once (docs/PRODUCT.md "Security
 * baseline"): Unicode NFC (macOS clients send decomposed names), no leading or trailing '/', and
 * refused when relativePathProblem finds '..', backslashes, control characters or absolute forms.
 * Paths match case-insensitively, as in ProGet, through `key`; `path` keeps the spelling of the
 * caller who created the item. The root folder is the empty path.
 */
export interface AssetPath {
  /** 'docs/guide.pdf'; '' for the root. */
  readonly path: string;
  /** Lowercased path: what lookups compare. */
  readonly key: string;
  /** The last segment ('' for the root). */
  readonly name: string;
  /** The parent folder's path ('' for items in the root and for the root itself). */
  readonly parent: string;
}

const MAX_ASSET_PATH_LENGTH = 1024;
const MAX_ASSET_NAME_LENGTH = 255;

export const ASSET_ROOT: AssetPath = { path: "", key: "", name: "", parent: "" };

/** The key of a path: the one place that decides how paths compare. */
const assetKey = (path: string) => path.toLowerCase();

/**
 * Parses a path taken from a URL (already percent-decoded once by the router) or an archive entry.
 * A trailing '/' is dropped; the empty path is the root, accepted only with `allowRoot`.
 */
export function parseAssetPath(raw: string, options: { allowRoot?: boolean } = {}): AssetPath {
  const trimmed = raw.endsWith("/") ? raw.slice(0, -1) : raw;
  if (trimmed === "") {
    if (options.allowRoot === true) return ASSET_ROOT;
    throw invalid("ASSET_PATH_REQUIRED", "A path inside the asset directory is required.");
  }
  const problem = relativePathProblem(raw);
  if (problem !== undefined) throw invalid("INVALID_ASSET_PATH", `The path ${quote(raw)} is refused: ${problem}.`);
  const path = trimmed.normalize("NFC");
  if (path.length > MAX_ASSET_PATH_LENGTH) {
    throw invalid("INVALID_ASSET_PATH", `The path is longer than ${MAX_ASSET_PATH_LENGTH} characters.`);
  }
  if (path.split("/").some((segment) => segment.length > MAX_ASSET_NAME_LENGTH)) {
    throw invalid("INVALID_ASSET_PATH", `A name in the path is longer than ${MAX_ASSET_NAME_LENGTH} characters.`);
  }
  return assetPathOf(path);
}

/** The parts of a path that is already valid and normalised. */
function assetPathOf(path: string): AssetPath {
  const slash = path.lastIndexOf("/");
  return { path, key: assetKey(path), name: path.slice(slash + 1), parent: slash < 0 ? "" : path.slice(0, slash) };
}

/** The path of `name` inside `folder` (both already valid). */
export function childPath(folder: AssetPath, name: string): string {
  return folder.path === "" ? name : `${folder.path}/${name}`;
}

/** Every ancestor folder of a path, outermost first, without the root: 'a/b/c' gives 'a', 'a/b'. */
export function ancestorPaths(path: Pick<AssetPath, "path">): AssetPath[] {
  const segments = path.path.split("/");
  // Each segment but the last ends an ancestor.
  return segments.slice(0, -1).map((_, i) => assetPathOf(segments.slice(0, i + 1).join("/")));
}
