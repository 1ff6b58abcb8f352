/**
 * The one check for paths that come from callers and name something inside a package or an asset
 * directory (docs/PRODUCT.md "Security baseline"): relative, '/'-separated, no dot segments, no
 * backslashes, no control characters. A value is checked as given and again after one more
 * percent-decoding, so that `%252e%252e` is refused like `..` by whatever decodes it next.
 * Such paths only ever name rows or archive entries, never files on disk; refusing them anyway
 * keeps probing visible and every stored name portable.
 */

/** Why the path is refused, or undefined when it is acceptable. A trailing '/' is allowed. */
export function relativePathProblem(path: string): string | undefined {
  return literalPathProblem(path) ?? literalPathProblem(decodeOnce(path));
}

function decodeOnce(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value; // not percent-encoded text; the raw value was checked already
  }
}

/**
 * The same check on the path exactly as given, for names nothing will percent-decode (archive
 * entries, storage/archives.ts).
 */
export function literalPathProblem(path: string): string | undefined {
  // NUL and other control characters truncate names in C libraries and forge log lines.
  if (/\p{Cc}/u.test(path)) return "it contains a control character";
  if (path.includes("\\")) return "it contains a backslash";
  if (path.startsWith("/")) return "it is absolute";
  if (/^[A-Za-z]:/.test(path)) return "it starts with a drive letter";
  const segments = (path.endsWith("/") ? path.slice(0, -1) : path).split("/");
  if (segments.includes("..")) return "it contains a '..' segment";
  // "a//b" and "a/./b" are the same file as "a/b" to an extractor but not to a lookup by name.
  if (segments.some((segment) => segment === "" || segment === ".")) return "it contains an empty or '.' segment";
  return undefined;
}
