import type { FastifyRequest } from "fastify";
import type { Config } from "../../config.js";
import { type AccessNeed, type FeedAttribute, needOnFeed } from "../../domain/principal.js";
import { publicBaseUrl } from "../../http/base-url.js";
import { errorText } from "../../http/errors.js";
import { needOnRequestFeed } from "../../http/feed-access.js";
import type { Feed } from "../management/index.js";
import { contentBaseUrl } from "./present.js";
export { queryDoc } from "../../http/query-doc.js";

/** What every asset directory route shares: its parameters, needs and documentation pieces. */
export const TAGS = ["asset directory"];
export { errorText };
export const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const directoryOf = (request: FastifyRequest) => (request.params as { dir: string }).dir;
/** The wildcard tail: the path inside the directory, percent-decoded once by the router. */
export const tailOf = (request: FastifyRequest) => (request.params as { "*"?: string })["*"] ?? "";

/**
 * docs/compat.md 4.6: View to list and read metadata, Download to read a file, Add to upload, create
 * folders, import and edit metadata, Overwrite to replace a file, Delete to delete; on the directory
 * the URL names. Asset directories are feeds, so Feed keys scoped to the directory work. The web UI's
 * file browser asks the same table.
 */
export const ASSET_NEEDS = {
  view: "Feeds_ViewFeed",
  download: "Feeds_DownloadPackage",
  add: "Feeds_AddPackage",
  overwrite: "Feeds_OverwritePackage",
  delete: "Feeds_DeletePackage",
} as const satisfies Record<string, FeedAttribute>;

export type AssetAction = keyof typeof ASSET_NEEDS;

/** What `action` on the directory `directory` needs. */
export const assetNeed = (action: AssetAction, directory: string): AccessNeed =>
  needOnFeed(ASSET_NEEDS[action], directory);

/** Route options: `action`'s need on the directory the URL names. */
export const access = (action: AssetAction) => ({
  access: { need: needOnRequestFeed(ASSET_NEEDS[action], directoryOf) },
});

/** Where this caller downloads the directory's files: WHARF_BASE_URL or the request's host (docs/compat.md 4.1 `content`). */
export const contentBaseFor = (request: FastifyRequest, config: Config, directory: Feed) =>
  contentBaseUrl(publicBaseUrl(config.baseUrl, request, config.port), directory.name);

export const PATH_DOC =
  "The path inside the directory, '/'-separated; '..', backslashes, control characters and absolute paths are refused.";
