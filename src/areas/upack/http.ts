import type { FastifyRequest } from "fastify";
import type { FeedAttribute } from "../../domain/principal.js";
import { errorText } from "../../http/errors.js";
import { needOnRequestFeed } from "../../http/feed-access.js";

/** What every `/upack/:feed/...` route shares (write, import, read and download routes): its parameter, needs and documentation pieces. */
export const TAGS = ["universal feed"];
export { errorText };
/** Every error is a plain-text message (docs/compat.md 0.3): the statuses every feed route can answer. */
export const errors = { 400: errorText, 401: errorText, 403: errorText, 404: errorText } as const;

export const feedOf = (request: FastifyRequest) => (request.params as { feed: string }).feed;

/** The feed privilege a route needs, on the feed its URL names (docs/compat.md 2.14). */
export const feedNeed = (attribute: FeedAttribute) => needOnRequestFeed(attribute, feedOf);
