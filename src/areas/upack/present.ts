import { z } from "zod";
import type { PackageRow, VersionRow } from "./read/query-repository.js";

/**
 * PackageData and VersionData as JSON text (docs/seed-api.md area A resources; docs/compat.md 2.2, 2.3).
 * Built by concatenation rather than through the response schemas: a `versions` answer can hold
 * 10,000 versions, and validating every row through zod would cost several times what building it
 * does. The schemas below document the shapes (OpenAPI) and the tests check real answers with them.
 *
 * Shared rules: `group` is left out for the empty group; `downloads` is a decimal string (the
 * spec's type, and what every client parses); manifest properties, `_`-prefixed custom ones
 * included, are echoed after the server's own; dates carry milliseconds (docs/PRODUCT.md "Dates").
 */

const dependencyList = z.array(z.string()).describe("`<group>:<name>:<version>` strings Inedo.UPack can parse");
const origin = {
  isLocal: z.boolean().describe("true for uploaded packages, false for ones pulled from a connector"),
  isCached: z.boolean(),
  isVirtual: z.boolean(),
};

export const packageDataSchema = z
  .object({
    group: z.string().optional().describe("Omitted for the empty group"),
    name: z.string(),
    latestVersion: z.string().describe("Highest version by the Inedo.UPack ordering, prereleases included"),
    versions: z.array(z.string()).describe("Every version, highest first"),
    title: z.string().optional(),
    icon: z.string().optional(),
    description: z.string().optional(),
    dependencies: dependencyList,
    tags: z.array(z.string()),
    downloads: z.string().describe("Decimal count of downloads of all versions"),
    ...origin,
  })
  .catchall(z.unknown())
  .describe("PackageData: the package as its latest version describes it, plus any custom properties");

export const fileEntrySchema = z.object({
  name: z.string().describe("Path relative to the package contents (`package/`)"),
  size: z.number().int(),
  date: z.string(),
});

export const versionDataSchema = z
  .object({
    group: z.string().optional().describe("Omitted for the empty group"),
    name: z.string(),
    version: z.string(),
    title: z.string().optional(),
    icon: z.string().optional(),
    description: z.string().optional(),
    dependencies: dependencyList,
    tags: z.array(z.string()),
    downloads: z.string().describe("Decimal count"),
    published: z.string().describe("yyyy-MM-ddTHH:mm:ss.fffZ"),
    size: z.number().int().describe("Bytes of the package file"),
    sha1: z.string().describe("Lowercase hex SHA-1 of the package file"),
    ...origin,
    fileList: z.array(fileEntrySchema).optional().describe("Only with includeFileList=true"),
  })
  .catchall(z.unknown())
  .describe("VersionData: one version, its manifest properties and what the server knows of its file");

const text = (value: string) => JSON.stringify(value);
const bool = (flag: number) => (flag ? "true" : "false");

/** `"group":"…",` or nothing for the empty group. */
const groupMember = (group: string) => (group === "" ? "" : `"group":${text(group)},`);

/** Properties the server reports itself: a manifest property of the same name must not shadow them. */
const SERVER_KEYS: ReadonlySet<string> = new Set([
  "group",
  "name",
  "version",
  "latestVersion",
  "versions",
  "downloads",
  "published",
  "size",
  "sha1",
  "isLocal",
  "isCached",
  "isVirtual",
  "fileList",
]);

/**
 * The manifest's own properties as JSON members to splice after the server's identity members
 * (",\"title\":…" or ""): `_`-prefixed custom ones included, server-owned names left out, and
 * `dependencies`/`tags` always present as arrays.
 */
function manifestMembers(manifestText: string): string {
  const manifest = JSON.parse(manifestText) as Record<string, unknown>;
  // Setting to undefined drops a member from JSON.stringify and, unlike delete, keeps the object fast.
  for (const key of SERVER_KEYS) if (manifest[key] !== undefined) manifest[key] = undefined;
  manifest.dependencies ??= [];
  manifest.tags ??= [];
  const inner = JSON.stringify(manifest).slice(1, -1);
  return inner === "" ? "" : `,${inner}`;
}

export function packageJson(row: PackageRow): string {
  return (
    `{${groupMember(row.group_name)}"name":${text(row.name)},"latestVersion":${text(row.latest_version)},` +
    `"versions":${row.versions_desc}${manifestMembers(row.manifest)},"downloads":"${row.downloads}",` +
    `"isLocal":${bool(row.is_cached ? 0 : 1)},"isCached":${bool(row.is_cached)},"isVirtual":${bool(row.is_virtual)}}`
  );
}

/** `deploymentCount`: package deployment records of the version (docs/compat.md 6.2), when they are tracked. */
export function versionJson(row: VersionRow, deploymentCount?: number): string {
  const fileList = row.file_list === undefined ? "" : `,"fileList":${fileListJson(row.file_list)}`;
  const deployments = deploymentCount === undefined ? "" : `,"deploymentCount":${deploymentCount}`;
  return (
    `{${groupMember(row.group_name)}"name":${text(row.name)},"version":${text(row.version)}${manifestMembers(row.manifest)},` +
    `"downloads":"${row.downloads}","published":${text(isoMillis(row.published_at))},"size":${row.size},` +
    `"sha1":${text(row.sha1.toLowerCase())},"isLocal":${bool(row.is_cached ? 0 : 1)},` +
    `"isCached":${bool(row.is_cached)},"isVirtual":${bool(row.is_virtual)}${deployments}${fileList}}`
  );
}

export function arrayJson<T>(rows: readonly T[], item: (row: T) => string): string {
  return `[${rows.map(item).join(",")}]`;
}

const CONTENT_PREFIX = "package/";

/**
 * The stored list names every archive entry; clients get the files of the contents, named
 * relative to `package/` as the old spec's example shows (`assets/muth.png`). Directories and
 * metacontent (upack.json, install scripts) are not part of the contents.
 */
function fileListJson(stored: string): string {
  const entries = JSON.parse(stored) as Array<{ name: string; size: number; date: string }>;
  const files = entries
    .filter(
      (entry) =>
        entry.name.length > CONTENT_PREFIX.length &&
        entry.name.slice(0, CONTENT_PREFIX.length).toLowerCase() === CONTENT_PREFIX &&
        !entry.name.endsWith("/"),
    )
    .map((entry) => ({
      name: entry.name.slice(CONTENT_PREFIX.length),
      size: entry.size,
      date: isoMillis(entry.date),
    }));
  return JSON.stringify(files);
}

const ISO_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Stored dates are written by toISOString; anything else is normalised rather than passed on. */
export function isoMillis(stored: string): string {
  if (ISO_MILLIS.test(stored)) return stored;
  const date = new Date(stored);
  return Number.isNaN(date.getTime()) ? new Date(0).toISOString() : date.toISOString();
}

/** The services a feed offers (docs/seed-api.md "Feed metadata"), in the spec's order. */
export const FEED_SERVICES = [
  "VirtualPackages",
  "RemotePackages",
  "UploadPackage",
  "UploadContents",
  "Delete",
  "DownloadContents",
] as const;
export type FeedServiceName = (typeof FEED_SERVICES)[number];

export const feedMetadataSchema = z
  .object({
    apiVersion: z.string().describe("Universal feed API version the server implements"),
    name: z.string(),
    description: z.string(),
    version: z.string().describe("Universal feed API version of this feed"),
    packageCount: z.number().int(),
    packageVersionCount: z.number().int(),
    services: z.array(z.enum(FEED_SERVICES)),
  })
  .describe("Feed metadata");
export type FeedMetadata = z.infer<typeof feedMetadataSchema>;
