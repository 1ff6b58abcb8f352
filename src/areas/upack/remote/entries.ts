import { isPlainObject } from "../../../domain/upack-manifest.js";
import { formatPackageId, groupProblem, nameProblem, upackCanParseDependency } from "../../../domain/upack-range.js";
import { compareVersions, formatVersion, parseVersion, type UpackVersion } from "../../../domain/upack-version.js";

/**
 * PackageData and VersionData (docs/compat.md 2.2, 2.3) as a connector's upstream sent them, made safe
 * to pass on. The upstream is another server, not a trusted one: an entry whose name, group or
 * version a client could not parse is dropped (Inedo.UPack throws on the whole answer for one bad
 * entry), members clients parse strictly (`sha1`, `size`, `dependencies`, `tags`, `downloads`)
 * are dropped or normalised when malformed, and the server-owned `isLocal`/`isCached` are set:
 * a remote entry is neither local nor cached here. Custom metadata is passed on as it came.
 */

export interface RemotePackage {
  readonly group: string;
  readonly name: string;
  /** Lowercased group and name: what decides "the same package". */
  readonly key: string;
  /** Valid versions, highest first (canonical text). */
  readonly versions: readonly string[];
  readonly json: Record<string, unknown>;
}

export interface RemoteVersion {
  readonly group: string;
  readonly name: string;
  readonly key: string;
  readonly version: UpackVersion;
  /** Canonical version text as sent upstream (download URLs, identity checks). */
  readonly versionText: string;
  /** Lowercase hex, when the upstream sent a valid one. */
  readonly sha1: string | undefined;
  readonly size: number | undefined;
  readonly published: Date | undefined;
  readonly json: Record<string, unknown>;
}

/** Whether a connector's filters let a package through (compilePatterns on `group/name` or `name`). */
export type Visible = (group: string, name: string) => boolean;

const SHA1 = /^[0-9a-f]{40}$/i;

export function packageKey(group: string, name: string): string {
  return `${group.toLowerCase()}\0${name.toLowerCase()}`;
}

/** An array answer (`packages`, `search`); anything else holds no packages. */
export function remotePackagesOf(body: unknown, visible: Visible): RemotePackage[] {
  if (!Array.isArray(body)) return [];
  return body.flatMap((item) => remotePackage(item, visible) ?? []);
}

/** A single-object answer (`packages?name=`); a one-element array is accepted too (PGA tolerates both). */
export function remotePackageOf(body: unknown, visible: Visible): RemotePackage | undefined {
  return remotePackage(Array.isArray(body) && body.length === 1 ? body[0] : body, visible);
}

export function remoteVersionsOf(body: unknown, visible: Visible, withFiles: boolean): RemoteVersion[] {
  if (!Array.isArray(body)) return [];
  return body.flatMap((item) => remoteVersion(item, visible, withFiles) ?? []);
}

export function remoteVersionOf(body: unknown, visible: Visible, withFiles: boolean): RemoteVersion | undefined {
  return remoteVersion(Array.isArray(body) && body.length === 1 ? body[0] : body, visible, withFiles);
}

/** Valid versions as canonical text, highest first, each once (ignoring case: the first spelling is kept). */
export function sortedVersions(texts: Iterable<string>): string[] {
  const seen = new Map<string, { text: string; version: UpackVersion }>();
  for (const text of texts) {
    const version = parseVersion(text);
    if (version === undefined) continue;
    const key = formatVersion(version).toLowerCase();
    if (!seen.has(key)) seen.set(key, { text: formatVersion(version), version });
  }
  return [...seen.values()].sort((a, b) => compareVersions(b.version, a.version)).map((entry) => entry.text);
}

function identityOf(item: unknown, visible: Visible): { group: string; name: string } | undefined {
  if (!isPlainObject(item)) return undefined;
  const { name } = item;
  const group = item.group ?? "";
  if (typeof name !== "string" || nameProblem(name) !== undefined) return undefined;
  if (typeof group !== "string" || groupProblem(group) !== undefined) return undefined;
  return visible(group, name) ? { group, name } : undefined;
}

function remotePackage(item: unknown, visible: Visible): RemotePackage | undefined {
  const id = identityOf(item, visible);
  if (id === undefined || !isPlainObject(item)) return undefined;
  const listed = Array.isArray(item.versions) ? item.versions.filter((v): v is string => typeof v === "string") : [];
  const latest = typeof item.latestVersion === "string" ? [item.latestVersion] : [];
  const versions = sortedVersions([...listed, ...latest]);
  if (versions.length === 0) return undefined;
  const json = common(item, id);
  json.latestVersion = versions[0];
  json.versions = versions;
  return { ...id, key: packageKey(id.group, id.name), versions, json };
}

function remoteVersion(item: unknown, visible: Visible, withFiles: boolean): RemoteVersion | undefined {
  const id = identityOf(item, visible);
  if (id === undefined || !isPlainObject(item) || typeof item.version !== "string") return undefined;
  const version = parseVersion(item.version);
  if (version === undefined) return undefined;
  const json = common(item, id);
  const versionText = formatVersion(version);
  json.version = versionText;
  const sha1 = typeof item.sha1 === "string" && SHA1.test(item.sha1) ? item.sha1.toLowerCase() : undefined;
  json.sha1 = sha1;
  const size = wholeNumber(item.size);
  json.size = size;
  const published = typeof item.published === "string" ? new Date(item.published) : undefined;
  const validDate = published !== undefined && !Number.isNaN(published.getTime()) ? published : undefined;
  json.published = validDate?.toISOString();
  if (!withFiles || !Array.isArray(item.fileList)) json.fileList = undefined;
  return { ...id, key: packageKey(id.group, id.name), version, versionText, sha1, size, published: validDate, json };
}

/** The members both shapes share; undefined members vanish in JSON.stringify. */
function common(item: Record<string, unknown>, id: { group: string; name: string }): Record<string, unknown> {
  const json: Record<string, unknown> = { ...item };
  json.group = id.group === "" ? undefined : id.group;
  json.name = id.name;
  json.dependencies = Array.isArray(item.dependencies)
    ? item.dependencies.filter((d): d is string => typeof d === "string" && upackCanParseDependency(d))
    : [];
  json.tags = Array.isArray(item.tags) ? item.tags.filter((tag): tag is string => typeof tag === "string") : [];
  json.downloads = String(wholeNumber(item.downloads) ?? 0);
  json.isLocal = false;
  json.isCached = false;
  json.isVirtual = item.isVirtual === true;
  return json;
}

function wholeNumber(value: unknown): number | undefined {
  const number = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  return typeof number === "number" && Number.isSafeInteger(number) && number >= 0 ? number : undefined;
}

/** The identification `group/name` (or `name`) that connector filters are matched against. */
export function filterSubject(group: string, name: string): string {
  return formatPackageId(group, name);
}
