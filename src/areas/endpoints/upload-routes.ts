import type { FastifyPluginAsync, RouteOptions } from "fastify";
import { z } from "zod";
import { parseAssetPath } from "../../domain/asset-path.js";
import { invalid } from "../../domain/errors.js";
import { acceptFormDataUploads, isFormDataUpload } from "../../http/form-data-upload.js";
import { hasParam, param, type QueryLike } from "../../http/params.js";
import { rawUploadBody } from "../../http/upload-body.js";
import { claimedDigests } from "../../http/upload-digests.js";
import { storeFormUpload } from "./form-upload.js";
import { access, assetNeed, contentBaseFor, directoryOf, errors, PATH_DOC, queryDoc, TAGS, tailOf } from "./http.js";
import type { EndpointsAreaOptions } from "./index.js";
import { assetItemSchema, presentAssetItem } from "./present.js";
import type { WriteMode } from "./repository.js";
import { contentTypeOfUpload } from "./service.js";

/**
 * Uploads of asset directory files (docs/compat.md 4.2): POST creates or replaces, PUT only creates,
 * PATCH only replaces; `multipart=upload|complete` is ProGet's chunked upload protocol for large
 * files (multipart/). Registered by content-routes.ts, whose parsers hand every body over as the
 * raw stream of the file; here, and only here, a multipart/form-data form is read as a form
 * (form-upload.ts).
 */

const WRITE_MODES: Record<string, WriteMode> = { POST: "create-or-replace", PUT: "create", PATCH: "replace" };

export const fileUploadRoutes: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  const { assets, multipart, config } = options;
  await acceptFormDataUploads(app, config.maxUploadBytes);

  const upload: RouteOptions = {
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
        "it (docs/compat.md 4.2). A POST with no body to a path ending in '/' creates that folder. " +
        "A multipart/form-data form (curl -F file=@setup.exe) stores its one file at the path, or, with several " +
        "files or a folder path, each under that folder by its filename (a relative path, checked like every " +
        "path); all or none, answered with the item or a list of items; its text fields are ignored.",
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
      response: {
        200: z.unknown(),
        201: z.union([assetItemSchema, z.array(assetItemSchema).describe("A form of several files: one item each")]),
        ...errors,
        409: errors[400],
        413: errors[400],
      },
    },
    config: { ...access("add"), storesUpload: true },
    handler: async (request, reply) => {
      const directory = await assets.directory(directoryOf(request));
      const tail = tailOf(request);
      const path = parseAssetPath(tail, { allowRoot: true });
      const query = request.query as QueryLike;
      const mayReplace = () => request.can(assetNeed("overwrite", directory.name));
      // The router drops a trailing '/' from the wildcard, so the URL itself tells a folder URL apart.
      const namesFolder = tail === "" || (request.url.split("?")[0] ?? "").endsWith("/");

      if (isFormDataUpload(request)) {
        if (hasParam(query, "multipart")) {
          throw invalid(
            "FORM_NOT_A_PART",
            "A part of a multipart upload (?multipart=upload) is sent as the raw body, not as a multipart/form-data form.",
          );
        }
        const mode = WRITE_MODES[request.method] ?? "create-or-replace";
        const items = await storeFormUpload(assets, request, {
          directory,
          path,
          namesFolder,
          mode,
          mayReplace: await mayReplace(),
        });
        const presented = items.map((item) => presentAssetItem(item, contentBaseFor(request, config, directory)));
        return reply.code(201).send(presented.length === 1 ? presented[0] : presented);
      }

      if (path.path === "") throw invalid("ASSET_PATH_REQUIRED", "Give the file's name after content/.");
      const body = rawUploadBody(request, config.maxUploadBytes);
      const contentType = contentTypeOfUpload(request.headers["content-type"]);
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
  };
  app.route(upload);
  // `content` and `content/` name the root: a form's files may go there (the wildcard does not match it).
  app.route({ ...upload, url: "/endpoints/:dir/content", schema: { ...upload.schema, hide: true } });
};
