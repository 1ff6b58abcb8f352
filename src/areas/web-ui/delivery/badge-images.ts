import type { FastifyInstance } from "fastify";
import { cacheVersionOf } from "../../../storage/metadata-db.js";
import { ciBadgesArea } from "../../ci-badges/index.js";
import { mountForBrowsers } from "../browser-mounts.js";
import type { WebUiDeps } from "../index.js";

/**
 * The badge builder's preview for signed-in browsers: the ci-badges routes (same selection, same
 * badge states, same need) mounted under /ui, so that the preview is no broken image for a viewer
 * whose rights come from the session. The snippets to copy keep the API's URLs: they are for
 * README viewers, not for this session.
 */
export async function registerUiBadgeImages(app: FastifyInstance, { releases, config, db }: WebUiDeps): Promise<void> {
  await mountForBrowsers(app, (scoped) =>
    scoped.register(ciBadgesArea, { releases: releases.releases, config, watch: cacheVersionOf(db) }),
  );
}
