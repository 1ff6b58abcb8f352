import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Grant } from "../domain/access.js";
import { forbidden, unauthenticated } from "../domain/errors.js";
import { type AccessNeed, ANONYMOUS, type Principal } from "../domain/principal.js";
import {
  bodyMayCarryKey,
  type Credentials,
  credentialsFromHeadersAndQuery,
  takeCredentialsFromBody,
} from "./credentials.js";

/**
 * What a route requires, declared in its `config.access`. A route that declares nothing is
 * denied to everyone (deny by default).
 * - `public`: no credentials needed (health, version, API description).
 * - `need`: checked as soon as the credentials are known, before the body is read whenever the
 *   key arrives in a header or the query string (so an unauthorised upload is refused unread).
 * - `inHandler`: the caller must present valid credentials or be Anonymous; the handler then calls
 *   `request.authorize(need)` (needs that depend on the body) or `request.can(need)` (lists
 *   filtered per item).
 */
export type AccessRule =
  | { readonly public: true }
  | { readonly need: AccessNeed | ((request: FastifyRequest) => AccessNeed) }
  | { readonly inHandler: true }
  | typeof UNDECLARED;

/** The one authentication path: turns credentials into a principal and decides needs. */
export interface Authenticator {
  /**
   * Resolves credentials to a principal; throws forbidden() for unknown, expired or wrong ones,
   * too_many_requests when the request's address or user name must wait after failures.
   */
  authenticate(credentials: Credentials, request?: FastifyRequest): Promise<Principal>;
  /**
   * Whether the principal meets the need. `memo` is kept per request, so that a list checking
   * a thousand items loads the caller's grants once.
   */
  allows(principal: Principal, need: AccessNeed, memo?: AccessMemo): Promise<boolean>;
  /**
   * `authenticate` then `allows`, answered from what is cached and current alone: true only when
   * the credentials (none: Anonymous) are known to meet the need with nothing to read or write.
   * False means "not known": the request then takes the full path, which decides and answers.
   */
  allowsFromMemory(credentials: Credentials | undefined, need: AccessNeed, request?: IncomingMessage): boolean;
}

/**
 * The web UI's signed-in browsers (areas/web-ui/session/): the user whose session cookie a UI
 * request carries. Asked for routes marked `config.ui` alone, so that the cookie never
 * authenticates a machine API (no cross-site request through `/api` rides on it).
 */
export interface UiSessionReader {
  principalOf(request: FastifyRequest): Promise<Principal | undefined>;
}

/** Per-request cache the authenticator may fill (grants of the principal). */
export interface AccessMemo {
  grants?: Promise<readonly Grant[]>;
}

declare module "fastify" {
  interface FastifyContextConfig {
    access?: AccessRule;
    /**
     * A web UI route: a signed-in browser's session cookie authenticates it when the request
     * carries no API credentials in its headers or query string (a key in the body is not read:
     * forms are the UI's own), and its state-changing methods require a CSRF token.
     */
    ui?: boolean;
  }
  interface FastifyRequest {
    principal: Principal;
    /** Throws 401 (Anonymous) or 403 unless the principal meets the need. */
    authorize(need: AccessNeed): Promise<void>;
    can(need: AccessNeed): Promise<boolean>;
  }
}

/** What a route that declares nothing gets: refused to everyone, full-control keys included. */
const UNDECLARED = { undeclared: true } as const;

/**
 * Per-request auth state, kept on the request itself (decorated as null): a WeakMap keyed on the
 * request would cost an ephemeron-table insert on every request of the hot download path.
 */
interface AuthState {
  memo?: AccessMemo;
  /** No key in headers or query, and the body may carry one: decided in preValidation. */
  awaitingBodyCredentials?: boolean;
}

declare module "fastify" {
  interface FastifyRequest {
    authState: AuthState | null;
  }
}

function memoOf(request: FastifyRequest): AccessMemo {
  request.authState ??= {};
  return (request.authState.memo ??= {});
}

export function registerAuthentication(
  app: FastifyInstance,
  authenticator: Authenticator,
  uiSessions?: UiSessionReader,
): void {
  // Decorated empty (Fastify refuses shared objects) and set for every request in onRequest.
  app.decorateRequest("principal", null as never);
  app.decorateRequest("authState", null);
  app.decorateRequest("can", function (this: FastifyRequest, need: AccessNeed) {
    return authenticator.allows(this.principal, need, memoOf(this));
  });
  app.decorateRequest("authorize", async function (this: FastifyRequest, need: AccessNeed) {
    if (await authenticator.allows(this.principal, need, memoOf(this))) return;
    throw this.principal.type === "anonymous" ? unauthenticated() : forbidden();
  });

  // Deny by default: a route that forgot to declare its access is closed, not open.
  app.addHook("onRoute", (route) => {
    route.config = { ...route.config, access: route.config?.access ?? UNDECLARED };
  });

  app.addHook("onRequest", async (request) => {
    request.principal = ANONYMOUS;
    const { access: rule, ui } = request.routeOptions.config;
    if (!rule) return; // unmatched URLs fall through to the 404 handler
    if (ui === true) return authenticateUi(request, rule);
    if ("public" in rule) return;
    const credentials = credentialsFromHeadersAndQuery(request);
    if (credentials) {
      request.principal = await authenticator.authenticate(credentials, request);
    } else if (bodyMayCarryKey(request)) {
      request.authState = { ...request.authState, awaitingBodyCredentials: true };
      return;
    }
    await enforce(request, rule);
  });

  /**
   * A page: API credentials in the headers or query string (a client asking a page's JSON) are
   * checked as anywhere; without them, the session cookie decides (none or a dead one: Anonymous).
   * A public page only looks at the cookie, to show who is signed in.
   */
  async function authenticateUi(request: FastifyRequest, rule: AccessRule): Promise<void> {
    const credentials = "public" in rule ? undefined : credentialsFromHeadersAndQuery(request);
    if (credentials) request.principal = await authenticator.authenticate(credentials, request);
    else request.principal = (await uiSessions?.principalOf(request)) ?? ANONYMOUS;
    if (!("public" in rule)) await enforce(request, rule);
  }

  app.addHook("preValidation", async (request) => {
    // A key in the body is always taken out, so that it is never stored as data; a UI form's
    // fields are its own (a page never reads a key from its body).
    const credentials =
      request.routeOptions.config.ui !== true && bodyMayCarryKey(request)
        ? takeCredentialsFromBody(request.body, request.headers["content-type"])
        : undefined;
    if (request.authState?.awaitingBodyCredentials !== true) return;
    request.authState.awaitingBodyCredentials = false;
    if (credentials) request.principal = await authenticator.authenticate(credentials, request);
    const rule = request.routeOptions.config.access;
    if (rule) await enforce(request, rule);
  });
}

async function enforce(request: FastifyRequest, rule: AccessRule): Promise<void> {
  if ("undeclared" in rule) throw forbidden();
  const need = declaredNeed(request);
  if (need !== undefined) await request.authorize(need);
}

/** The need the request's route declares (`config.access.need`) for this request; undefined for any other rule. */
export function declaredNeed(request: FastifyRequest): AccessNeed | undefined {
  const rule = request.routeOptions.config.access;
  if (!rule || !("need" in rule)) return undefined;
  return typeof rule.need === "function" ? rule.need(request) : rule.need;
}
