import { fastifyCookie } from "@fastify/cookie";
import fastifyCsrfProtection from "@fastify/csrf-protection";
import fastifyHelmet from "@fastify/helmet";
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from "fastify";

/** Methods that change state: every UI route answering one requires a CSRF token. */
export const UNSAFE_METHODS: ReadonlySet<string> = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Cookies, CSRF tokens and security headers for the web UI's routes, registered into the UI's own
 * (encapsulated) Fastify context: the machine APIs get none of it.
 *
 * CSRF (@fastify/csrf-protection): the secret a token is made from is the signed-in session's own
 * (a column of its row, see session-store.ts), handed to the plugin as `request.session._csrf`
 * (the plugin's `@fastify/session` mode, with ui-sessions.ts playing that part). A token is thus
 * bound to one server-side session: worthless after sign-out, in another session, or to anyone
 * who can plant cookies (no double-submit cookie to toss). The sign-in form, before any session,
 * uses a secret from its own cookie (sign-in-routes.ts).
 */
export async function registerUiSecurity(app: FastifyInstance): Promise<void> {
  app.decorateRequest("session", null);
  // A page asked with API credentials (no session looked up) still gets a holder: a form token made
  // for it is then bound to nothing that lasts, and no page fails for the lack of one.
  app.addHook("onRequest", (request, _reply, done) => {
    request.session ??= {};
    done();
  });
  await app.register(fastifyCookie);
  await app.register(fastifyCsrfProtection, {
    sessionPlugin: "@fastify/session",
    getToken: csrfTokenOf,
    logLevel: "info",
  });
  await app.register(fastifyHelmet, {
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", "data:"],
        objectSrc: ["'none'"],
        baseUri: ["'none'"],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
      },
    },
    frameguard: { action: "deny" },
    referrerPolicy: { policy: "same-origin" },
    // HTTPS and its Strict-Transport-Security are the operator's proxy's to decide (a max-age set
    // here would bind every name under the host to HTTPS for a year).
    strictTransportSecurity: false,
  });
  // Every state-changing UI route, whoever declares it: a forgotten preHandler cannot open one.
  app.addHook("preHandler", (request, reply, done) => {
    if (request.routeOptions.config.ui === true && UNSAFE_METHODS.has(request.method)) {
      requireCsrf.call(request.server, request, reply, done);
      return;
    }
    done();
  });
}

/**
 * Refuses the request (403) unless it carries a CSRF token made from its session's secret, in the
 * form field `_csrf` or the `x-csrf-token` header. UI routes (`config.ui`) answering POST, PUT,
 * PATCH or DELETE get it as a preHandler already; a route may also run it earlier (as an
 * onRequest hook, the token in the header) to refuse an upload before reading its body.
 */
export function requireCsrf(
  this: FastifyInstance,
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  // A request authenticated by an API key, or anonymous, has no session secret: refused.
  request.session ??= {};
  request.server.csrfProtection(request, reply, done);
}

/** The token from the form body or the header; nothing else (no query string: it ends up in logs). */
function csrfTokenOf(request: FastifyRequest): string | undefined {
  const body = request.body;
  if (body !== null && typeof body === "object" && "_csrf" in body) {
    const field = (body as { _csrf?: unknown })._csrf;
    if (typeof field === "string") return field;
  }
  const header = request.headers["x-csrf-token"];
  return typeof header === "string" ? header : undefined;
}
