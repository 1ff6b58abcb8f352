import type { FastifyInstance } from "fastify";

/** Where machine-API routes are mounted again for signed-in browsers: this prefix, then the API's own path. */
export const UI_MOUNT_PREFIX = "/ui";

/**
 * Registers machine-API routes (package downloads, asset files, badge images) again under
 * UI_MOUNT_PREFIX with `config.ui`. The session cookie never authenticates the API's own URLs, so a
 * link there would answer 401 to a browser whose rights come from its session. The routes are the
 * very same (same services, same needs); `register` may add hooks to the scope before them.
 */
export async function mountForBrowsers(
  app: FastifyInstance,
  register: (scoped: FastifyInstance) => PromiseLike<unknown>,
): Promise<void> {
  await app.register(
    async (scoped) => {
      scoped.addHook("onRoute", (route) => {
        route.config = { ...route.config, ui: true };
      });
      await register(scoped);
    },
    { prefix: UI_MOUNT_PREFIX },
  );
}
