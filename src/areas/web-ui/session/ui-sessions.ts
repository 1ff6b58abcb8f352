import type { FastifyRequest } from "fastify";
import type { Principal } from "../../../domain/principal.js";
import type { UiSessionReader } from "../../../http/auth.js";
import { readCookie, SESSION_COOKIE } from "./cookies.js";
import { createUiSessionStore, type UiSessionStore, type UiSessionStoreDeps } from "./session-store.js";

/**
 * What @fastify/csrf-protection reads a request's CSRF secret from (its `@fastify/session` mode:
 * `request.session._csrf`): the signed-in session's row, or the sign-in form's cookie. Held per
 * request, never sent anywhere; the tokens in pages are made from it.
 */
export interface CsrfSecretHolder {
  _csrf?: string | undefined;
  /** The signed-in session's row id (the account page marks "this browser" with it). */
  id?: number | undefined;
}

declare module "fastify" {
  interface FastifyRequest {
    /** Set on web UI requests only (config.ui); null elsewhere. */
    session: CsrfSecretHolder | null;
  }
}

export interface UiSessions extends UiSessionReader {
  readonly store: UiSessionStore;
}

/** The session rows and the reader the authentication hook asks for UI routes (http/auth.ts). */
export function createUiSessions(deps: UiSessionStoreDeps): UiSessions {
  const store = createUiSessionStore(deps);
  return {
    store,
    async principalOf(request: FastifyRequest): Promise<Principal | undefined> {
      const token = readCookie(request, SESSION_COOKIE);
      const session = token === undefined ? undefined : await store.find(token);
      request.session = { _csrf: session?.csrfSecret, id: session?.id };
      return session?.principal;
    },
  };
}
