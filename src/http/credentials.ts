import type { IncomingHttpHeaders } from "node:http";
import type { FastifyRequest } from "fastify";

/**
 * Credentials as they arrived, before anyone checked them. Every transport a real client uses
 * (docs/compat.md 0.1) ends up here, so that one authenticator decides for all of them.
 */
export type Credentials =
  | { readonly kind: "api-key"; readonly key: string }
  | { readonly kind: "password"; readonly user: string; readonly password: string }
  /** `X-ApiKey: user:password`: an API key if one matches, else a pseudo-key login. */
  | { readonly kind: "key-or-password"; readonly key: string; readonly user: string; readonly password: string };

const QUERY_KEY_NAMES = new Set(["key", "api_key"]);
const JSON_KEY_NAMES = new Set(["api_key"]);

/** Credentials from headers and the query string: known before the body is read. */
export function credentialsFromHeadersAndQuery(request: FastifyRequest): Credentials | undefined {
  return credentialsFromHeaders(request.headers) ?? credentialsFromQuery(request);
}

/** Credentials from the headers alone: what a request with no query string can carry before its body. */
export function credentialsFromHeaders(headers: IncomingHttpHeaders): Credentials | undefined {
  const headerKey = headerValue(headers, "x-apikey") ?? headerValue(headers, "x-proget-apikey");
  if (headerKey !== undefined) return fromKeyValue(headerKey);

  const authorization = headerValue(headers, "authorization");
  if (authorization !== undefined) {
    const basic = parseBasic(authorization);
    if (basic) {
      return basic.user.toLowerCase() === "api"
        ? { kind: "api-key", key: basic.password }
        : { kind: "password", ...basic };
    }
  }
  return undefined;
}

function credentialsFromQuery(request: FastifyRequest): Credentials | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  if (query && typeof query === "object") {
    for (const [name, value] of Object.entries(query)) {
      const first = Array.isArray(value) ? value[0] : value;
      if (QUERY_KEY_NAMES.has(name.toLowerCase()) && typeof first === "string" && first !== "") {
        return { kind: "api-key", key: first };
      }
    }
  }
  return undefined;
}

declare module "fastify" {
  interface FastifyContextConfig {
    /**
     * The route reads a key from the `API_Key` element of an XML body (the SOAP envelopes of
     * `/api/soap`): such a body is then bounded and parsed before the key is known, like a JSON or
     * form body, and its parser puts the key at the parsed body's root for takeCredentialsFromBody.
     */
    keyInXmlBody?: boolean;
  }
}

/** Whether the body may carry a key (form field `key`, JSON root `API_Key`, SOAP `API_Key`): only then is auth deferred to after parsing. */
export function bodyMayCarryKey(request: FastifyRequest): boolean {
  const type = request.headers["content-type"]?.toLowerCase() ?? "";
  if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("application/json")) return true;
  return (
    request.routeOptions.config?.keyInXmlBody === true &&
    (type.startsWith("text/xml") || type.startsWith("application/soap+xml"))
  );
}

/**
 * Takes a key out of a parsed body and removes it, so that it is never stored as data: a form's
 * `key` or `API_Key` field, a JSON body's or a parsed SOAP call's root `API_Key` (names matched
 * case-insensitively). A JSON member named `key` stays data (ApiKeyInfo's `key` is the key a client
 * chooses).
 */
export function takeCredentialsFromBody(body: unknown, contentType: string | undefined): Credentials | undefined {
  if (!body || typeof body !== "object" || Array.isArray(body)) return undefined;
  // A form's fields are named like the query string's; JSON and SOAP bodies name the key API_Key only.
  const names = contentType?.toLowerCase().startsWith("application/x-www-form-urlencoded")
    ? QUERY_KEY_NAMES
    : JSON_KEY_NAMES;
  const record = body as Record<string, unknown>;
  let found: Credentials | undefined;
  for (const name of Object.keys(record)) {
    if (!names.has(name.toLowerCase())) continue;
    const value = record[name];
    delete record[name];
    if (!found && typeof value === "string" && value !== "") found = fromKeyValue(value);
  }
  return found;
}

function fromKeyValue(value: string): Credentials {
  const colon = value.indexOf(":");
  if (colon > 0)
    return { kind: "key-or-password", key: value, user: value.slice(0, colon), password: value.slice(colon + 1) };
  return { kind: "api-key", key: value };
}

function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const raw = headers[name];
  const value = Array.isArray(raw) ? raw[0] : raw;
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

function parseBasic(header: string): { user: string; password: string } | undefined {
  const match = /^basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
