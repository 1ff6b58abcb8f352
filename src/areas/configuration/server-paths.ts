import fs from "node:fs/promises";
import path from "node:path";
import { DomainError, invalid } from "../../domain/errors.js";
import { isInside } from "../../storage/path-containment.js";

/**
 * Where a server's items may go. A `local` server's root is a directory on the Wharf host inside
 * WHARF_DEPLOY_ROOT, checked after resolving symbolic links (a link inside the deploy root that
 * leads out of it is refused); an `ssh` server's root and any temp path are absolute POSIX paths
 * on the target, normalised.
 */

const unprocessable = (code: string, message: string) => new DomainError("unprocessable", code, message);

/** The real path of `target`: its deepest existing ancestor resolved, the rest (not created yet) appended. */
async function realPathAllowingMissing(target: string): Promise<string> {
  const missing: string[] = [];
  let current = target;
  for (;;) {
    try {
      const real = await fs.realpath(current);
      return path.join(real, ...missing.reverse());
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT" && (error as NodeJS.ErrnoException).code !== "ENOTDIR")
        throw error;
      const parent = path.dirname(current);
      if (parent === current) return target;
      missing.push(path.basename(current));
      current = parent;
    }
  }
}

/**
 * A directory to store for a local server (`rootPath`, or `tempPath`): absolute, resolved, inside
 * the deploy root; 422 naming the setting otherwise.
 */
export async function localDirectory(
  field: "rootPath" | "tempPath",
  value: string | null | undefined,
  deployRoot: string | undefined,
): Promise<string> {
  if (deployRoot === undefined) {
    throw unprocessable(
      "DEPLOY_ROOT_NOT_SET",
      "A local server's directories must be inside WHARF_DEPLOY_ROOT, which is not set: set it to the directory Wharf may manage.",
    );
  }
  if (!value)
    throw invalid("ROOT_PATH_REQUIRED", `A local server needs '${field}': a directory inside WHARF_DEPLOY_ROOT.`);
  if (!path.isAbsolute(value) || value.includes("\0")) {
    throw invalid("INVALID_PATH", `'${field}' must be an absolute path (got '${value}').`);
  }
  const [resolved, base] = await Promise.all([
    realPathAllowingMissing(path.resolve(value)),
    realPathAllowingMissing(deployRoot),
  ]);
  if (!isInside(base, resolved)) {
    throw unprocessable(
      "PATH_OUTSIDE_DEPLOY_ROOT",
      `The ${field} '${value}' is not inside WHARF_DEPLOY_ROOT (${deployRoot}), symbolic links resolved.`,
    );
  }
  try {
    const stat = await fs.stat(resolved);
    if (!stat.isDirectory()) throw invalid("INVALID_PATH", `'${field}' (${value}) is not a directory.`);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  return resolved;
}

/** An absolute POSIX path on a target machine, normalised; 400 naming `field` otherwise. */
export function remotePath(field: string, value: string): string {
  if (!value.startsWith("/") || value.includes("\0") || value.includes("\\") || value.split("/").includes("..")) {
    throw invalid(
      "INVALID_PATH",
      `'${field}' must be an absolute POSIX path without '..' or backslashes (got '${value}').`,
    );
  }
  const normalised = path.posix.normalize(value);
  return normalised.length > 1 && normalised.endsWith("/") ? normalised.slice(0, -1) : normalised;
}
