import type { FastifyRequest } from "fastify";
import { type AccessNeed, type FeedAttribute, needOnFeed } from "../domain/principal.js";

/**
 * A route's `config.access.need` for a privilege on the feed the request names (its URL's `:feed`,
 * `:dir` or `:name`, or a query parameter), so that the root hook decides it before the body is
 * read (http/auth.ts). `feedOf` answers undefined when the request names no feed: only global
 * grants then count.
 */
export function needOnRequestFeed(
  attribute: FeedAttribute,
  feedOf: (request: FastifyRequest) => string | undefined,
): (request: FastifyRequest) => AccessNeed {
  return (request) => needOnFeed(attribute, feedOf(request));
}
