import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Config } from "../../config.js";
import { DomainError } from "../../domain/errors.js";
import type { Authenticator } from "../../http/auth.js";
import { cookieOptions, readCookie, SESSION_COOKIE, SIGN_IN_COOKIE, SIGN_IN_PATH } from "./session/cookies.js";
import type { UiSessions } from "./session/ui-sessions.js";
import { SIGN_IN } from "./templates/sign-in.js";
import { defineView, sendPage } from "./views.js";

const SIGN_IN_VIEW = defineView("sign-in", SIGN_IN);

/** Where a sign-in or sign-out lands when no (acceptable) `next` was given. */
const HOME = "/feeds";
/** Longest user name and password read; longer ones fail like any wrong pair. */
const MAX_USER_NAME = 256;
const MAX_PASSWORD = 1024;
const MAX_NEXT = 2048;
/** The same answer for an unknown user and a wrong password: nothing tells which names exist. */
const WRONG_CREDENTIALS = "The user name or password is not correct.";

export interface SignInDeps {
  readonly authenticator: Authenticator;
  readonly sessions: UiSessions;
  readonly config: Pick<Config, "baseUrl" | "uiSessions">;
}

/**
 * A path on this server to go to after signing in, or undefined. One leading "/" and printable
 * ASCII only: "//host" and "/\host" are other hosts to a browser, and browsers drop tabs and line
 * breaks from URLs ("/\t/host" becomes "//host"), so no backslash or control character anywhere.
 */
export function safeNext(value: unknown): string | undefined {
  if (typeof value !== "string" || value.length > MAX_NEXT) return undefined;
  return /^\/(?![/\\])[\x21-\x7e]*$/.test(value) && !value.includes("\\") ? value : undefined;
}

/** GET and POST /sign-in, POST /sign-out: the web UI's one way to start and end a session. */
export async function signInRoutes(app: FastifyInstance, { authenticator, sessions, config }: SignInDeps) {
  const absoluteSeconds = config.uiSessions.absoluteHours * 3600;

  /**
   * Login CSRF: the sign-in form's token is made from a secret in a cookie sent to /sign-in
   * alone (set when the form is first shown), never from a session a cross-site page could not
   * know anyway; a post without both is refused (403) before any password is checked.
   */
  function signInSecret(request: FastifyRequest, reply: FastifyReply): string {
    let secret = readCookie(request, SIGN_IN_COOKIE);
    if (secret === undefined) {
      secret = randomBytes(24).toString("base64url");
      reply.setCookie(SIGN_IN_COOKIE, secret, cookieOptions(request, config.baseUrl, { path: SIGN_IN_PATH }));
    }
    return secret;
  }

  /** The sign-in form's token; the page's other forms (the header's sign-out) keep the session's. */
  function signInToken(request: FastifyRequest, reply: FastifyReply): string {
    const own = request.session;
    request.session = { _csrf: signInSecret(request, reply) };
    try {
      return reply.generateCsrf();
    } finally {
      request.session = own;
    }
  }

  function showForm(
    request: FastifyRequest,
    reply: FastifyReply,
    form: { next: string | undefined; userName?: string; message?: string },
  ) {
    return sendPage(request, reply, SIGN_IN_VIEW, {
      title: "Sign in",
      signInCsrf: signInToken(request, reply),
      next: form.next ?? "",
      userName: form.userName ?? "",
      message: form.message,
    });
  }

  const page = { ui: true, access: { public: true as const } };

  app.get(SIGN_IN_PATH, {
    config: page,
    handler: async (request, reply) => {
      const next = safeNext((request.query as { next?: unknown }).next);
      return showForm(request, reply, { next });
    },
  });

  app.post(SIGN_IN_PATH, {
    config: page,
    // Checked (ui-security.ts) against the sign-in cookie's secret, whether or not a session is live.
    onRequest: async (request) => {
      request.session = { _csrf: readCookie(request, SIGN_IN_COOKIE) };
    },
    handler: async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const user = typeof body.user === "string" ? body.user.trim() : "";
      const password = typeof body.password === "string" ? body.password : "";
      const next = safeNext(body.next);
      const again = { next, userName: user.slice(0, MAX_USER_NAME) };
      // Sent through the authenticator as Basic credentials are: its throttling per address and
      // per user name, its bounded hashing, and an unknown user costing a hash like a known one.
      let principal;
      try {
        if (user === "" || user.length > MAX_USER_NAME || password.length > MAX_PASSWORD) {
          throw new DomainError("forbidden", "SIGN_IN_FAILED", WRONG_CREDENTIALS);
        }
        principal = await authenticator.authenticate({ kind: "password", user, password }, request);
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        if (error.retryAfterSeconds !== undefined) reply.header("Retry-After", String(error.retryAfterSeconds));
        if (error.kind === "too_many_requests" || error.kind === "unavailable") {
          reply.code(error.kind === "too_many_requests" ? 429 : 503);
          return showForm(request, reply, { ...again, message: error.message });
        }
        if (error.kind !== "forbidden") throw error;
        return showForm(request, reply.code(401), { ...again, message: WRONG_CREDENTIALS });
      }
      if (principal.type !== "user") throw new DomainError("forbidden", "SIGN_IN_FAILED", WRONG_CREDENTIALS);

      // Session fixation: a session cookie the browser came with is ended, never taken over.
      const previous = readCookie(request, SESSION_COOKIE);
      if (previous !== undefined) await sessions.store.end(previous);
      const userAgent = request.headers["user-agent"];
      const started = await sessions.store.start(principal.userId, { address: request.ip, userAgent });
      if (started === undefined) {
        return showForm(request, reply.code(401), { ...again, message: WRONG_CREDENTIALS });
      }
      request.log.info({ user: principal.userName, session: started.session.id }, "signed in to the web UI");
      // The request is now this user's: its audit record names them (areas/audit/recording.ts).
      request.principal = principal;
      // The browser keeps the cookie no longer than the session's absolute expiry, which starts now.
      const cookie = cookieOptions(request, config.baseUrl, { path: "/", maxAgeSeconds: absoluteSeconds });
      reply.setCookie(SESSION_COOKIE, started.token, cookie);
      reply.clearCookie(SIGN_IN_COOKIE, cookieOptions(request, config.baseUrl, { path: SIGN_IN_PATH }));
      return reply.redirect(next ?? HOME, 303);
    },
  });

  app.post("/sign-out", {
    // Public: signing out never needs a privilege; the CSRF check (ui-security.ts) needs a live session.
    config: page,
    handler: async (request, reply) => {
      const token = readCookie(request, SESSION_COOKIE);
      if (token !== undefined) await sessions.store.end(token);
      reply.clearCookie(SESSION_COOKIE, cookieOptions(request, config.baseUrl, { path: "/" }));
      return reply.redirect(HOME, 303);
    },
  });
}
