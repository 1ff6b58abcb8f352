import type { FastifyReply, FastifyRequest } from "fastify";
import type { AssetPath } from "../../domain/asset-path.js";
import type { Feed } from "../management/index.js";
import type { EndpointsAreaOptions } from "./index.js";
import { contentBaseFor } from "./http.js";
import { presentAssetItem } from "./present.js";

/**
 * Answers a folder listing (docs/compat.md 4.3) as JSON text: for `dir/<path>` and for folders
 * addressed under `content/` (Cake.ProGet). Fastify hands a string through untouched, so the
 * route's response schema documents the shape without checking 10,000 items one by one (that
 * check cost several hundred milliseconds, bench/endpoints-scenarios.ts); large listings are
 * remembered until the next write (listing-cache.ts).
 */
export async function sendFolderListing(
  request: FastifyRequest,
  reply: FastifyReply,
  options: Pick<EndpointsAreaOptions, "assets" | "listings" | "config">,
  listing: { directory: Feed; folder: AssetPath; recursive: boolean },
): Promise<FastifyReply> {
  const { directory, folder, recursive } = listing;
  const base = contentBaseFor(request, options.config, directory);
  const key = `${directory.id}\0${folder.key}\0${recursive}\0${base}`;
  const text = await options.listings.get(key, async () => {
    const items = await options.assets.list(directory, folder, recursive);
    return JSON.stringify(items.map((item) => presentAssetItem(item, base)));
  });
  return reply.code(200).type("application/json; charset=utf-8").send(text);
}
