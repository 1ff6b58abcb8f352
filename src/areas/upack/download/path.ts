import { invalid } from "../../../domain/errors.js";
import { relativePathProblem } from "../../../domain/relative-path.js";
import { quote } from "../../../domain/upack-manifest.js";

/** A `download-file` path that is safe to look up: relative, `/`-separated, no dot segments. */
export interface PackageFilePath {
  /** Without a trailing '/'. */
  readonly path: string;
  /** The caller wrote a trailing '/': only a directory can match, which is a 403. */
  readonly namesDirectory: boolean;
}

/**
 * Checks the `path` query argument of download-file (docs/seed-api.md area A; docs/compat.md 2.5): relative
 * to the archive root, so content files start with `package/`. The value is already URL-decoded
 * once by the query parser; domain/relative-path.ts decides what is refused (400 rather than 404,
 * so that probing for traversal is visible as such in logs).
 */
export function parsePackageFilePath(raw: string | undefined): PackageFilePath {
  if (raw === undefined || raw === "") {
    throw invalid("PATH_REQUIRED", "The 'path' argument is required: the path of a file inside the package.");
  }
  const problem = relativePathProblem(raw);
  if (problem !== undefined) throw invalid("INVALID_FILE_PATH", `The path ${quote(raw)} is refused: ${problem}.`);
  const namesDirectory = raw.endsWith("/");
  return { path: namesDirectory ? raw.slice(0, -1) : raw, namesDirectory };
}
