import type { FastifyInstance } from "fastify";
import { contentRoutes } from "../../endpoints/content-routes.js";
import { requireCsrf, UNSAFE_METHODS } from "../session/ui-security.js";
import { mountForBrowsers } from "../browser-mounts.js";
import type { WebUiDeps } from "../index.js";

/**
 * What the pages of a directory's files load, whatever the file and whatever the directory's
 * static-site setting: the file is a sandboxed document (RFC: CSP `sandbox` without
 * allow-same-origin or allow-scripts) with an opaque origin, so that HTML or SVG someone uploaded
 * can run no script with the viewer's session, read no page of the UI and send nothing anywhere
 * (default-src 'none'). Only the UI's own pages may frame it (the preview frame of a file page).
 */
export const SANDBOXED_FILE_CSP =
  "sandbox; default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'self'";

/**
 * The asset directory API's file routes (endpoints/content-routes.ts: download, upload including
 * ProGet's multipart protocol, delete) mounted again under /ui with `config.ui`, for the file
 * browser's links and its upload script: the session cookie authenticates them, the routes'
 * own needs decide access before any body is read (the API's, on the directory the URL names),
 * and the same services store and serve the files.
 *
 * Unlike the API, a state-changing request is refused here without the session's CSRF token in
 * `x-csrf-token`, checked when the request arrives (before the body is read), and every answer
 * is sandboxed and may be framed by the UI only (SANDBOXED_FILE_CSP).
 */
export async function registerUiAssetRoutes(app: FastifyInstance, deps: WebUiDeps): Promise<void> {
  await mountForBrowsers(app, async (scoped) => {
    scoped.addHook("onRequest", (request, reply, done) => {
      if (UNSAFE_METHODS.has(request.method)) {
        requireCsrf.call(scoped, request, reply, done);
        return;
      }
      done();
    });
    scoped.addHook("onSend", async (_request, reply, payload) => {
      // Error answers are the UI's own pages (error-pages.ts), escaped and styled under its CSP.
      if (reply.statusCode >= 400) return payload;
      reply.header("Content-Security-Policy", SANDBOXED_FILE_CSP);
      reply.header("X-Frame-Options", "SAMEORIGIN");
      reply.header("X-Content-Type-Options", "nosniff");
      return payload;
    });
    await scoped.register(contentRoutes, { ...deps.content, ...deps.endpoints });
  });
}
