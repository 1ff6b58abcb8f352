import type { FastifyReply, FastifyRequest } from "fastify";
import type { AssetPath } from "../../../domain/asset-path.js";
import { invalid } from "../../../domain/errors.js";
import { attachment } from "../../../http/content-disposition.js";
import { param, parseBoolean, type QueryLike } from "../../../http/params.js";
import type { Feed } from "../../management/index.js";
import type { ArchiveFormat, AssetArchives } from "./service.js";

/** `format` of an export or import (docs/compat.md 4.5): `zip` (the default) or `tgz`, in any case; else 400. */
export function archiveFormatOf(query: QueryLike): ArchiveFormat {
  const format = (param(query, "format") ?? "zip").toLowerCase();
  if (format !== "zip" && format !== "tgz") throw invalid("INVALID_FORMAT", "'format' must be 'zip' or 'tgz'.");
  return format;
}

/** Content-Type and Content-Disposition of an exported archive named after `baseName`. */
function archiveHeaders(format: ArchiveFormat, baseName: string): Record<string, string> {
  return {
    "content-type": format === "zip" ? "application/zip" : "application/gzip",
    "content-disposition": attachment(`${baseName}.${format === "zip" ? "zip" : "tar.gz"}`),
  };
}

/**
 * Answers an export of `folder` per the request's `format` and `recursive`: for `export/<path>`
 * and for folders addressed under `content/` (Cake.ProGet, docs/clients.md 3.15).
 */
export async function sendFolderExport(
  request: FastifyRequest,
  reply: FastifyReply,
  archives: AssetArchives,
  directory: Feed,
  folder: AssetPath,
): Promise<FastifyReply> {
  const query = request.query as QueryLike;
  const format = archiveFormatOf(query);
  // Default true: exporting a folder means all of it; a default that silently left subfolders
  // out would lose content on an export/import round trip (pgutil always says which it wants).
  const recursive = parseBoolean(param(query, "recursive"), true);
  const stream = await archives.export(directory, folder, { format, recursive });
  reply.code(200).headers(archiveHeaders(format, folder.name || directory.name));
  if (request.method !== "HEAD") return reply.send(stream);
  stream.destroy(); // never read, so nothing was opened
  return reply.send();
}
