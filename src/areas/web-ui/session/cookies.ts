import { type CookieSerializeOptions, fastifyCookie } from "@fastify/cookie";
import type { FastifyRequest } from "fastify";
import { requestBaseUrl } from "../../../http/base-url.js";

/** The signed-in browser's session token (session-store.ts keeps only its hash). */
export const SESSION_COOKIE = "wharf_session";
/**
 * The secret of the sign-in form's CSRF token, before there is a session: a cross-site page
 * cannot sign a browser into the attacker's account (login CSRF). Sent to /sign-in alone.
 */
export const SIGN_IN_COOKIE = "wharf_sign_in";
export const SIGN_IN_PATH = "/sign-in";

/**
 * Whether the browser reached Wharf over HTTPS: WHARF_BASE_URL says so, or the request does
 * (its own TLS, or a proxy's X-Forwarded-Proto, as base-url.ts reads it). A client that claims
 * HTTPS falsely only gets cookies its browser will not send back over plain HTTP.
 */
export function cameOverHttps(request: FastifyRequest, baseUrl: string | undefined): boolean {
  if (baseUrl?.startsWith("https:")) return true;
  return requestBaseUrl(request)?.startsWith("https:") ?? request.protocol === "https";
}

/** HttpOnly (no script reads it), SameSite=Lax (no cross-site POST carries it), Secure over HTTPS. */
export function cookieOptions(
  request: FastifyRequest,
  baseUrl: string | undefined,
  extra: { readonly path: string; readonly maxAgeSeconds?: number },
): CookieSerializeOptions {
  return {
    httpOnly: true,
    sameSite: "lax",
    secure: cameOverHttps(request, baseUrl),
    path: extra.path,
    ...(extra.maxAgeSeconds === undefined ? {} : { maxAge: extra.maxAgeSeconds }),
  };
}

/**
 * A cookie of the request, read from its header: the session is looked up in the authentication
 * hook, which runs before @fastify/cookie's own parsing of UI requests.
 */
export function readCookie(request: FastifyRequest, name: string): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined || !header.includes(name)) return undefined;
  const value = fastifyCookie.parse(header)[name];
  return value === undefined || value === "" ? undefined : value;
}
