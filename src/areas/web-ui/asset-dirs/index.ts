import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";
import { registerAssetActions } from "./actions.js";
import { registerAssetPages } from "./browse-page.js";
import { registerUiAssetRoutes } from "./ui-api.js";

/**
 * Asset directories (issue 16 section 1): the file browser at /assets/<feed>/<path...> (browse-page.ts),
 * previews of text and images (active content sandboxed), uploads by drag and drop through the
 * API's multipart protocol mounted under /ui (ui-api.ts), and the forms for folders, uploads,
 * deletes and metadata (actions.ts): all through the endpoints area's services and needs.
 */
export async function registerAssetDirectoryPages(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  const pages = registerAssetPages(app, deps);
  await registerAssetActions(app, deps, pages);
  await registerUiAssetRoutes(app, deps);
}
