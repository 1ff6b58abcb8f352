import type { FastifyPluginAsync } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { invalid, notFound } from "../../domain/errors.js";
import { needOnRequestFeed } from "../../http/feed-access.js";
import { param } from "../../http/params.js";
import { sendJson, wantsIndent } from "../../http/json-reply.js";
import type { FeedStoreMoves, MoveRow } from "../../storage/feed-store-move.js";
import { errorText, managementQuery } from "./schemas.js";
import type { FeedService } from "./service.js";

/**
 * Moves of a feed's blobs between package stores (issue 15 section 4; storage/feed-store-move.ts):
 * `GET /api/storage/move?feed=` reports the feed's latest move, `POST /api/storage/move?feed=`
 * retries a failed one (or moves every blob into the feed's current store). A move begins when
 * `POST /api/storage?feed=` changes the feed's store (storage-routes.ts, `move`).
 */

const TAGS = ["feeds"];
const feedOf = (query: unknown) => param(query as Record<string, unknown>, "feed");
const moveQuery = managementQuery.extend({ feed: z.string().optional().describe("Feed name") });

export const moveStateSchema = z.object({
  feed: z.string(),
  /** Store keys (store-factory.ts storeKeyOf): where blobs are, never a credential. */
  from: z.string().describe("The store the feed's blobs came from: disk, s3:<url>/<bucket>/<prefix> or azure:..."),
  to: z.string().describe("The store the feed's blobs go to"),
  state: z.enum(["copying", "deleting", "done", "failed"]),
  blobsTotal: z.number(),
  blobsDone: z.number(),
  bytesTotal: z.number(),
  bytesDone: z.number(),
  startedAt: z.string(),
  updatedAt: z.string(),
  finishedAt: z.string().optional(),
  error: z.string().optional().describe("Why the move failed; POST /api/storage/move retries it"),
});
export type MoveStateJson = z.infer<typeof moveStateSchema>;

export function presentMove(feed: string, row: MoveRow): MoveStateJson {
  return {
    feed,
    from: row.fromStore,
    to: row.toStore,
    state: row.state,
    blobsTotal: row.blobsTotal,
    blobsDone: row.blobsDone,
    bytesTotal: row.bytesTotal,
    bytesDone: row.bytesDone,
    startedAt: row.startedAt,
    updatedAt: row.updatedAt,
    ...(row.finishedAt === undefined ? {} : { finishedAt: row.finishedAt }),
    ...(row.error === undefined ? {} : { error: row.error }),
  };
}

function requiredFeed(query: unknown): string {
  const feed = feedOf(query);
  if (feed === undefined) throw invalid("FEED_REQUIRED", "the feed query parameter is required");
  return feed;
}

export const storageMoveRoutes: FastifyPluginAsync<{ feeds: FeedService; moves: FeedStoreMoves }> = async (
  app,
  { feeds, moves },
) => {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const responses = { 200: moveStateSchema, 400: errorText, 401: errorText, 403: errorText, 404: errorText };

  api.route({
    method: "GET",
    url: "/api/storage/move",
    schema: {
      summary: "Get the state of a feed's move to another package store (?feed=)",
      description:
        "The feed's latest move: copying, deleting (the old copies), done or failed (with the error), with " +
        "blob and byte counts. 404 when the feed never moved. HEAD is answered too.",
      tags: TAGS,
      querystring: moveQuery,
      response: responses,
    },
    config: { access: { need: needOnRequestFeed("Feeds_ViewFeed", (request) => feedOf(request.query)) } },
    handler: async (request, reply) => {
      const feed = await feeds.getFeed(requiredFeed(request.query));
      const row = await moves.find(feed.id);
      if (row === undefined) throw notFound("MOVE_NOT_FOUND", `The feed '${feed.name}' has never moved stores.`);
      return sendJson(reply, 200, moveStateSchema, presentMove(feed.name, row), wantsIndent(request.query));
    },
  });

  api.route({
    method: "POST",
    url: "/api/storage/move",
    schema: {
      summary: "Retry a feed's failed move, or move all its blobs into its current store (?feed=)",
      description:
        "Resumes a failed move where it stopped; with none, copies every blob of the feed into the store it " +
        "uses now and deletes the other copies no other feed references. 409 MOVE_RUNNING while a move runs.",
      tags: TAGS,
      querystring: moveQuery,
      response: { ...responses, 409: errorText },
    },
    config: { access: { need: needOnRequestFeed("Admin_ManageFeed", (request) => feedOf(request.query)) } },
    handler: async (request, reply) => {
      const feed = await feeds.getFeed(requiredFeed(request.query));
      const row = await moves.retry(feed.id);
      return sendJson(reply, 200, moveStateSchema, presentMove(feed.name, row), wantsIndent(request.query));
    },
  });
};
