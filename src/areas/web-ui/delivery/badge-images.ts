import type { FastifyInstance } from "fastify";
import { changeWatchOf } from "../../../storage/change-watch.js";
import { ciBadgesArea } from "../../ci-badges/index.js";
import type { WebUiDeps } from "../index.js";

/** Where the badge builder's preview image comes from: the ci-badges routes, mounted again under this prefix. */
export const UI_BADGE_PREFIX = "/ui";

/**
 * The badge builder's preview for signed-in browsers. The session cookie never authenticates
 * `/api/ci-badges/...` (a machine API), so the preview would be a broken image for a viewer whose
 * rights come from the session. The very same routes (same selection, same badge states, same need)
 * are registered again under /ui with `config.ui`, as the package downloads are (pages/downloads.ts).
 * The snippets to copy keep the API's URLs: they are for README viewers, not for this session.
 */
export async function registerUiBadgeImages(app: FastifyInstance, { releases, config, db }: WebUiDeps): Promise<void> {
  await app.register(
    async (scoped) => {
      scoped.addHook("onRoute", (route) => {
        route.config = { ...route.config, ui: true };
      });
      await scoped.register(ciBadgesArea, { releases: releases.releases, config, watch: changeWatchOf(db) });
    },
    { prefix: UI_BADGE_PREFIX },
  );
}
