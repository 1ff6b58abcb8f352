import type { FastifyInstance } from "fastify";
import { upackDownloadRoutes } from "../../upack/download/routes.js";
import { mountForBrowsers } from "../browser-mounts.js";
import type { WebUiDeps } from "../index.js";

/**
 * The package page's download links for signed-in browsers: the upack download routes (GET and
 * HEAD only: nothing a cross-site link could change), mounted under /ui with the same needs
 * (Feeds_DownloadPackage on the feed) and the same counting; hidden from the API description as
 * every web UI route is (index.ts).
 */
export async function registerUiDownloads(app: FastifyInstance, { upack }: WebUiDeps): Promise<void> {
  await mountForBrowsers(app, (scoped) =>
    scoped.register(upackDownloadRoutes, {
      downloads: upack.downloads,
      blobs: upack.downloadBlobs,
      remote: upack.remote,
    }),
  );
}
