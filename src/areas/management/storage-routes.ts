import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid } from "../../domain/errors.js";
import { needOnFeed } from "../../domain/principal.js";
import { needOnRequestFeed } from "../../http/feed-access.js";
import { param } from "../../http/params.js";
import type { FeedStoreMoves } from "../../storage/feed-store-move.js";
import { requireJsonBody, sendJson, wantsIndent } from "../../http/json-reply.js";
import {
  errorText,
  storageConfigInputSchema,
  storageConfigSchema,
  storageQuery,
  storageTypeSchema,
} from "./schemas.js";
import type { FeedService } from "./service.js";

/**
 * Feed storage (docs/compat.md 5.1, 5.2; pgutil `feeds storage`): `/api/storage` lists the storage
 * types, `/api/storage?feed=` reads and sets one feed's FeedStorageConfiguration. The feed's
 * `packageStore` member shows the same setting (one source of truth, FeedSettings.storage).
 */

const TAGS = ["feeds"];
const feedOf = (query: unknown) => param(query as Record<string, unknown>, "feed");
const storageTypesSchema = z.array(storageTypeSchema);
const storageSetQuery = storageQuery.extend({
  move: z
    .string()
    .optional()
    .describe(
      "true: move the feed's blobs into the new store (the default when the store changes and the feed has " +
        "content); false: new uploads only. GET /api/storage/move reports the move.",
    ),
});

/** `?move=` as true, false or undefined (absent); anything else is a 400 naming the parameter. */
function moveOf(query: unknown): boolean | undefined {
  const value = param(query as Record<string, unknown>, "move")?.toLowerCase();
  if (value === undefined) return undefined;
  if (value === "true" || value === "false") return value === "true";
  throw invalid("INVALID_MOVE", "The move parameter must be true or false.");
}

export const storageRoutes: FastifyPluginAsync<{ feeds: FeedService; moves?: FeedStoreMoves }> = async (
  app,
  { feeds, moves },
) => {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.route({
    method: "GET",
    url: "/api/storage",
    schema: {
      summary: "List storage types, or get a feed's storage configuration (?feed=)",
      description:
        "Without `feed`: the FeedStorageType list, for any authenticated caller. With `feed`: the feed's " +
        "FeedStorageConfiguration, for callers who may view the feed. HEAD is answered too.",
      tags: TAGS,
      querystring: storageQuery,
      response: {
        200: z.union([storageTypesSchema, storageConfigSchema]),
        401: errorText,
        403: errorText,
        404: errorText,
      },
    },
    config: { access: { inHandler: true } },
    handler: async (request, reply) => {
      const indent = wantsIndent(request.query);
      const feed = feedOf(request.query);
      if (feed !== undefined) {
        await request.authorize(needOnFeed("Feeds_ViewFeed", feed));
        return sendJson(reply, 200, storageConfigSchema, await feeds.getStorage(feed), indent);
      }
      // Static facts about this server, no feed data: any caller who proved who they are may read
      // them; Anonymous only with a global view grant, so a locked-down server tells strangers nothing.
      if (request.principal.type === "anonymous") await request.authorize(needOnFeed("Feeds_ViewFeed"));
      return sendJson(reply, 200, storageTypesSchema, [...feeds.storageTypes()], indent);
    },
  });

  api.route({
    method: "POST",
    url: "/api/storage",
    schema: {
      summary: "Set a feed's storage configuration (?feed=)",
      description:
        "Body: FeedStorageConfiguration `{id, properties}` (disk, s3 or azure). New uploads go to the new store " +
        "at once; unless `move=false`, the feed's blobs are then moved there in the background (header " +
        "X-Wharf-Store-Move: copying). 409 MOVE_RUNNING while an earlier move of the feed runs.",
      tags: TAGS,
      querystring: storageSetQuery,
      body: storageConfigInputSchema.nullish(),
      response: {
        200: storageConfigSchema,
        400: errorText,
        401: errorText,
        403: errorText,
        404: errorText,
        409: errorText,
        415: errorText,
      },
    },
    config: { access: { need: needOnRequestFeed("Admin_ManageFeed", (request) => feedOf(request.query)) } },
    preValidation: requireJsonBody,
    handler: async (request, reply) => {
      const feed = feedOf(request.query);
      if (feed === undefined) throw invalid("FEED_REQUIRED", "the feed query parameter is required");
      const move = moveOf(request.query);
      const change = () => feeds.setStorage(feed, request.body, { can: (need) => request.can(need) });
      const changed =
        moves === undefined
          ? { result: await change() }
          : await moves.changeStore((await feeds.getFeed(feed)).id, move, change);
      if (changed.move !== undefined) reply.header("X-Wharf-Store-Move", changed.move.state);
      const config = changed.result;
      return sendJson(reply, 200, storageConfigSchema, config, wantsIndent(request.query));
    },
  });
};
