import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { metadataHeaders } from "../../domain/asset-metadata.js";
import { ASSET_ROOT, type AssetPath, parseAssetPath } from "../../domain/asset-path.js";
import { invalid } from "../../domain/errors.js";
import { hasParam, param, parseBoolean, type QueryLike } from "../../http/params.js";
import { sendBlob } from "../../http/send-blob.js";
import { rawUploadBody } from "../../http/upload-body.js";
import { claimedDigests } from "../../http/upload-digests.js";
import type { Feed } from "../management/index.js";
import { sendFolderExport } from "./archive/reply.js";
import { access, contentBaseFor, directoryOf, errors, PATH_DOC, queryDoc, TAGS, tailOf } from "./http.js";
import { sendFolderListing } from "./listing.js";
import type { EndpointsAreaOptions } from "./index.js";
import { assetItemSchema, presentAssetItem } from "./present.js";
import type { WriteMode } from "./repository.js";
import { contentTypeOfUpload, type ServedFile } from "./service.js";

/**
 * Files of an asset directory (docs/compat.md 4.2), served like a web server: GET and HEAD with
 * validators, conditional requests and ranges; POST creates or replaces, PUT only creates, PATCH
 * only replaces, DELETE deletes; `multipart=upload|complete` for large files. Bodies of any
 * Content-Type arrive as raw streams: the type names the file, it is not parsed.
 */

/** Media types that can run script when a browser renders them: sandboxed unless the directory is a site. */
const ACTIVE_CONTENT = /html|xml|svg/i;
/**
 * A response differs by credentials, so a shared cache must not serve it to another caller
 * (docs/compat.md 4.2 lists Accept-Encoding and Authorization; the key headers are Wharf's addition).
 */
const VARY = "Accept-Encoding, Authorization, X-ApiKey, X-ProGet-ApiKey";

const WRITE_MODES: Record<string, WriteMode> = { POST: "create-or-replace", PUT: "create", PATCH: "replace" };

/** sendBlob adds `X-Content-Type-Options: nosniff` to every answer, 304 and 416 included. */
function sandboxActiveContent(reply: FastifyReply, served: Pick<ServedFile, "contentType" | "staticSite">): void {
  if (!served.staticSite && ACTIVE_CONTENT.test(served.contentType)) {
    reply.header("Content-Security-Policy", "sandbox");
  }
}

export const contentRoutes: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  const { assets, multipart, archives, blobs, config } = options;

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
    config: access("Feeds_DownloadPackage"),
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
    config: access("Feeds_DownloadPackage"),
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request), { allowRoot: true });
      if (path.path === "") return folderUnderContent(request, reply, directory, path);
      const item = await assets.item(directory, path);
      if (item.isFolder) return folderUnderContent(request, reply, directory, path);
      const served = await assets.serve(directory, item);
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

  app.route({
    method: ["POST", "PUT", "PATCH"],
    url: "/endpoints/:dir/content/*",
    schema: {
      summary: "Upload a file",
      description:
        `${PATH_DOC} The body is the file, streamed (any or no Content-Type, chunked or not); the Content-Type ` +
        "becomes the file's type (absent or form-urlencoded: from the extension). POST creates or replaces, PUT " +
        "only creates (existing file: 400), PATCH only replaces (missing: 404); replacing needs " +
        "Feeds_OverwritePackage. Missing parent folders are created. `multipart=upload` stores one part of a large " +
        "file (`id`, `index`, `offset`, `totalSize`, `partSize`, `totalParts`), `multipart=complete&id=` assembles " +
        "it (docs/compat.md 4.2). A POST with no body to a path ending in '/' creates that folder.",
      tags: TAGS,
      querystring: queryDoc({
        multipart: "`upload` (one part) or `complete`",
        id: "Multipart: the client's id of the upload",
        index: "Multipart: 0-based part number",
        offset: "Multipart: byte offset of the part",
        totalSize: "Multipart: size of the whole file",
        partSize: "Multipart: size of this part",
        totalParts: "Multipart: number of parts",
      }),
      response: { 200: z.unknown(), 201: assetItemSchema, ...errors, 409: errors[400], 413: errors[400] },
    },
    config: { ...access("Feeds_AddPackage"), storesUpload: true },
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const tail = tailOf(request);
      const path = parseAssetPath(tail, { allowRoot: true });
      const query = request.query as QueryLike;
      const body = rawUploadBody(request, config.maxUploadBytes);
      const contentType = contentTypeOfUpload(request.headers["content-type"]);
      const mayReplace = () => request.can({ api: "feeds", attribute: "Feeds_OverwritePackage", feed: directory.name });

      // The router drops a trailing '/' from the wildcard, so the URL itself tells a folder URL apart.
      const namesFolder = tail === "" || (request.url.split("?")[0] ?? "").endsWith("/");
      if (request.method === "POST" && body === undefined && namesFolder) {
        await assets.createFolder(directory, path);
        return reply.code(201).send();
      }
      if (namesFolder) {
        throw invalid("ASSET_PATH_REQUIRED", "The path ends with '/', which names a folder: give the file's name.");
      }

      const mode = param(query, "multipart")?.toLowerCase();
      if (mode !== undefined) {
        if (request.method !== "POST") throw invalid("MULTIPART_NEEDS_POST", "Multipart uploads are sent with POST.");
        if (mode === "upload") {
          await multipart.uploadPart(directory, path, query, body);
          return reply.code(200).send();
        }
        if (mode === "complete") {
          const item = await multipart.complete(directory, path, query, { contentType, mayReplace });
          return reply.code(200).send(presentAssetItem(item, contentBaseFor(request, config, directory)));
        }
        throw invalid("INVALID_MULTIPART", "'multipart' must be 'upload' or 'complete'.");
      }

      const item = await assets.putFile(directory, path, {
        body,
        contentType,
        mode: WRITE_MODES[request.method] ?? "create-or-replace",
        mayReplace,
        digests: claimedDigests(request.headers),
      });
      return reply.code(201).send(presentAssetItem(item, contentBaseFor(request, config, directory)));
    },
  });

  app.delete("/endpoints/:dir/content/*", {
    schema: {
      summary: "Delete a file",
      description: `${PATH_DOC} A folder is 400 (use delete/<path>); a missing file is not an error.`,
      tags: TAGS,
      response: { 200: z.unknown(), ...errors },
    },
    config: access("Feeds_DeletePackage"),
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request));
      await assets.delete(directory, path, { recursive: false, filesOnly: true });
      return reply.code(200).send();
    },
  });
};
