import { invalid } from "../../../domain/errors.js";
import { quote } from "../../../domain/upack-manifest.js";
import { groupProblem, nameProblem } from "../../../domain/upack-range.js";
import { canonicalVersion } from "../../../domain/upack-version.js";
import { param, type QueryLike } from "../../../http/params.js";
import { parsePurl } from "./purl.js";

/**
 * Query arguments of the Common Packages API (docs/compat.md 3), read leniently (docs/compat.md 0.1, 0.2):
 * names case-insensitive, empty values absent, a version's literal `+` arriving as a space.
 */

/** One package version, validated; `version` in canonical text. */
export interface PackageIdentity {
  readonly group: string;
  readonly name: string;
  readonly version: string;
}

/** Lowercased keys to match stored `*_key` columns; undefined = no filter on that column. */
export interface ListFilter {
  readonly groupKey?: string;
  readonly nameKey?: string;
  readonly versionKey?: string;
}

// Form decoding turns a literal '+' (build metadata) into a space; no version holds a space.
const versionParam = (query: QueryLike) => param(query, "version")?.replaceAll(" ", "+");

/**
 * The one version a download or delete addresses: `name` + `version` (+ `group`), or `purl`.
 * docs/compat.md 3: "must resolve to one package else 400", so a missing version is a 400, not the
 * latest version: pgutil always sends one, and guessing would download or delete something the
 * caller did not name. The result is safe to join into a `<group>/<name>/<version>` path: the
 * name holds no '/', and neither holds '%' (so no `%2F` can move the boundary).
 */
export function requestedIdentity(query: QueryLike): PackageIdentity {
  // An unescaped '+' in the purl's version arrives as a space too.
  const purl = param(query, "purl")?.replaceAll(" ", "+");
  const named = ["name", "group", "version"].filter((key) => param(query, key) !== undefined);
  if (purl !== undefined && named.length > 0) {
    throw invalid("CONFLICTING_PARAMETERS", `Give either 'purl' or 'name' and 'version', not both ('${named[0]}').`);
  }
  const qualifier = param(query, "qualifier");
  if (qualifier !== undefined) {
    throw invalid("INVALID_QUALIFIER", `Universal packages have no qualifiers; got ${quote(qualifier)}.`);
  }
  const parts = purl !== undefined ? parsePurl(purl) : namedParts(query);
  const badName = nameProblem(parts.name);
  if (badName) throw invalid("INVALID_NAME", `The package name ${quote(parts.name)} ${badName}.`);
  const badGroup = groupProblem(parts.group);
  if (badGroup) throw invalid("INVALID_GROUP", `The group ${quote(parts.group)} ${badGroup}.`);
  const version = canonicalVersion(parts.version);
  if (version === undefined) throw invalid("INVALID_VERSION", `${quote(parts.version)} is not a valid version.`);
  return { group: parts.group, name: parts.name, version };
}

function namedParts(query: QueryLike): PackageIdentity {
  const name = param(query, "name");
  const version = versionParam(query);
  if (name === undefined) {
    throw invalid("NAME_REQUIRED", "Name the package with 'name' and 'version' (and 'group'), or with 'purl'.");
  }
  if (version === undefined) {
    throw invalid("VERSION_REQUIRED", "A 'version' is required: the request must name exactly one package version.");
  }
  return { group: param(query, "group") ?? "", name, version };
}

/** `<group...>/<name>/<version>`: the path tail the /upack services address a version by. */
export function identityPath(id: PackageIdentity): string {
  return id.group === "" ? `${id.name}/${id.version}` : `${id.group}/${id.name}/${id.version}`;
}

/**
 * Filters of `latest` and `versions`: each applies only when given ("filtered by group/name when
 * given"; pgutil leaves empty ones out). Undefined when `version` cannot match anything, so that
 * the caller answers an empty array, as a list endpoint always does, instead of an error.
 */
export function listFilter(query: QueryLike, withVersion: boolean): ListFilter | undefined {
  const group = param(query, "group");
  const name = param(query, "name");
  const versionText = withVersion ? versionParam(query) : undefined;
  const version = versionText === undefined ? undefined : canonicalVersion(versionText);
  if (versionText !== undefined && version === undefined) return undefined;
  return {
    ...(group === undefined ? {} : { groupKey: group.toLowerCase() }),
    ...(name === undefined ? {} : { nameKey: name.toLowerCase() }),
    ...(version === undefined ? {} : { versionKey: version.toLowerCase() }),
  };
}
