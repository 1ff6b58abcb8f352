import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { AccessNeed } from "../../domain/principal.js";
export { queryDoc } from "../../http/query-doc.js";
import type { AssetItemJson } from "./present.js";

/** What every asset directory route shares: its parameters, needs and documentation pieces. */

export const TAGS = ["asset directory"];
export const errorText = z.string().describe("Plain-text error message");
export const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const directoryOf = (request: FastifyRequest) => (request.params as { dir: string }).dir;
/** The wildcard tail: the path inside the directory, percent-decoded once by the router. */
export const tailOf = (request: FastifyRequest) => (request.params as { "*"?: string })["*"] ?? "";

export type AssetAttribute =
  "Feeds_ViewFeed" | "Feeds_DownloadPackage" | "Feeds_AddPackage" | "Feeds_OverwritePackage" | "Feeds_DeletePackage";

/**
 * compat.md 4.6: View/Download to read, Add to upload and import, Overwrite/Delete to replace and
 * delete. Asset directories are feeds, so Feed keys scoped to the directory work.
 */
export const directoryNeed =
  (attribute: AssetAttribute) =>
  (request: FastifyRequest): AccessNeed => ({ api: "feeds", attribute, feed: directoryOf(request) });

export const access = (attribute: AssetAttribute) => ({ access: { need: directoryNeed(attribute) } });

/**
 * Sends a listing as JSON text. Fastify hands a string through untouched, so the route's response
 * schema documents the shape without being checked item by item: for a folder of 10,000 items the
 * check cost several hundred milliseconds (bench/endpoints-scenarios.ts), the JSON itself ~15 ms.
 */
export function sendListing(reply: FastifyReply, items: readonly AssetItemJson[]): FastifyReply {
  return reply.code(200).type("application/json; charset=utf-8").send(JSON.stringify(items));
}

export const PATH_DOC =
  "The path inside the directory, '/'-separated; '..', backslashes, control characters and absolute paths are refused.";
