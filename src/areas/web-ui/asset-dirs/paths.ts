import type { FastifyRequest } from "fastify";
import { type AssetPath, parseAssetPath } from "../../../domain/asset-path.js";
import { invalid } from "../../../domain/errors.js";
import { UI_MOUNT_PREFIX } from "../browser-mounts.js";

/** Where the file browser's pages and actions are; what each needs is the API's table (ASSET_NEEDS). */
export { type AssetAction, assetNeed } from "../../endpoints/http.js";

/** `a b/ü.txt` -> `a%20b/%C3%BC.txt`: each segment escaped, the slashes kept. */
const encodePath = (path: string) => path.split("/").map(encodeURIComponent).join("/");

/** The browser's page of a folder (ends with '/') or file. */
export function browseUrl(feed: string, path: string, isFolder: boolean): string {
  const tail = path === "" ? "" : encodePath(path) + (isFolder ? "/" : "");
  return `/assets/${encodeURIComponent(feed)}/${tail}`;
}

/** A file's bytes for browsers: the asset directory's download route mounted under /ui (ui-api.ts). */
export const fileUrl = (feed: string, path: string) =>
  `${UI_MOUNT_PREFIX}/endpoints/${encodeURIComponent(feed)}/content/${encodePath(path)}`;

/** The form actions of ui routes (actions.ts), for the item or folder at `path`; folders end with '/'. */
export function actionUrl(action: "upload" | "folder" | "delete" | "metadata", feed: string, path: string): string {
  return `/ui/assets/${encodeURIComponent(feed)}/${action}/${path === "" ? "" : `${encodePath(path)}/`}`;
}

export const feedOf = (request: FastifyRequest) => (request.params as { feed: string }).feed;

/** What the URL names: the path inside the directory, and whether it ends with '/' (a folder URL). */
export interface NamedPath {
  readonly path: AssetPath;
  readonly endsWithSlash: boolean;
}

/**
 * The path the wildcard holds, refused (400) when unsafe: parseAssetPath refuses '..', backslashes,
 * control characters and absolute paths, after the router's one decoding (so `%2e%2e` is '..'). An
 * encoded slash or backslash in the raw URL is refused too: it would name another path than the
 * segments the viewer sees.
 */
export function namedPath(request: FastifyRequest): NamedPath {
  const rawPath = request.url.split("?")[0] ?? "";
  if (/%2f|%5c/i.test(rawPath)) {
    throw invalid("INVALID_ASSET_PATH", "The path is refused: it holds an encoded '/' or '\\'.");
  }
  const tail = (request.params as { "*"?: string })["*"] ?? "";
  // The router ignores a trailing '/' (ignoreTrailingSlash): the URL itself tells a folder URL apart.
  return { path: parseAssetPath(tail, { allowRoot: true }), endsWithSlash: rawPath.endsWith("/") };
}

export interface Crumb {
  readonly name: string;
  readonly href: string;
}

/** Feeds / <feed> / each folder above `path`, each a link. */
export function breadcrumbs(feed: string, path: string): Crumb[] {
  const crumbs: Crumb[] = [
    { name: "Feeds", href: "/feeds" },
    { name: feed, href: browseUrl(feed, "", true) },
  ];
  const segments = path === "" ? [] : path.split("/");
  for (let i = 0; i < segments.length - 1; i++) {
    crumbs.push({ name: segments[i] ?? "", href: browseUrl(feed, segments.slice(0, i + 1).join("/"), true) });
  }
  return crumbs;
}

/** The folder holding `path` ('' for items in the root). */
export const parentOf = (path: string) => (path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "");
