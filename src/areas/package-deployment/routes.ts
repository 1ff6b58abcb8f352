import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { needOnFeed } from "../../domain/principal.js";
import { countParam, param, type QueryLike } from "../../http/params.js";
import { parseDeploymentInput } from "./fields.js";
import { MAX_RAW_FORM_BYTES, readDeploymentFields } from "./request-body.js";
import {
  deploymentRecordSchema,
  errorText,
  listQueryDoc,
  MAX_LIST_COUNT,
  postedRecordDoc,
  recordJson,
} from "./schemas.js";
import type { PackageDeploymentService } from "./service.js";

/**
 * `/api/package-deployment/` (docs/seed-api.md C; docs/compat.md 6.2): POST records a deployment, GET
 * (Wharf's addition) lists them. Privileges (docs/seed-api.md "Authentication", area C; docs/compat.md 9):
 * recording needs Feeds_DownloadPackage on the feed, reading Feeds_ViewFeed. The feed is named in
 * the body or the query, so access is decided in the handler, after parsing.
 */
export interface PackageDeploymentRoutesOptions {
  readonly deployments: PackageDeploymentService;
}

const PATH = "/api/package-deployment/";
const TAGS = ["package deployments"];
const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

/**
 * System keys pass with the `feeds` scope ("an API key granting feed API access", docs/seed-api.md)
 * or with this area's own `package-deployment` scope; everyone else by the attribute on the feed.
 */
async function authorizeOnFeed(
  request: FastifyRequest,
  attribute: "Feeds_DownloadPackage" | "Feeds_ViewFeed",
  feed: string,
): Promise<void> {
  if (await request.can({ api: "package-deployment", attribute, feed })) return;
  await request.authorize(needOnFeed(attribute, feed));
}

function requiredParam(query: QueryLike, ...names: [string, ...string[]]): string {
  const value = param(query, ...names)?.trim();
  if (!value) throw invalid("MISSING_PARAMETER", `The query parameter '${names[0]}' is required.`);
  return value;
}

export const packageDeploymentRoutes: FastifyPluginAsync<PackageDeploymentRoutesOptions> = async (app, options) => {
  const { deployments } = options;
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post(PATH, {
    // JSON and forms; raw form pairs are bounded by request-body.ts, since stream parsers ignore it.
    bodyLimit: MAX_RAW_FORM_BYTES,
    schema: {
      summary: "Record a package deployment",
      description:
        "Records that a package version was deployed to a target (docs/seed-api.md C). The key may come as " +
        "`X-ApiKey`, `key` (query or form field), JSON `API_Key` or Basic `api:<key>`. Answers the stored record.",
      tags: TAGS,
      body: postedRecordDoc,
      response: { 200: deploymentRecordSchema, ...errors, 413: errorText, 415: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request) => {
      const input = parseDeploymentInput(await readDeploymentFields(request));
      await authorizeOnFeed(request, "Feeds_DownloadPackage", input.feedName);
      return recordJson(await deployments.record(input, request.principal));
    },
  });

  api.get(PATH, {
    schema: {
      summary: "List package deployments",
      description:
        "Deployment records of one package, or of one version of it, newest deployment first (a Wharf " +
        "addition to docs/seed-api.md C). Names match case-insensitively.",
      tags: TAGS,
      querystring: listQueryDoc,
      response: { 200: z.array(deploymentRecordSchema), ...errors },
    },
    config: { access: { inHandler: true } },
    handler: async (request) => {
      const query = request.query as QueryLike;
      const feedName = requiredParam(query, "feed", "feedName");
      const packageName = requiredParam(query, "name", "packageName");
      // A literal '+' of build metadata arrives as a space (form decoding); no version holds a space.
      const version = param(query, "version")?.trim().replaceAll(" ", "+") || undefined;
      const groupName = param(query, "group", "groupName")?.trim() ?? "";
      const limit = countParam(query, MAX_LIST_COUNT);
      await authorizeOnFeed(request, "Feeds_ViewFeed", feedName);
      const records = await deployments.list({ feedName, groupName, packageName, version, limit });
      return records.map(recordJson);
    },
  });
};
