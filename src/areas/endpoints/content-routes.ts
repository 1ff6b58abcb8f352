import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { metadataHeaders } from "../../domain/asset-metadata.js";
import { ASSET_ROOT, type AssetPath, parseAssetPath } from "../../domain/asset-path.js";
import { invalid } from "../../domain/errors.js";
import { hasParam, param, parseBoolean, type QueryLike } from "../../http/params.js";
import { sendBlob } from "../../http/send-blob.js";
import type { Feed } from "../management/index.js";
import { sendFolderExport } from "./archive/reply.js";
import { isPostgres } from "../../storage/metadata-db.js";
import { assetDownloadTimesOf } from "./download-times.js";
import { postgresAssetDownloadTimesOf } from "./download-times-postgres.js";
import { access, directoryOf, errors, PATH_DOC, queryDoc, TAGS, tailOf } from "./http.js";
import { sendFolderListing } from "./listing.js";
import type { EndpointsAreaOptions } from "./index.js";
import type { ServedFile } from "./service.js";
import { fileUploadRoutes } from "./upload-routes.js";

/**
 * Files of an asset directory (docs/compat.md 4.2), served like a web server: GET and HEAD with
 * validators, conditional requests and ranges; POST creates or replaces, PUT only creates, PATCH
 * only replaces, DELETE deletes; `multipart=upload|complete` for large files (upload-routes.ts).
 * Bodies of any Content-Type arrive as raw streams: the type names the file, it is not parsed;
 * except in upload-routes.ts, a multipart/form-data form.
 */

/** Media types that can run script when a browser renders them: sandboxed unless the directory is a site. */
const ACTIVE_CONTENT = /html|xml|svg/i;
/**
 * A response differs by credentials, so a shared cache must not serve it to another caller
 * (docs/compat.md 4.2 lists Accept-Encoding and Authorization; the key headers are Wharf's addition).
 */
const VARY = "Accept-Encoding, Authorization, X-ApiKey, X-ProGet-ApiKey";

/** sendBlob adds `X-Content-Type-Options: nosniff` to every answer, 304 and 416 included. */
function sandboxActiveContent(reply: FastifyReply, served: Pick<ServedFile, "contentType" | "staticSite">): void {
  if (!served.staticSite && ACTIVE_CONTENT.test(served.contentType)) {
    reply.header("Content-Security-Policy", "sandbox");
  }
}

export const contentRoutes: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  const { assets, archives, blobs } = options;
  const { db } = options;
  const downloadTimes = isPostgres(db) ? postgresAssetDownloadTimesOf(db) : assetDownloadTimesOf(db);

  // Encapsulated: in this plugin every body, JSON and forms included, is the file's bytes.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", (_request, payload, done) => done(null, payload));

  /**
   * A folder addressed under content/ (Cake.ProGet builds directory URLs that way, docs/clients.md 3.15):
   * `format` exports it, `recursive` lists it; anything else is the 400 of docs/compat.md 4.2.
   */
  async function folderUnderContent(request: FastifyRequest, reply: FastifyReply, directory: Feed, path: AssetPath) {
    const query = request.query as QueryLike;
    if (hasParam(query, "format")) return sendFolderExport(request, reply, archives, directory, path);
    if (hasParam(query, "recursive")) {
      const recursive = parseBoolean(param(query, "recursive"), false);
      return sendFolderListing(request, reply, options, { directory, folder: path, recursive });
    }
    throw invalid("ASSET_IS_FOLDER", "The path names a folder; list it with dir/<path> or download a file.");
  }

  // `content` and `content/` alike name the root folder: the wildcard route does not match the bare segment.
  app.route({
    method: ["GET", "HEAD"],
    url: "/endpoints/:dir/content",
    schema: { hide: true },
    config: access("download"),
    handler: async (request, reply) =>
      folderUnderContent(request, reply, await assets.directory(directoryOf(request)), ASSET_ROOT),
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/endpoints/:dir/content/*",
    schema: {
      summary: "Download a file",
      description:
        `${PATH_DOC} Served like a web server: Content-Type, Content-Length, ETag, Last-Modified, Cache-Control ` +
        "(the item's or inherited cache setting), Range (206/416, If-Range), If-None-Match/If-Modified-Since (304). " +
        "User metadata marked `includeInResponseHeader` is sent as headers. A folder path is 400, except with " +
        "`format` (export) or `recursive` (listing), as Cake.ProGet addresses folders.",
      tags: TAGS,
      querystring: queryDoc({
        format: "Folders only: `zip` or `tgz` exports the folder",
        recursive: "Folders only: list the folder (with `format`: include subfolders)",
      }),
      response: { 200: z.unknown().describe("The file"), ...errors },
    },
    config: access("download"),
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request), { allowRoot: true });
      if (path.path === "") return folderUnderContent(request, reply, directory, path);
      const item = await assets.item(directory, path);
      if (item.isFolder) return folderUnderContent(request, reply, directory, path);
      const served = await assets.serve(directory, item);
      // Retention's "not downloaded for D days" (download-times.ts): a GET uses the file, a HEAD does not.
      if (request.method === "GET") downloadTimes.record(directory.id, item.key, options.clock.now());
      sandboxActiveContent(reply, served);
      reply.header("Vary", VARY);
      return sendBlob(
        request,
        reply,
        {
          sha256: served.item.file.sha256,
          size: served.item.file.size,
          lastModified: new Date(item.modifiedAt),
          contentType: served.contentType,
          cacheControl: served.cacheControl,
          extraHeaders: Object.fromEntries(metadataHeaders(item.userMetadata)),
        },
        blobs,
      );
    },
  });

  // Stamps still due are written before the database closes (main.ts closes it after the app).
  app.addHook("onClose", async () => {
    try {
      if (isPostgres(db) ? !db.pool.ending : db.open) await downloadTimes.flush();
    } catch (error) {
      app.log.error({ err: error }, "pending asset download times not written at shutdown");
    }
  });

  // Uploads (POST, PUT, PATCH) are upload-routes.ts: this plugin's raw bodies, and forms.
  await app.register(fileUploadRoutes, options);

  app.delete("/endpoints/:dir/content/*", {
    schema: {
      summary: "Delete a file",
      description: `${PATH_DOC} A folder is 400 (use delete/<path>); a missing file is not an error.`,
      tags: TAGS,
      response: { 200: z.unknown(), ...errors },
    },
    config: access("delete"),
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request));
      await assets.delete(directory, path, { recursive: false, filesOnly: true });
      return reply.code(200).send();
    },
  });
};
