import { parseDependency } from "../../../domain/upack-range.js";
import { isoMillis } from "../../upack/index.js";
import { UI_MOUNT_PREFIX } from "../browser-mounts.js";

/**
 * What pages show of stored values: sizes, dates, the manifest's descriptive members, and the
 * URLs of pages and of the API. Every string here goes through the template's `<%= %>` escaping;
 * URLs are built with encodeURIComponent, so a value never changes a URL's structure.
 */

export const PAGE_SIZE = 50;
/** A page number beyond this is read as this: OFFSET is linear, and nobody pages that far by hand. */
const MAX_PAGE = 100_000;

/** `?page=`: a positive integer, 1 when absent or not a number (a page is never an error). */
export function pageNumber(raw: unknown): number {
  const value = typeof raw === "string" && /^\d{1,9}$/.test(raw) ? Number(raw) : 1;
  return Math.min(Math.max(value, 1), MAX_PAGE);
}

/** The first value of a query parameter, as a string. */
export function queryText(query: unknown, name: string): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.[name];
  const first = Array.isArray(value) ? value[0] : value;
  return typeof first === "string" ? first : undefined;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** `2024-01-02 03:04 UTC`: the same for every viewer, whatever their time zone. */
export function formatDate(stored: string): string {
  const iso = isoMillis(stored);
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

export interface DependencyView {
  readonly text: string;
  /** The package page when the dependency is a package of this feed. */
  readonly href?: string;
}

/** What a manifest says about its package, each member checked for its type (a manifest is user data). */
export interface ManifestView {
  readonly title?: string;
  readonly description?: string;
  /** The icon's path inside the package's contents (`package://` stripped); web addresses are left out. */
  readonly icon?: string;
  readonly tags: string[];
  /** As written, and parsed when they parse (to link them). */
  readonly dependencies: Array<{ text: string; group?: string; name?: string }>;
}

const PACKAGE_ICON = "package://";
const text = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
const strings = (value: unknown) => (Array.isArray(value) ? value.filter((item) => typeof item === "string") : []);

export function manifestView(manifestText: string): ManifestView {
  let manifest: Record<string, unknown>;
  try {
    manifest = JSON.parse(manifestText) as Record<string, unknown>;
  } catch {
    manifest = {};
  }
  const icon = text(manifest.icon);
  return {
    ...(text(manifest.title) ? { title: text(manifest.title) } : {}),
    ...((text(manifest.description) ?? text(manifest.shortDescription))
      ? { description: text(manifest.description) ?? text(manifest.shortDescription) }
      : {}),
    // Only an icon inside the package is shown (`package://<path>`, served from this origin): the
    // pages' CSP loads no image from elsewhere, and a viewer's browser is not sent to other hosts.
    ...(icon !== undefined && icon.toLowerCase().startsWith(PACKAGE_ICON)
      ? { icon: icon.slice(PACKAGE_ICON.length) }
      : {}),
    tags: strings(manifest.tags),
    dependencies: strings(manifest.dependencies).map((dependency) => {
      const parsed = parseDependency(dependency);
      return parsed ? { text: dependency, group: parsed.group, name: parsed.name } : { text: dependency };
    }),
  };
}

/** `group/name`, or the name alone for the empty group. */
export const fullName = (group: string, name: string) => (group === "" ? name : `${group}/${name}`);

export const feedPageUrl = (feed: string) => `/feeds/${encodeURIComponent(feed)}`;

/** The package page: `/feeds/<feed>/packages/<name>?group=<group>` (the group may hold '/'). */
export function packagePageUrl(
  feed: string,
  group: string,
  name: string,
  extra: Record<string, string | number | undefined> = {},
): string {
  const query = new URLSearchParams();
  if (group !== "") query.set("group", group);
  for (const [key, value] of Object.entries(extra)) if (value !== undefined) query.set(key, String(value));
  const search = query.toString();
  return `${feedPageUrl(feed)}/packages/${encodeURIComponent(name)}${search === "" ? "" : `?${search}`}`;
}

/** `<group segments>/<name>/<version>` as the download API reads it, each segment encoded. */
function packagePath(group: string, name: string, version: string): string {
  const segments = [...(group === "" ? [] : group.split("/")), name, version];
  return segments.map(encodeURIComponent).join("/");
}

/** The page's links: the upack download routes as mounted for browsers (downloads.ts). */
export function downloadUrls(feed: string, group: string, name: string, version: string) {
  const base = `${UI_MOUNT_PREFIX}/upack/${encodeURIComponent(feed)}/download/${packagePath(group, name, version)}`;
  return { upack: base, zip: `${base}?contentOnly=zip`, tgz: `${base}?contentOnly=tgz` };
}

/** One file of a version (`path` relative to the archive root, e.g. `package/bin/tool`). */
export function fileDownloadUrl(feed: string, group: string, name: string, version: string, path: string): string {
  return `${UI_MOUNT_PREFIX}/upack/${encodeURIComponent(feed)}/download-file/${packagePath(group, name, version)}?path=${encodeURIComponent(path)}`;
}
