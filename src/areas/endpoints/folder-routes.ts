import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { parseAssetPath } from "../../domain/asset-path.js";
import { DomainError, invalid } from "../../domain/errors.js";
import { isPlainObject } from "../../domain/upack-manifest.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { param, parseBoolean, type QueryLike } from "../../http/params.js";
import { access, contentBaseFor, directoryOf, errors, PATH_DOC, queryDoc, TAGS, tailOf } from "./http.js";
import { sendFolderListing } from "./listing.js";
import type { EndpointsAreaOptions } from "./index.js";
import { assetItemSchema, presentAssetItem } from "./present.js";

/**
 * Folders (docs/compat.md 4.3) and item metadata (docs/compat.md 4.4) of an asset directory. Listings
 * accept the client quirks `recursive=True` and pgutil's `recursive=false)`; a missing folder lists
 * as `[]`.
 */
export const folderRoutes: FastifyPluginAsync<EndpointsAreaOptions> = async (app, options) => {
  const { assets, config } = options;
  const recursiveOf = (request: FastifyRequest) => parseBoolean(param(request.query as QueryLike, "recursive"), false);

  const list = {
    schema: {
      summary: "List a folder",
      description:
        `${PATH_DOC} Items directly in the folder, or every item below it with \`recursive=true\`, in path ` +
        "order; a folder that does not exist lists as [].",
      tags: TAGS,
      querystring: queryDoc({ recursive: "`true` to include every item below the folder (also `True`, `true)`)" }),
      response: { 200: z.array(assetItemSchema), ...errors },
    },
    config: access("view"),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const directory = await assets.directory(directoryOf(request));
      const folder = parseAssetPath(tailOf(request), { allowRoot: true });
      return sendFolderListing(request, reply, options, { directory, folder, recursive: recursiveOf(request) });
    },
  };
  // `dir` and `dir/` alike: the wildcard route does not match the bare segment.
  app.get("/endpoints/:dir/dir", list);
  app.get("/endpoints/:dir/dir/*", list);

  const createFolder = {
    schema: {
      summary: "Create a folder",
      description: `${PATH_DOC} Creates the folder and any missing parents; an existing folder is not an error.`,
      tags: TAGS,
      response: { 201: z.unknown(), ...errors },
    },
    config: access("add"),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request), { allowRoot: true });
      if (path.path !== "") await assets.createFolder(directory, path);
      return reply.code(201).send();
    },
  };
  app.post("/endpoints/:dir/dir", createFolder);
  app.post("/endpoints/:dir/dir/*", createFolder);

  const deleteItem = {
    schema: {
      summary: "Delete a file or folder",
      description: `${PATH_DOC} A folder that is not empty needs \`recursive=true\` (else 400); a missing item is not an error.`,
      tags: TAGS,
      querystring: queryDoc({ recursive: "`true` to delete a folder with its contents (also `True`)" }),
      response: { 200: z.unknown(), ...errors },
    },
    config: access("delete"),
    handler: async (request: FastifyRequest, reply: FastifyReply) => {
      const directory = await assets.directory(directoryOf(request));
      const path = parseAssetPath(tailOf(request), { allowRoot: true });
      if (path.path === "") throw invalid("ROOT_NOT_DELETABLE", "The root folder cannot be deleted.");
      await assets.delete(directory, path, { recursive: recursiveOf(request), filesOnly: false });
      return reply.code(200).send();
    },
  };
  app.post("/endpoints/:dir/delete", deleteItem);
  app.post("/endpoints/:dir/delete/*", deleteItem);

  app.get("/endpoints/:dir/metadata/*", {
    schema: {
      summary: "Get an item's metadata",
      description: `${PATH_DOC} The item with its \`userMetadata\` and own \`cacheHeader\`; 404 when missing.`,
      tags: TAGS,
      response: { 200: assetItemSchema, ...errors },
    },
    config: access("view"),
    handler: async (request) => {
      const directory = await assets.directory(directoryOf(request));
      const item = await assets.item(directory, parseAssetPath(tailOf(request)));
      return presentAssetItem(item, contentBaseFor(request, config, directory));
    },
  });

  app.post("/endpoints/:dir/metadata/*", {
    schema: {
      summary: "Update an item's metadata",
      description:
        `${PATH_DOC} JSON MetadataUpdate: \`type\` (files only), \`userMetadata\` (text or ` +
        "`{value, includeInResponseHeader: true}`), `userMetadataUpdateMode` (`update` keeps other entries, " +
        "`replace` removes them), `cacheHeader` (`{type, value}`: Inherit, NoCache, TTL seconds, Custom text; " +
        "type in any case, value as number or text). Returns the updated item.",
      tags: TAGS,
      response: { 200: assetItemSchema, ...errors, 415: errors[400] },
    },
    config: access("add"),
    handler: async (request) => {
      await requireJsonBody(request);
      // JSON `null` is a body, and not an object; only a missing body means "no changes".
      const body = request.body === undefined ? {} : request.body;
      if (!isPlainObject(body)) {
        throw new DomainError("unsupported", "JSON_REQUIRED", "Send the metadata as a JSON object (application/json).");
      }
      const directory = await assets.directory(directoryOf(request));
      const item = await assets.updateMetadata(directory, parseAssetPath(tailOf(request)), body);
      return presentAssetItem(item, contentBaseFor(request, config, directory));
    },
  });
};
