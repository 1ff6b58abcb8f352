import path from "node:path";

/**
 * Whether `candidate` is `root` itself or lies below it, comparing the two paths as written: call
 * it with both resolved (and with symbolic links resolved where they could lead out).
 */
export function isInside(root: string, candidate: string): boolean {
  const relative = path.relative(root, candidate);
  return relative === "" || (relative.split(path.sep)[0] !== ".." && !path.isAbsolute(relative));
}
