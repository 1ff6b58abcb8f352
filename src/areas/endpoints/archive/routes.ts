import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { parseAssetPath } from "../../../domain/asset-path.js";
import { invalid } from "../../../domain/errors.js";
import { needOnFeed } from "../../../domain/principal.js";
import { param, parseBoolean, type QueryLike } from "../../../http/params.js";
import { rawUploadBody } from "../../../http/upload-body.js";
import { archiveFormatOf, sendFolderExport } from "./reply.js";
import { access, directoryOf, errors, PATH_DOC, queryDoc, TAGS, tailOf } from "../http.js";
import type { EndpointsAreaOptions } from "../index.js";

/**
 * Export and import of asset folders as archives (docs/compat.md 4.5; docs/clients.md pgutil, ProGetAutomation):
 * `GET|HEAD export/[<path>]` streams a folder as ZIP or gzipped TAR, `POST import/[<path>]`
 * extracts one into a folder. The bare `export` and `import` address the root.
 */

const importResultSchema = z.object({
  files: z.number().int().nonnegative().describe("Files stored (created or replaced)"),
  skipped: z.number().int().nonnegative().describe("Files kept because they exist already and `overwrite` is not true"),
});

export const archiveRoutes: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  const { assets, archives, config } = options;

  // Encapsulated: an import body is the raw archive whatever its Content-Type says. ProGetAutomation
  // labels it `multipart/form-data` without a boundary, pgutil sends no type, the docs
  // `application/octet-stream` (docs/clients.md 3.4, 3.9).
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, payload, done) => done(null, payload));

  const exportArchive = async (request: FastifyRequest, reply: FastifyReply) => {
    const directory = await assets.directory(directoryOf(request));
    const folder = parseAssetPath(tailOf(request), { allowRoot: true });
    return sendFolderExport(request, reply, archives, directory, folder);
  };
  const exportSchema = {
    summary: "Export a folder as an archive",
    description:
      `${PATH_DOC} Streams the folder (the root when no path is given) as a ZIP (\`format=zip\`, the default) or ` +
      "a gzipped TAR (`format=tgz`); entry names are relative to the folder, folders are directory entries " +
      "(empty ones included), times are the items' modification times. `recursive=false` exports only the " +
      "items directly in the folder (subfolders as empty directory entries); the default is `true`. A missing " +
      "folder is 404, a file 400.",
    tags: TAGS,
    querystring: queryDoc({
      format: "`zip` (default) or `tgz`",
      recursive: "`true` (default) to include everything below the folder (also `True`, `true)`)",
    }),
    response: { 200: z.unknown().describe("The archive"), ...errors },
  };
  for (const url of ["/endpoints/:dir/export", "/endpoints/:dir/export/*"]) {
    app.route({
      method: ["GET", "HEAD"],
      url,
      schema: exportSchema,
      config: access("download"),
      handler: exportArchive,
    });
  }

  const importArchive = async (request: FastifyRequest, reply: FastifyReply) => {
    const directory = await assets.directory(directoryOf(request));
    const folder = parseAssetPath(tailOf(request), { allowRoot: true });
    const query = request.query as QueryLike;
    const format = archiveFormatOf(query);
    const overwrite = parseBoolean(param(query, "overwrite"), false);
    const body = rawUploadBody(request, config.maxUploadBytes);
    if (body === undefined) throw invalid("ARCHIVE_REQUIRED", "Send the archive to import as the request body.");
    const mayReplace = () => request.can(needOnFeed("Feeds_OverwritePackage", directory.name));
    const result = await archives.import(directory, folder, body, { format, overwrite, mayReplace });
    return reply.code(200).send(result);
  };
  const importSchema = {
    summary: "Import an archive into a folder",
    description:
      `${PATH_DOC} The body is a ZIP (\`format=zip\`, the default) or gzipped TAR (\`format=tgz\`), raw, whatever ` +
      "the Content-Type says. It is extracted into the folder (the root when no path is given; created if " +
      "missing): directories become folders, files are stored. Existing files are kept and counted as skipped " +
      "unless `overwrite=true`, which needs Feeds_OverwritePackage when a file would be replaced (else 403). " +
      "The whole archive is checked before anything is written: unsafe names (`..`, absolute, drive letters, " +
      "backslashes, control characters), links and devices, a file where a folder is or the reverse are 400; " +
      "too many entries, too large or too well compressed are 413, as is a body over the upload limit.",
    tags: TAGS,
    querystring: queryDoc({
      format: "`zip` (default) or `tgz`",
      overwrite: "`true` to replace existing files (default `false`: they are kept)",
    }),
    response: { 200: importResultSchema, ...errors, 413: errors[400] },
  };
  for (const url of ["/endpoints/:dir/import", "/endpoints/:dir/import/*"]) {
    app.route({
      method: "POST",
      url,
      schema: importSchema,
      config: { ...access("add"), storesUpload: true },
      handler: importArchive,
    });
  }
};
