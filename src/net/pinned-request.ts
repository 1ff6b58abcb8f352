import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { type LookupFunction, isIP } from "node:net";
import { Transform, type Readable, type TransformCallback } from "node:stream";
import type { FetchTarget } from "./fetch-target.js";

/**
 * A `lookup` that answers every query with the vetted address. Node calls it instead of DNS when
 * the host is a name, so the socket cannot land anywhere the guard did not check, whatever the
 * name resolves to by now. Both shapes are answered: with `autoSelectFamily` (Node 20's default)
 * Node asks for `all: true`.
 */
function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return (_hostname, options, callback) => {
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

/**
 * Sends one GET to the target's vetted address, keeping the URL's host name for the Host header,
 * SNI and certificate verification. Resolves with the response head; rejects with the signal's
 * reason when it aborts, or with the socket error.
 *
 * `agent: false` gives every request its own connection: a shared pool is keyed by host and port,
 * not by address, so a kept-alive socket to an address vetted for one request (or under another
 * guard's more lenient policy) could otherwise serve a request whose vetting chose another address.
 */
export function requestPinned(
  target: FetchTarget,
  headers: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const { url } = target;
  const secure = url.protocol === "https:";
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const request = (secure ? https : http).request({
      protocol: url.protocol,
      hostname: target.hostname,
      port: url.port === "" ? (secure ? 443 : 80) : Number(url.port),
      path: `${url.pathname}${url.search}`,
      method: "GET",
      headers: { ...headers, host: url.host },
      agent: false,
      lookup: pinnedLookup(target.address, target.family),
      // SNI carries names only; Node warns when given an IP literal.
      ...(secure && isIP(target.hostname) === 0 ? { servername: target.hostname } : {}),
    });
    const onAbort = () => request.destroy(signal.reason as Error);
    signal.addEventListener("abort", onAbort, { once: true });
    request.on("response", (response) => {
      signal.removeEventListener("abort", onAbort);
      resolve(response);
    });
    request.on("error", (error) => {
      signal.removeEventListener("abort", onAbort);
      reject(error);
    });
    request.end();
  });
}

/** Copies the response head into a fetch `Headers`, keeping repeated fields (Set-Cookie) apart. */
export function toHeaders(response: IncomingMessage): Headers {
  const headers = new Headers();
  const raw = response.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i];
    const value = raw[i + 1];
    if (name === undefined || value === undefined) continue;
    try {
      headers.append(name, value);
    } catch {
      // Node's parser is more lenient than the Fetch `Headers` rules; such a field is dropped
      // rather than failing a response whose body may be all the caller wants.
    }
  }
  return headers;
}

/**
 * The response body as a stream that fails with `tooLarge()` once more than `maxBytes` arrive,
 * and with `translate(error)` when the source fails. Destroying the returned stream destroys the
 * response and so closes the connection; `onClose` runs once, however the stream ends.
 */
export function boundBody(
  response: IncomingMessage,
  maxBytes: number,
  tooLarge: () => Error,
  translate: (error: Error) => Error,
  onClose: () => void,
): Readable {
  let seen = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback) {
      seen += chunk.length;
      if (seen > maxBytes) callback(tooLarge());
      else callback(null, chunk);
    },
  });
  // Node also reports a body cut short of its declared length or final chunk as an error here
  // ("aborted", ECONNRESET), so a truncated body never looks complete.
  response.on("error", (error) => body.destroy(translate(error)));
  body.on("close", () => {
    response.destroy();
    onClose();
  });
  response.pipe(body);
  return body;
}
