import { invalid } from "../../../domain/errors.js";
import { quote } from "../../../domain/upack-manifest.js";

/**
 * Package URLs of universal packages (docs/compat.md 3). The purl type ProGet uses is not documented;
 * `upack` is the `packageType` that BasicFeedInfo reports for universal feeds, and what pgutil
 * compares with, so it is the one we write and the only one we accept (inferred, docs/compat.md 12).
 */
export const UPACK_PURL_TYPE = "upack";

/** Group ("" for none), name and version as a purl names them: decoded, not yet validated. */
export interface PurlParts {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

/**
 * `pkg:upack/<group segments>/<name>@<version>`, every segment percent-encoded on its own the way
 * pgutil's PUrl.ToString does (Uri.EscapeDataString per segment, '/' kept between them), so that
 * a version's `+` becomes `%2B` and pgutil parses our purls back to the same identity.
 */
export function formatPurl(group: string, name: string, version: string): string {
  const groupPart = group === "" ? "" : `${group.split("/").map(encodeURIComponent).join("/")}/`;
  return `pkg:${UPACK_PURL_TYPE}/${groupPart}${encodeURIComponent(name)}@${encodeURIComponent(version)}`;
}

/**
 * Reads a purl as the purl spec and pgutil's PUrl.TryParse do: scheme and type case-insensitive,
 * slashes after `pkg:` and around the namespace tolerated, the last segment the name, the rest the
 * group, each segment percent-decoded. Universal packages have no qualifiers or subpaths, so a
 * purl carrying either names something we do not serve: 400 rather than a silent partial match.
 */
export function parsePurl(text: string): PurlParts {
  const fail = (why: string) => invalid("INVALID_PURL", `The purl ${quote(text)} ${why}.`);
  const match = /^pkg:\/*([^/]+)\/(.*)$/i.exec(text.trim());
  if (!match) throw fail("is not a package URL (pkg:upack/<group>/<name>@<version>)");
  const [, type = "", rest = ""] = match;
  if (type.toLowerCase() !== UPACK_PURL_TYPE) throw fail(`is of type ${quote(type)}; this feed holds 'upack' packages`);
  if (rest.includes("#")) throw fail("has a subpath; universal packages are downloaded whole");
  if (rest.includes("?")) throw fail("has qualifiers; universal packages have none");
  const at = rest.lastIndexOf("@");
  if (at < 0) throw fail("names no version");
  const segments = rest
    .slice(0, at)
    .split("/")
    .filter((segment) => segment !== "")
    .map((segment) => decode(segment, fail));
  const version = decode(rest.slice(at + 1), fail);
  const name = segments.pop();
  if (name === undefined) throw fail("names no package");
  // A decoded segment holding '/' would silently move the group/name boundary.
  if ([...segments, name].some((segment) => segment.includes("/"))) throw fail("has an encoded '/' in a segment");
  return { group: segments.join("/"), name, version };
}

function decode(segment: string, fail: (why: string) => Error): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw fail("has malformed percent-encoding");
  }
}
