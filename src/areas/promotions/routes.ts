import { Readable } from "node:stream";
import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { requireJsonBody } from "../../http/json-reply.js";
import { countParam, param, type QueryLike } from "../../http/params.js";
import {
  errorText,
  listQueryDoc,
  MAX_LIST_COUNT,
  promoteBodyDoc,
  promotionJson,
  promotionSchema,
  repackageBodyDoc,
  repackagingJson,
  repackagingSchema,
} from "./schemas.js";
import type { Caller, PromotionService, RecordQuery } from "./service.js";

/**
 * `/api/promotions/promote|list` and `/api/repackaging/repackage|list` (docs/compat.md 5.4; issue 17
 * section 2). Which feeds a request touches is in its body, so access is decided by the service
 * (view on the source; accept-promotions or add on the target; docs/compat.md 9), the same checks
 * the web UI's forms get.
 */

const TAGS = ["promotions"];
const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;
const config = { access: { inHandler: true } } as const;

/** The request as the service's caller (the API's routes and the web UI's forms alike). */
export const callerOf = (request: FastifyRequest): Caller => ({
  principal: request.principal,
  can: (need) => request.can(need),
});

/**
 * The request's fields: the JSON or form body, then the query string (a client may post no body at
 * all, docs/compat.md 0.2). Any other body is refused (415), never guessed at.
 */
async function fieldsOf(request: FastifyRequest): Promise<(...names: string[]) => string | undefined> {
  if (request.body instanceof Readable) await requireJsonBody(request);
  const body = (typeof request.body === "object" && request.body !== null ? request.body : {}) as QueryLike;
  const query = request.query as QueryLike;
  return (...names) => param(body, ...names) ?? param(query, ...names);
}

function required(value: string | undefined, name: string): string {
  const text = value?.trim();
  if (text === undefined || text === "") throw invalid("MISSING_PARAMETER", `'${name}' is required.`);
  return text;
}

function recordQuery(request: FastifyRequest): RecordQuery {
  const query = request.query as QueryLike;
  const text = (...names: string[]) => param(query, ...names)?.trim() || undefined;
  return {
    feed: text("feed", "feedName"),
    fromFeed: text("fromFeed"),
    toFeed: text("toFeed"),
    group: param(query, "group", "groupName")?.trim(),
    name: text("name", "packageName"),
    // A literal '+' of build metadata arrives as a space (form decoding); no version holds a space.
    version: text("version")?.replaceAll(" ", "+"),
    limit: countParam(query, MAX_LIST_COUNT),
  };
}

export const promotionRoutes: FastifyPluginAsync<{ promotions: PromotionService }> = async (app, { promotions }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.post("/api/promotions/promote", {
    schema: {
      summary: "Promote a package version to another feed",
      description:
        "Saves the version in `toFeed` as it is (the same file: no byte is copied when both feeds share a " +
        "package store) and records where it came from, who promoted it, when and why. Needs Feeds_ViewFeed on " +
        "`fromFeed` and Feeds_AcceptPackagePromotions or Feeds_AddPackage on `toFeed` (a feed key's `promote` or " +
        "`add`); replacing a version the target holds needs Feeds_OverwritePackage (else 409). Both feeds must " +
        "be universal feeds. Answers the promotion record.",
      tags: TAGS,
      body: promoteBodyDoc,
      response: { 200: promotionSchema, ...errors, 409: errorText, 415: errorText },
    },
    config,
    handler: async (request) => {
      const field = await fieldsOf(request);
      const record = await promotions.promote(
        {
          fromFeed: required(field("fromFeed"), "fromFeed"),
          toFeed: required(field("toFeed"), "toFeed"),
          group: field("group", "groupName")?.trim() ?? "",
          name: required(field("name", "packageName"), "name"),
          version: required(field("version"), "version"),
          comments: field("comments"),
        },
        callerOf(request),
      );
      return promotionJson(record);
    },
  });

  api.get("/api/promotions/list", {
    schema: {
      summary: "List promotions",
      description:
        "Promotions newest first, filtered by feed (either side), fromFeed, toFeed, group, name and version; " +
        "only those whose source or target feed the caller may view. A named feed needs Feeds_ViewFeed.",
      tags: TAGS,
      querystring: listQueryDoc,
      response: { 200: z.array(promotionSchema), ...errors },
    },
    config,
    handler: async (request) =>
      (await promotions.listPromotions(recordQuery(request), callerOf(request))).map(promotionJson),
  });

  api.post("/api/repackaging/repackage", {
    schema: {
      summary: "Repackage a version under a new version number",
      description:
        "Publishes the version as `newVersion` (e.g. 1.2.0-rc.3 as 1.2.0) in `toFeed`, else its own feed: a new " +
        "package whose upack.json names the new version and records the original's identity, SHA-1 and SHA-256, " +
        "who, when and why in `repackageHistory`; every other entry unchanged. Needs Feeds_ViewFeed on `feed` and " +
        "Feeds_AddPackage on the target (replacing a version needs Feeds_OverwritePackage, else 409). Answers " +
        "the repackaging record.",
      tags: TAGS,
      body: repackageBodyDoc,
      response: { 200: repackagingSchema, ...errors, 409: errorText, 413: errorText, 415: errorText },
    },
    config,
    handler: async (request) => {
      const field = await fieldsOf(request);
      const record = await promotions.repackage(
        {
          feed: required(field("feed", "feedName", "fromFeed"), "feed"),
          toFeed: field("toFeed")?.trim() || undefined,
          group: field("group", "groupName")?.trim() ?? "",
          name: required(field("name", "packageName"), "name"),
          version: required(field("version"), "version"),
          newVersion: required(field("newVersion"), "newVersion"),
          comments: field("comments"),
        },
        callerOf(request),
      );
      return repackagingJson(record);
    },
  });

  api.get("/api/repackaging/list", {
    schema: {
      summary: "List repackagings",
      description:
        "Repackagings newest first (a Wharf addition), filtered like /api/promotions/list; `version` matches " +
        "the new version or the original.",
      tags: TAGS,
      querystring: listQueryDoc,
      response: { 200: z.array(repackagingSchema), ...errors },
    },
    config,
    handler: async (request) =>
      (await promotions.listRepackagings(recordQuery(request), callerOf(request))).map(repackagingJson),
  });
};
