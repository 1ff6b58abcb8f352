import type { FastifyInstance, FastifyReply } from "fastify";
import type { Database } from "better-sqlite3";
import type { Config } from "../../config.js";
import type { Clock } from "../../domain/clock.js";
import type { Authenticator } from "../../http/auth.js";
import type { FeedService } from "../management/service.js";
import type { ApiKeyService } from "../security/api-key-service.js";
import type { UpackServices } from "../upack/index.js";
import { SCRIPT } from "./assets/script.js";
import { STYLE } from "./assets/style.js";
import { registerErrorPages } from "./error-pages.js";
import { registerUiSecurity } from "./session/ui-security.js";
import type { UiSessions } from "./session/ui-sessions.js";
import { signInRoutes } from "./sign-in-routes.js";
import { registerBrowsePages } from "./pages/index.js";
import { registerApiKeysPage } from "./admin/api-keys-page.js";
import { ASSET_VERSION } from "./views.js";

/** What the pages read through: the same services as the APIs (no second copy of any rule). */
export interface WebUiDeps {
  readonly db: Database;
  readonly config: Config;
  readonly clock: Clock;
  /** The one authentication path: sign-in checks a password through it (throttled like the APIs). */
  readonly authenticator: Authenticator;
  readonly feeds: FeedService;
  readonly upack: UpackServices;
  /** The security API's own API key service (the API keys page). */
  readonly apiKeys: ApiKeyService;
  /** Signed-in browsers' sessions: the rows, and what the authentication hook asks (http/auth.ts). */
  readonly sessions: UiSessions;
}

/**
 * The web UI for people (issue 16): server-rendered pages from this process. Each part registers
 * its routes here, marked `config.ui` so that the session cookie authenticates them (and only them:
 * the machine APIs never accept it).
 */
export async function webUiArea(app: FastifyInstance, deps: WebUiDeps) {
  // Pages are for people, not part of the machine API's description (/openapi.json).
  app.addHook("onRoute", (route) => {
    route.schema = { ...route.schema, hide: true };
  });
  // First: cookies, CSRF checks and security headers for every route of this area (and no other).
  await registerUiSecurity(app);
  registerErrorPages(app);
  await signInRoutes(app, deps);
  const immutable = "public, max-age=31536000, immutable";
  const asset = (type: string, body: string) => ({
    config: { access: { public: true as const } },
    handler: async (request: { query: unknown }, reply: FastifyReply) => {
      // A stale version asked for gets the current bytes, but not for a year.
      const current = (request.query as { v?: string }).v === ASSET_VERSION;
      return reply
        .type(type)
        .header("Cache-Control", current ? immutable : "no-cache")
        .send(body);
    },
  });
  app.get("/ui/style.css", asset("text/css; charset=utf-8", STYLE));
  app.get("/ui/app.js", asset("text/javascript; charset=utf-8", SCRIPT));
  app.get("/", { config: { access: { public: true } } }, async (_request, reply) => reply.redirect("/feeds", 303));
  await registerBrowsePages(app, deps);
  registerApiKeysPage(app, deps);
}
