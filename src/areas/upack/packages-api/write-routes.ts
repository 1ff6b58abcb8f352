import { actorOf } from "../../../lifecycle/events.js";
import type { FastifyPluginAsync, RouteOptions } from "fastify";
import { z } from "zod";
import type { QueryLike } from "../../../http/params.js";
import type { FeedService } from "../../management/index.js";
import { getUniversalFeed } from "../feed-lookup.js";
import { receivePackageUploads, registerPackageUploadRoutes } from "../write/upload-request.js";
import type { UpackWriteService } from "../write/upload-service.js";
import { identityPath, requestedIdentity } from "./params.js";
import { type PackageVersionInfo, packageVersionInfo, packageVersionInfoSchema } from "./present.js";
import type { PackagesApiRepository } from "./repository.js";
import { errors, errorText, feedNeed, feedOf, queryDoc, TAGS } from "./routes-common.js";

/**
 * Common Packages API writes for universal feeds (docs/compat.md 3): `upload` and `delete`, through the
 * same services as /upack, so that validation, digests, overwrite rules (Feeds_OverwritePackage,
 * else 409) and blob clean-up are the same whichever API a package arrives by. Privileges are
 * declared per route, so an unauthorised upload is refused before its body is read.
 */
export interface PackagesApiWriteOptions {
  readonly feeds: FeedService;
  readonly repository: PackagesApiRepository;
  readonly write: UpackWriteService;
  readonly maxUploadBytes: number;
}

export const packagesApiWriteRoutes: FastifyPluginAsync<PackagesApiWriteOptions> = async (app, options) => {
  const { feeds, write, repository } = options;

  const upload: RouteOptions = {
    method: ["PUT", "POST"],
    url: "/api/packages/:feed/upload",
    config: { access: { need: feedNeed("Feeds_AddPackage") }, storesUpload: true },
    schema: {
      summary: "Upload a package",
      description:
        "The raw .upack as the body, with any or no Content-Type (pgutil sends none); stored byte for byte. " +
        "Or a multipart/form-data form (curl -F file=@pkg.upack): each file part is a package, several are " +
        "stored all or none and answered with a list; its text fields are ignored. " +
        "A trailing `/<file name>` (pgutil appends the local file name) is ignored, as are query arguments. " +
        "Replacing a version needs Feeds_OverwritePackage (else 409). Answers 200 with the stored " +
        "version's PackageVersionInfo (docs/compat.md 3).",
      tags: TAGS,
      response: {
        200: z.union([packageVersionInfoSchema, z.array(packageVersionInfoSchema).describe("A form of several files")]),
        ...errors,
        409: errorText,
        413: errorText,
      },
    },
    handler: async (request, reply) => {
      // The package names itself in its upack.json: no path, query or body metadata applies here.
      const uploads = await receivePackageUploads(uploadDeps, request, () => ({ metadata: {} }));
      const infos: PackageVersionInfo[] = [];
      for (const result of uploads.results) {
        const { group, name, version } = result;
        const row = await repository.findVersion(
          uploads.feed.id,
          group.toLowerCase(),
          name.toLowerCase(),
          version.toLowerCase(),
        );
        // A version deleted again in between has nothing to show.
        if (row !== undefined) infos.push(packageVersionInfo(row));
      }
      // 200, the status ProGet gives (docs/compat.md 3).
      if (uploads.several) return reply.code(200).send(infos);
      return infos[0] === undefined ? reply.code(200).send() : reply.code(200).send(infos[0]);
    },
  };
  const uploadDeps = { service: write, feeds, maxUploadBytes: options.maxUploadBytes };
  await registerPackageUploadRoutes(app, upload, {
    urls: ["/api/packages/:feed/upload", "/api/packages/:feed/upload/*"],
    maxUploadBytes: options.maxUploadBytes,
    metadataBodies: false,
  });

  app.route({
    method: ["POST", "DELETE"],
    url: "/api/packages/:feed/delete",
    config: { access: { need: feedNeed("Feeds_DeletePackage") } },
    schema: {
      summary: "Delete a package version",
      description:
        "Addressed by `name`, `version` and `group`, or by `purl`; pgutil POSTs with no body. 200 with an empty " +
        "body; 404 when there is no such version; 400 when the query names no single version (docs/compat.md 3).",
      tags: TAGS,
      querystring: queryDoc({ name: "Package name", version: "Exact version", group: "Group", purl: "Instead" }),
      response: { 200: z.literal("").describe("Empty body"), ...errors },
    },
    handler: async (request, reply) => {
      const id = requestedIdentity(request.query as QueryLike);
      const feed = await getUniversalFeed(feeds, feedOf(request));
      await write.deleteVersion(feed.id, identityPath(id), { actor: actorOf(request.principal) });
      return reply.code(200).send();
    },
  });
};
