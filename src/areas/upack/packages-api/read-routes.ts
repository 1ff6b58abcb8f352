import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { param, parseBoolean, type QueryLike } from "../../../http/params.js";
import { sendBlob } from "../../../http/send-blob.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import type { FeedService } from "../../management/index.js";
import { attachment, PACKAGE_CONTENT_TYPE, packageFileName } from "../download/headers.js";
import type { UpackDownloadService } from "../download/service.js";
import { announcingDeployment, countDownload } from "../download/routes.js";
import { getUniversalFeed } from "../feed-lookup.js";
import { identityPath, listFilter, requestedIdentity } from "./params.js";
import { arrayJson, basicFeedInfo, basicFeedInfoSchema, packageVersionInfoSchema } from "./present.js";
import type { PackagesApiRepository } from "./repository.js";
import { errors, feedNeed, feedOf, queryDoc, TAGS } from "./routes-common.js";

/**
 * Common Packages API reads for universal feeds (docs/compat.md 3): feed info, `latest`, `versions`
 * and `download`, as pgutil calls them (docs/clients.md 3.4). Privileges as on /upack (docs/compat.md 2.14):
 * Feeds_ViewFeed for the lists and the feed info, Feeds_DownloadPackage for the file.
 */
export interface PackagesApiReadOptions {
  readonly feeds: FeedService;
  readonly blobs: BlobStore;
  readonly repository: PackagesApiRepository;
  readonly downloads: UpackDownloadService;
}

const GROUP_DOC = "Only packages of this group (case-insensitive); absent or empty: every group";
const NAME_DOC = "Only packages of this name (case-insensitive)";

/** Sent as built (present.ts arrayJson), never re-serialised. */
const sendJson = (reply: FastifyReply, json: Buffer) =>
  reply.code(200).type("application/json; charset=utf-8").send(json);

export const packagesApiReadRoutes: FastifyPluginAsync<PackagesApiReadOptions> = async (app, options) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const { feeds, repository, downloads, blobs } = options;
  const view = { access: { need: feedNeed("Feeds_ViewFeed") } };
  const feedIdOf = async (request: FastifyRequest) => (await getUniversalFeed(feeds, feedOf(request))).id;

  api.get("/api/packages/:feed", {
    schema: {
      summary: "Feed information",
      description:
        "BasicFeedInfo of a universal feed; `packageType` is `upack`. Feeds of other types answer 404, as " +
        "everywhere in this API: Wharf serves only universal packages through it (docs/compat.md 3).",
      tags: TAGS,
      response: { 200: basicFeedInfoSchema, ...errors },
    },
    config: view,
    handler: async (request) => basicFeedInfo(await getUniversalFeed(feeds, feedOf(request))),
  });

  api.get("/api/packages/:feed/latest", {
    schema: {
      summary: "Latest version of each package",
      description:
        "A JSON array of PackageVersionInfo, one per package: its highest version by the Inedo.UPack ordering, " +
        "prereleases included, or with `stableOnly=true` its highest release (packages with only prereleases " +
        "are then left out). Ordered by group, then name (docs/compat.md 3).",
      tags: TAGS,
      querystring: queryDoc({ group: GROUP_DOC, name: NAME_DOC, stableOnly: "true/false, any case; default false" }),
      response: { 200: z.array(packageVersionInfoSchema), ...errors },
    },
    config: view,
    handler: async (request, reply) => {
      const query = request.query as QueryLike;
      const id = await feedIdOf(request);
      const filter = listFilter(query, false) ?? {};
      const stableOnly = parseBoolean(param(query, "stableOnly"), false);
      return sendJson(reply, arrayJson(await repository.listLatest(id, filter, stableOnly)));
    },
  });

  api.get("/api/packages/:feed/versions", {
    schema: {
      summary: "Package versions",
      description:
        "Always a JSON array of PackageVersionInfo, possibly empty (also for a version that cannot exist): " +
        "packages by group then name, each newest first (docs/compat.md 3).",
      tags: TAGS,
      querystring: queryDoc({ group: GROUP_DOC, name: NAME_DOC, version: "Only this exact version" }),
      response: { 200: z.array(packageVersionInfoSchema), ...errors },
    },
    config: view,
    handler: async (request, reply) => {
      const id = await feedIdOf(request);
      const filter = listFilter(request.query as QueryLike, true);
      return sendJson(reply, arrayJson(filter === undefined ? [] : await repository.listVersions(id, filter)));
    },
  });

  app.route({
    method: ["GET", "HEAD"],
    url: "/api/packages/:feed/download",
    schema: {
      summary: "Download a package",
      description:
        "The stored .upack, byte for byte, as `<name>.<version>.upack`, with ETag, Last-Modified and Range " +
        "support. Address it by `name`, `version` and `group`, or by `purl` (`pkg:upack/<group>/<name>@<version>`). " +
        "It must name exactly one version: without a version the answer is 400, not the latest (docs/compat.md 3).",
      tags: TAGS,
      querystring: queryDoc({
        name: "Package name",
        version: "Exact version (required)",
        group: "Group; absent or empty: no group",
        purl: "Instead of name/version/group",
      }),
      response: { 200: z.unknown().describe("The package file"), ...errors },
    },
    config: { access: { need: feedNeed("Feeds_DownloadPackage") } },
    handler: async (request, reply) => {
      const id = requestedIdentity(request.query as QueryLike);
      const { feed, target } = await downloads.resolve(feedOf(request), identityPath(id), false);
      const file = await downloads.packageFile(feed, target);
      const disposition = attachment(packageFileName(target.name, target.version, "upack"));
      await sendBlob(
        request,
        reply,
        { ...file, contentType: PACKAGE_CONTENT_TYPE, contentDisposition: disposition },
        blobs,
        announcingDeployment(downloads, request, reply, target),
      );
      // Counted, and its deployment recorded, exactly as /upack does (upack/download/routes.ts).
      await countDownload(downloads, request, reply, target);
      return reply;
    },
  });
};
