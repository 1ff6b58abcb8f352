import type { FastifyRequest } from "fastify";
import type { AccessNeed } from "../../domain/principal.js";
export { errors, errorText } from "../upack/download-routes.js";
export { queryDoc } from "../../http/query-doc.js";

export const TAGS = ["common packages API"];

export const feedOf = (request: FastifyRequest) => (request.params as { feed: string }).feed;

/** The feed privilege a route needs, on the feed its URL names (docs/compat.md 2.14). */
export const feedNeed =
  (attribute: "Feeds_ViewFeed" | "Feeds_DownloadPackage" | "Feeds_AddPackage" | "Feeds_DeletePackage") =>
  (request: FastifyRequest): AccessNeed => ({ api: "feeds", attribute, feed: feedOf(request) });
