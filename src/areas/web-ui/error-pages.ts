import type { FastifyInstance } from "fastify";
import { STATUS_VIEW } from "./pages/access.js";
import { renderPage } from "./views.js";

/** Titles of the statuses a page may answer; others are "Something went wrong". */
const TITLES: Readonly<Record<number, string>> = {
  400: "Bad request",
  401: "Sign-in needed",
  403: "Forbidden",
  404: "Not found",
  409: "Conflict",
  413: "Too large",
  429: "Too many attempts",
  503: "Busy",
  507: "Out of space",
};

/** A form whose token is missing, from another session or from before a sign-out. */
const CSRF_CODES = new Set(["FST_CSRF_INVALID_TOKEN", "FST_CSRF_MISSING_SECRET"]);

/**
 * Error answers of the web UI's routes as pages: the one error handler (http/errors.ts) decides
 * the status and the message as for the APIs (no second mapping), and this turns its plain-text
 * answer into the same message inside the frame, for people. Page errors a page answers itself
 * (already HTML) pass unchanged, as does every non-UI route.
 */
export function registerErrorPages(app: FastifyInstance): void {
  app.addHook("onSend", async (request, reply, payload) => {
    if (request.routeOptions.config.ui !== true || reply.statusCode < 400) return payload;
    const code = reply.getHeader("x-wharf-error");
    if (typeof code !== "string" || typeof payload !== "string") return payload;
    const status = reply.statusCode;
    const message = CSRF_CODES.has(code)
      ? "This form has expired or did not come from this site. Go back, reload the page and try again."
      : status >= 500
        ? "Wharf could not answer this page. Try again; if it keeps failing, the server's log says why."
        : payload;
    // A password prompt would be the browser's, not ours: pages send people to /sign-in instead.
    reply.removeHeader("www-authenticate");
    reply.header("Content-Type", "text/html; charset=utf-8").header("Cache-Control", "no-store");
    return renderPage(request, reply, STATUS_VIEW, { title: TITLES[status] ?? "Something went wrong", message });
  });
}
