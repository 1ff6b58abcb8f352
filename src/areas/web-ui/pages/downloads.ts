import type { FastifyInstance } from "fastify";
import { upackDownloadRoutes } from "../../upack/download/routes.js";
import type { WebUiDeps } from "../index.js";

/** Where the pages' download links point: the upack download routes, mounted again under this prefix. */
export const UI_DOWNLOAD_PREFIX = "/ui";

/**
 * The package page's download links for signed-in browsers. The session cookie never authenticates
 * `/upack/...` (a machine API), so a link there would answer 401 to a browser whose rights come
 * from its session. The very same download routes (GET and HEAD only: nothing a cross-site link
 * could change) are registered again under /ui with `config.ui`: same services, same needs
 * (Feeds_DownloadPackage on the feed), same counting; hidden from the API description as every
 * web UI route is (index.ts).
 */
export async function registerUiDownloads(app: FastifyInstance, { upack }: WebUiDeps): Promise<void> {
  await app.register(
    async (scoped) => {
      scoped.addHook("onRoute", (route) => {
        route.config = { ...route.config, ui: true };
      });
      await scoped.register(upackDownloadRoutes, {
        downloads: upack.downloads,
        blobs: upack.downloadBlobs,
        remote: upack.remote,
      });
    },
    { prefix: UI_DOWNLOAD_PREFIX },
  );
}
