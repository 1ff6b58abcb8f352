import type { FastifyPluginAsync, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { needOnFeed } from "../../domain/principal.js";
import type { Feed } from "./feed-settings.js";
import { requestBaseUrl } from "../../http/base-url.js";
import { needOnRequestFeed } from "../../http/feed-access.js";
import { requireJsonBody, sendJson, wantsIndent } from "../../http/json-reply.js";
import type { FeedCaller } from "./feed-caller.js";
import { errorText, feedInputSchema, feedNameParams, feedSchema, managementQuery } from "./schemas.js";
import type { FeedService } from "./service.js";
import { feedsVisibleTo, scopeOf } from "./visible-feeds.js";

/**
 * Feed management (docs/seed-api.md area I; docs/compat.md 5.1, 5.2): `/api/management/feeds/...`.
 * Privileges (docs/seed-api.md "Authentication", feed management row): reading needs Feeds_ViewFeed
 * on the feed, changing it Admin_ManageFeed; System keys need the `feeds` scope; Feed keys can
 * view their own feed and never create, change or delete one (no feed-key permission carries
 * Admin_ManageFeed). What depends on the body is checked by the service through `callerOf`:
 * setting a feed group needs the right on that group, attaching a connector with stored
 * credentials the right to manage connectors.
 */

const PREFIX = "/api/management/feeds";
const TAGS = ["feeds"];

const nameOf = (request: FastifyRequest) => (request.params as { name: string }).name;
/** The request as the feed service's caller (the API's routes and the web UI's forms alike). */
export const callerOf = (request: FastifyRequest): FeedCaller => ({ can: (need) => request.can(need) });

const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const feedRoutes: FastifyPluginAsync<{ feeds: FeedService }> = async (app, { feeds }) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  const present = async (request: FastifyRequest, feed: Feed) => {
    const canPublish = await request.can(needOnFeed("Feeds_AddPackage", scopeOf(feed)));
    return feeds.present(feed, { requestBaseUrl: requestBaseUrl(request), canPublish });
  };

  api.route({
    method: ["POST", "PUT"],
    url: `${PREFIX}/create`,
    schema: {
      summary: "Create a feed",
      description:
        "Body: a Feed; `name` and `feedType` (universal, romp or asset: the types Wharf serves) are required. " +
        "Settings Wharf does not act on yet are refused (400 SETTING_NOT_IMPLEMENTED) unless off. " +
        "Answers 201 with the feed (docs/compat.md 5.1).",
      tags: TAGS,
      querystring: managementQuery,
      body: feedInputSchema.nullish(),
      response: { 201: feedSchema, ...errors, 409: errorText, 415: errorText, 422: errorText },
    },
    config: { access: { need: needOnFeed("Admin_ManageFeed") } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const feed = await feeds.createFeed(request.body ?? {}, callerOf(request));
      return sendJson(reply, 201, feedSchema, await present(request, feed), wantsIndent(request.query));
    },
  });

  api.route({
    method: ["GET", "POST"],
    url: `${PREFIX}/get/:name`,
    schema: {
      summary: "Get a feed",
      description: "By name or alternate name, case-insensitively. HEAD is answered too.",
      tags: TAGS,
      params: feedNameParams,
      querystring: managementQuery,
      response: { 200: feedSchema, ...errors },
    },
    config: { access: { need: needOnRequestFeed("Feeds_ViewFeed", nameOf) } },
    handler: async (request, reply) => {
      const feed = await feeds.getFeed(request.params.name);
      return sendJson(reply, 200, feedSchema, await present(request, feed), wantsIndent(request.query));
    },
  });

  api.route({
    method: "GET",
    url: `${PREFIX}/list`,
    schema: {
      summary: "List the feeds the caller may see",
      description: "Filtered by Feeds_ViewFeed per feed; a caller who may see none gets []. HEAD is answered too.",
      tags: TAGS,
      querystring: managementQuery,
      response: { 200: z.array(feedSchema), 401: errorText, 403: errorText },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      const visible = [];
      for (const feed of await feedsVisibleTo(feeds, (need) => request.can(need))) {
        visible.push(await present(request, feed));
      }
      return sendJson(reply, 200, z.array(feedSchema), visible, wantsIndent(request.query));
    },
  });

  api.route({
    method: ["POST", "PATCH"],
    url: `${PREFIX}/update/:name`,
    schema: {
      summary: "Update a feed (partial)",
      description:
        "Omitted or null members keep their value, except description, dropPath, packagesPath and packageStore " +
        "(null removes); arrays and objects are replaced wholesale; endpointUrl and canPublish are ignored; " +
        "a different `name` renames the feed. A setting Wharf does not act on yet may be sent as stored or off, " +
        "so a feed read with GET can be sent back whole; the type changes only to a served one.",
      tags: TAGS,
      params: feedNameParams,
      querystring: managementQuery,
      body: feedInputSchema.nullish(),
      response: { 200: feedSchema, ...errors, 409: errorText, 415: errorText, 422: errorText },
    },
    config: { access: { need: needOnRequestFeed("Admin_ManageFeed", nameOf) } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const input = request.body ?? {};
      const newName = input.name;
      // A name is what clients' URLs point at, and no feed holds a free one: taking it needs the
      // right to manage feeds in general, not only this one (keys and grants follow the feed's id).
      if (typeof newName === "string" && newName.toLowerCase() !== request.params.name.toLowerCase()) {
        await request.authorize(needOnFeed("Admin_ManageFeed", newName));
      }
      const feed = await feeds.updateFeed(request.params.name, input, callerOf(request));
      return sendJson(reply, 200, feedSchema, await present(request, feed), wantsIndent(request.query));
    },
  });

  api.route({
    method: ["DELETE", "POST"],
    url: `${PREFIX}/delete/:name`,
    schema: {
      summary: "Delete a feed",
      description:
        "Answers 200 with an empty body. The feed's API keys and the permissions scoped to it are deleted " +
        "with it: a feed created later under the same name starts with none.",
      tags: TAGS,
      params: feedNameParams,
      querystring: managementQuery,
      response: { 200: z.void().describe("Empty body"), ...errors },
    },
    config: { access: { need: needOnRequestFeed("Admin_ManageFeed", nameOf) } },
    handler: async (request, reply) => {
      await feeds.deleteFeed(request.params.name);
      return reply.code(200).send();
    },
  });
};
