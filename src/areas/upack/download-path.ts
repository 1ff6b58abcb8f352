import { invalid } from "../../domain/errors.js";
import { quote } from "../../domain/upack-manifest.js";

/** A `download-file` path that is safe to look up: relative, `/`-separated, no dot segments. */
export interface PackageFilePath {
  /** Without a trailing '/'. */
  readonly path: string;
  /** The caller wrote a trailing '/': only a directory can match, which is a 403. */
  readonly namesDirectory: boolean;
}

/**
 * Checks the `path` query argument of download-file (seed-api.md area A; compat.md 2.5): relative
 * to the archive root, so content files start with `package/`. The value is already URL-decoded
 * once by the query parser; it is checked again after one more decoding, so that `%252e%252e`
 * is refused like `..` (PRODUCT.md "Security baseline": before or after percent-decoding). The
 * path only ever names a zip entry, never a file on disk, but a refused path is still a 400
 * rather than a 404, so that probing for traversal is visible as such in logs.
 */
export function parsePackageFilePath(raw: string | undefined): PackageFilePath {
  if (raw === undefined || raw === "") {
    throw invalid("PATH_REQUIRED", "The 'path' argument is required: the path of a file inside the package.");
  }
  const problem = pathProblem(raw) ?? pathProblem(decodeOnce(raw));
  if (problem !== undefined) throw invalid("INVALID_FILE_PATH", `The path ${quote(raw)} is refused: ${problem}.`);
  const namesDirectory = raw.endsWith("/");
  return { path: namesDirectory ? raw.slice(0, -1) : raw, namesDirectory };
}

function decodeOnce(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // not percent-encoded text; the raw value was checked already
  }
}

function pathProblem(path: string): string | undefined {
  // NUL and other control characters truncate names in C libraries and forge log lines.
  if (/\p{Cc}/u.test(path)) return "it contains a control character";
  if (path.includes("\\")) return "it contains a backslash";
  if (path.startsWith("/")) return "it is absolute";
  if (/^[A-Za-z]:/.test(path)) return "it starts with a drive letter";
  const segments = (path.endsWith("/") ? path.slice(0, -1) : path).split("/");
  if (segments.includes("..")) return "it contains a '..' segment";
  if (segments.some((segment) => segment === "" || segment === ".")) return "it contains an empty or '.' segment";
  return undefined;
}
