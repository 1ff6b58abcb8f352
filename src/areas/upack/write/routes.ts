import type { FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { z } from "zod";
import type { Config } from "../../../config.js";
import { invalid } from "../../../domain/errors.js";
import { isPlainObject } from "../../../domain/upack-manifest.js";
import { rawUploadBody } from "../../../http/upload-body.js";
import { errors, errorText, feedNeed, TAGS } from "../http.js";
import { assertFeedAcceptsPackages, getUniversalFeed } from "../feed-lookup.js";
import type { UpackAreaOptions } from "../index.js";
import { claimedDigests } from "../../../http/upload-digests.js";
import { collectUploadParams } from "./upload-params.js";
import type { UpackWriteService } from "./upload-service.js";

/**
 * Universal feed writes (docs/seed-api.md area A: upload package, delete package; docs/compat.md 2.7, 2.8,
 * 2.14, docs/clients.md 4 items 1-3). Upload answers every client shape: PUT or POST, on `upload`,
 * `upload/<group...>/<name>[/<version>]` and the bare feed URL (Go upack and ProGetAutomation),
 * with a raw body of any or no Content-Type, or JSON/form metadata with `content-b64`/`content-url`.
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
    config: { access: { need: feedNeed("Feeds_AddPackage") }, storesUpload: true },
    schema: {
      summary: "Upload a universal package",
      description:
        "Body: the package file (any or no Content-Type, chunked or not), or JSON/form metadata with `content-b64` " +
        "or `content-url`. A .upack is stored byte for byte; a plain ZIP or TGZ becomes a package from `name`, " +
        "`version` and other metadata. Replacing a version needs Feeds_OverwritePackage (else 409). " +
        "Digests in X-Checksum-Sha1/-Sha256, Digest or Content-Digest are verified before anything is kept. " +
        "Also answered on `upload/<group...>/<name>[/<version>]` and on the feed URL itself (docs/compat.md 2.7).",
      tags: TAGS,
      response: {
        201: uploadResult,
        ...errors,
        409: errorText,
        413: errorText,
      },
    },
    handler: async (request, reply) => uploadHandler({ service, config, feeds: options.feeds }, request, reply),
  };
  for (const url of ["/upack/:feed", "/upack/:feed/upload", "/upack/:feed/upload/*"]) app.route({ ...upload, url });

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
      await service.deleteVersion(feed.id, tail);
      return reply.code(200).send();
    },
  };
  app.route(remove);
};

interface UploadDeps {
  readonly service: UpackWriteService;
  readonly config: Config;
  readonly feeds: UpackAreaOptions["feeds"];
}

async function uploadHandler(deps: UploadDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const { service, config } = deps;
  const { feed: feedName, "*": tail } = paramsOf(request);
  const feed = await getUniversalFeed(deps.feeds, feedName);
  assertFeedAcceptsPackages(feed);
  const type = request.headers["content-type"]?.toLowerCase() ?? "";
  const bodyKind = type.startsWith("application/json")
    ? "json"
    : type.startsWith("application/x-www-form-urlencoded")
      ? "form"
      : "raw";
  let body: Record<string, unknown> | undefined;
  if (bodyKind !== "raw" && request.body !== undefined) {
    if (!isPlainObject(request.body)) throw invalid("INVALID_BODY", "A JSON upload body must be an object.");
    body = request.body;
  }
  const rawBody =
    bodyKind === "raw" ? rawUploadBody(request, config.maxUploadBytes, { emptyZipIsBody: true }) : undefined;
  const params = collectUploadParams({ pathTail: tail, query: request.query, body, bodyKind });
  const result = await service.upload({
    feedId: feed.id,
    params,
    rawBody,
    digests: claimedDigests(request.headers),
    principal: request.principal,
    canOverwrite: () => request.can({ api: "feeds", attribute: "Feeds_OverwritePackage", feed: feed.name }),
  });
  // 201 for every client: Go upack and proget-updater accept nothing else (docs/compat.md 2.7).
  return reply.code(201).send(result);
}
