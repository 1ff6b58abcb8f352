import { actorOf } from "../../../lifecycle/events.js";
import type { FastifyPluginAsync, FastifyRequest, RouteOptions } from "fastify";
import { z } from "zod";
import { getUniversalFeed } from "../feed-lookup.js";
import { errors, errorText, feedNeed, TAGS } from "../http.js";
import type { UpackAreaOptions } from "../index.js";
import { collectUploadParams } from "./upload-params.js";
import { receivePackageUploads, registerPackageUploadRoutes } from "./upload-request.js";
import type { UpackWriteService } from "./upload-service.js";

/**
 * Universal feed writes (docs/seed-api.md area A: upload package, delete package; docs/compat.md 2.7, 2.8,
 * 2.14, docs/clients.md 4 items 1-3). Upload answers every client shape: PUT or POST, on `upload`,
 * `upload/<group...>/<name>[/<version>]` and the bare feed URL (Go upack and ProGetAutomation),
 * with a raw body of any or no Content-Type, JSON/form metadata with `content-b64`/`content-url`, or
 * a multipart/form-data form of package files (the request is read by upload-request.ts).
 * Both declare their privilege so an unauthorised upload is refused before its body is read.
 */
export interface UpackWriteOptions extends UpackAreaOptions {
  /** The app's write service (services.ts): content-url and virtual-cache invalidation are wired there. */
  readonly service: UpackWriteService;
}

/** JSON and form bodies are parsed in memory, so base64 content there is capped; raw bodies stream. */
const MAX_JSON_OR_FORM_BYTES = 64 * 1024 * 1024;

/** What an upload (201) and an import (200) answer: the stored version. */
export const uploadResult = z.object({
  group: z.string(),
  name: z.string(),
  version: z.string(),
  sha1: z.string(),
  sha256: z.string(),
  size: z.number(),
  replaced: z.boolean().describe("An existing version was overwritten"),
});

const paramsOf = (request: FastifyRequest) => request.params as { feed: string; "*"?: string };

export const upackWriteRoutes: FastifyPluginAsync<UpackWriteOptions> = async (app, options) => {
  const { config, service } = options;

  const upload: RouteOptions = {
    method: ["PUT", "POST"],
    url: "/upack/:feed/upload",
    bodyLimit: Math.min(MAX_JSON_OR_FORM_BYTES, Math.ceil(config.maxUploadBytes * 1.4) + 64 * 1024),
    config: {
      access: { need: feedNeed("Feeds_AddPackage") },
      storesUpload: true,
      bodyLimitSetting: "WHARF_MAX_UPLOAD_BYTES",
    },
    schema: {
      summary: "Upload a universal package",
      description:
        "Body: the package file (any or no Content-Type, chunked or not), or JSON/form metadata with `content-b64` " +
        "or `content-url`, or a multipart/form-data form (curl -F file=@pkg.upack) whose file parts are packages, " +
        "its text fields metadata as in a urlencoded form; several files are stored all or none and answered " +
        "with a list. A .upack is stored byte for byte unless the query string (or a form's fields, a JSON body) " +
        "adds metadata its upack.json lacks, which is then written into it (a differing value is 400); a plain " +
        "ZIP or TGZ becomes a package from `name`, `version` and other metadata. Replacing a version needs Feeds_OverwritePackage (else 409). " +
        "Digests in X-Checksum-Sha1/-Sha256, Digest or Content-Digest are verified before anything is kept. " +
        "Also answered on `upload/<group...>/<name>[/<version>]` and on the feed URL itself (docs/compat.md 2.7).",
      tags: TAGS,
      response: {
        201: z.union([uploadResult, z.array(uploadResult).describe("A form of several files: one entry each")]),
        ...errors,
        409: errorText,
        413: errorText,
      },
    },
    handler: async (request, reply) => {
      const { "*": tail } = paramsOf(request);
      const uploads = await receivePackageUploads(uploadDeps, request, (body) =>
        collectUploadParams({
          pathTail: tail,
          query: request.query,
          body: body?.fields,
          bodyKind: body?.kind ?? "raw",
        }),
      );
      // 201 for every client: Go upack and proget-updater accept nothing else (docs/compat.md 2.7).
      return reply.code(201).send(uploads.several ? uploads.results : uploads.results[0]);
    },
  };
  const uploadDeps = { service, feeds: options.feeds, maxUploadBytes: config.maxUploadBytes };
  await registerPackageUploadRoutes(app, upload, {
    urls: ["/upack/:feed", "/upack/:feed/upload", "/upack/:feed/upload/*"],
    maxUploadBytes: config.maxUploadBytes,
    metadataBodies: true,
  });

  const remove: RouteOptions = {
    method: ["DELETE", "POST"],
    url: "/upack/:feed/delete/*",
    config: { access: { need: feedNeed("Feeds_DeletePackage") } },
    schema: {
      summary: "Delete a package version",
      description:
        "Path `<group...>/<name>/<version>`; the group may contain '/' or `%2F`. 200 with an empty body; " +
        "404 'package was not found' when there is no such version (docs/compat.md 2.8).",
      tags: TAGS,
      response: errors,
    },
    handler: async (request, reply) => {
      const { feed: feedName, "*": tail = "" } = paramsOf(request);
      const feed = await getUniversalFeed(options.feeds, feedName);
      await service.deleteVersion(feed.id, tail, { actor: actorOf(request.principal) });
      return reply.code(200).send();
    },
  };
  app.route(remove);
};
