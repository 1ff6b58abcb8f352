import type { FastifyPluginAsync, FastifyReply } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { countParam, hasParam, param, parseBoolean, type QueryLike } from "../../../http/params.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import { isPostgres } from "../../../storage/metadata-db.js";
import { downloadCounterOf } from "../download/counts.js";
import { postgresDownloadCounterOf } from "./download-counts-postgres.js";
import { queryDoc } from "../../../http/query-doc.js";
import { upackDownloadRoutes } from "../download/routes.js";
import { errors, feedNeed, feedOf, TAGS } from "../http.js";
import type { UpackDownloadService } from "../download/service.js";
import type { UpackAreaOptions } from "../index.js";
import { feedMetadataSchema, packageDataSchema, versionDataSchema } from "../present.js";
import { MAX_LIST_COUNT } from "./query-service.js";
import type { RemoteDownloads } from "../remote/downloads.js";
import { reportFailures } from "../remote/failures.js";
import { createUpackQueries } from "../services.js";

/**
 * Universal feed reads (docs/seed-api.md area A: list packages, list versions, search, feed metadata,
 * and the downloads in download/routes.ts; docs/compat.md 2.2-2.6, 2.10-2.13). Privileges (docs/compat.md
 * 2.14): listing needs Feeds_ViewFeed on the feed, System keys the `feeds` scope.
 */
export interface UpackReadOptions extends UpackAreaOptions {
  /** The app's download service (services.ts), with its lookup cache and virtual assembly. */
  readonly downloads: UpackDownloadService;
  /** Whether virtual packages can be assembled (listed in `meta` services). */
  readonly virtualPackages: boolean;
  /** Where whole-file downloads read from: the store with the shared small-blob cache (services.ts). */
  readonly downloadBlobs: BlobStore;
  /** Versions of feeds' connectors (services.ts); undefined: feeds serve only what they store. */
  readonly remoteDownloads?: RemoteDownloads | undefined;
}

const GROUP_DOC = "Exact group; `group=` is the empty group; absent: every group (the empty group with `name`)";
const COUNT_DOC = `Maximum entries, default and cap ${MAX_LIST_COUNT}; ignored with \`name\``;

/**
 * Bodies are JSON already (present.ts); sent as they are, never re-serialised, saying which
 * connectors they lack (remote/failures.ts).
 */
function sendJsonText(reply: FastifyReply, json: Buffer): FastifyReply {
  reportFailures(reply, json);
  return reply.code(200).type("application/json; charset=utf-8").send(json);
}

/** Present with any value, even empty (`group=` is the empty group); absent: undefined. */
function rawParam(query: QueryLike, name: string): string | undefined {
  return hasParam(query, name) ? (param(query, name) ?? "") : undefined;
}

export const upackReadRoutes: FastifyPluginAsync<UpackReadOptions> = async (app, options) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const queries = createUpackQueries(options, app.log);
  const view = { access: { need: feedNeed("Feeds_ViewFeed") } };

  api.get("/upack/:feed/packages", {
    schema: {
      summary: "List packages, or get one package",
      description:
        "With `name`: one PackageData object (404 when missing); otherwise an array ordered by group and name. " +
        "Matching is case-insensitive (docs/seed-api.md A, docs/compat.md 2.2). A feed with connectors also lists their " +
        "packages (`isLocal: false`); its own versions shadow theirs, and a package it publishes itself hides " +
        "theirs entirely unless the connector merges with local packages.",
      tags: TAGS,
      querystring: queryDoc({ group: GROUP_DOC, name: "Package name: answer one object", count: COUNT_DOC }),
      response: { 200: z.union([packageDataSchema, z.array(packageDataSchema)]), ...errors },
    },
    config: view,
    handler: async (request, reply) => {
      const query = request.query as QueryLike;
      const name = param(query, "name");
      const json = await queries.listPackages(feedOf(request), {
        group: rawParam(query, "group"),
        ...(name === undefined ? {} : { name }),
        count: countParam(query, MAX_LIST_COUNT),
      });
      return sendJsonText(reply, json);
    },
  });

  api.get("/upack/:feed/versions", {
    schema: {
      summary: "List versions, or get one version",
      description:
        "With `version` (and `name`): one VersionData object (404 when missing); otherwise an array, newest " +
        "first within each package. `includeFileList=True` adds `fileList` (docs/compat.md 2.3).",
      tags: TAGS,
      querystring: queryDoc({
        group: GROUP_DOC,
        name: "Package name: every version of that package",
        version: "Exact version: answer one object",
        includeFileList: "true/false, any case",
        count: COUNT_DOC,
      }),
      response: { 200: z.union([versionDataSchema, z.array(versionDataSchema)]), ...errors },
    },
    config: view,
    handler: async (request, reply) => {
      const query = request.query as QueryLike;
      const name = param(query, "name");
      // A literal '+' of build metadata arrives as a space (form decoding); no version holds a space.
      const version = param(query, "version")?.replaceAll(" ", "+");
      const json = await queries.listVersions(feedOf(request), {
        group: rawParam(query, "group"),
        ...(name === undefined ? {} : { name }),
        ...(version === undefined ? {} : { version }),
        includeFileList: parseBoolean(param(query, "includeFileList"), false),
        count: countParam(query, MAX_LIST_COUNT),
      });
      return sendJsonText(reply, json);
    },
  });

  api.get("/upack/:feed/search", {
    schema: {
      summary: "Search packages",
      description:
        "Packages whose name equals, starts with or contains the term, then title, description and tag " +
        "matches, in that order; items as in `packages` (docs/compat.md 2.11).",
      tags: TAGS,
      querystring: queryDoc({ query: "Search term", term: "Search term (Inedo.UPack's name)", count: COUNT_DOC }),
      response: { 200: z.array(packageDataSchema), ...errors },
    },
    config: view,
    handler: async (request, reply) => {
      const query = request.query as QueryLike;
      const term = param(query, "query", "term") ?? "";
      return sendJsonText(reply, await queries.search(feedOf(request), term, countParam(query, MAX_LIST_COUNT)));
    },
  });

  api.get("/upack/:feed/meta", {
    schema: {
      summary: "Feed metadata",
      description: "API version, counts and the services this feed offers (docs/compat.md 2.10).",
      tags: TAGS,
      response: { 200: feedMetadataSchema, ...errors },
    },
    config: view,
    handler: async (request) => queries.meta(feedOf(request)),
  });

  // Only what download routes send whole goes through the memory cache; archive reads use the store.
  await app.register(upackDownloadRoutes, {
    downloads: options.downloads,
    blobs: options.downloadBlobs,
    remote: options.remoteDownloads,
    hot: options.hot,
  });
  // Batched download counts are written before the database closes (main.ts closes it after the app).
  app.addHook("onClose", async () => {
    const { db } = options;
    try {
      if (isPostgres(db)) {
        // The node's database is closed after the app (main.ts), as on SQLite.
        if (!db.pool.ending) await postgresDownloadCounterOf(db).flush();
      } else if (db.open) downloadCounterOf(db).flush();
    } catch (error) {
      app.log.error({ err: error }, "pending download counts not written at shutdown");
    }
  });
};
