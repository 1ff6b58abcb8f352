import type { FastifyRequest } from "fastify";
import type { Principal } from "../../../domain/principal.js";
import type { UiSessionReader } from "../../../http/auth.js";
import { byDatabase, type MetadataDb } from "../../../storage/metadata-db.js";
import { readCookie, SESSION_COOKIE } from "./cookies.js";
import { createUiSessionStore, type UiSessionStore, type UiSessionStoreDeps } from "./session-store.js";
import { createPostgresUiSessionStore } from "./session-store-postgres.js";

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

/** As the session store's, on either database: the data directory's SQLite or a cluster's PostgreSQL. */
export type UiSessionsDeps = Omit<UiSessionStoreDeps, "db"> & { readonly db: MetadataDb };

/**
 * The session store of the database at hand (session-store.ts, or session-store-postgres.ts in
 * cluster mode, where any node finds a session any other node started).
 */
export function createUiSessionStoreOf(deps: UiSessionsDeps): UiSessionStore {
  const { db, ...rest } = deps;
  return byDatabase(
    db,
    (sqlite) => createUiSessionStore({ ...rest, db: sqlite }),
    (postgres) => createPostgresUiSessionStore(postgres, rest),
  );
}

/** The session rows and the reader the authentication hook asks for UI routes (http/auth.ts). */
export function createUiSessions(deps: UiSessionsDeps): UiSessions {
  const store = createUiSessionStoreOf(deps);
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
