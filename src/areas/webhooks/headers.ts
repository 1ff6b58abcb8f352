import { invalid } from "../../domain/errors.js";

/**
 * A webhook's own request headers (a receiver's token, a routing key). Refused: the headers that
 * frame the request or name its destination (hop-by-hop, Host, Content-Length, Content-Type: the
 * body is always JSON) and Wharf's own, which a receiver must be able to trust.
 */
const RESERVED = new Set([
  "host",
  "content-length",
  "content-type",
  "content-encoding",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
  "proxy-authenticate",
  "te",
  "trailer",
  "upgrade",
  "expect",
]);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
/** Visible ASCII, spaces and tabs inside; no CR or LF (a header must not start another). */
const VALUE = /^[\x20-\x7e\t]{0,2000}$/;
const MAX_HEADERS = 20;

/** The headers as they will be sent; throws invalid WEBHOOK_HEADER_REFUSED for any refused one. */
export function checkHeaders(given: Readonly<Record<string, unknown>>): Record<string, string> {
  const refuse = (why: string) => invalid("WEBHOOK_HEADER_REFUSED", why);
  const entries = Object.entries(given);
  if (entries.length > MAX_HEADERS) throw refuse(`A webhook may send at most ${MAX_HEADERS} headers of its own.`);
  const seen = new Set<string>();
  const headers: Record<string, string> = {};
  for (const [name, value] of entries) {
    const lower = name.toLowerCase();
    if (!TOKEN.test(name)) throw refuse(`'${name.slice(0, 100)}' is not a valid header name.`);
    if (RESERVED.has(lower) || lower.startsWith("x-wharf-"))
      throw refuse(`The header ${name} is set by Wharf and cannot be given.`);
    if (seen.has(lower)) throw refuse(`The header ${name} is given twice.`);
    if (typeof value !== "string" || !VALUE.test(value))
      throw refuse(`The value of ${name} must be text of at most 2000 printable characters, on one line.`);
    seen.add(lower);
    headers[name] = value.trim();
  }
  return headers;
}
