import type { IncomingHttpHeaders } from "node:http";
import { Transform, type Readable, type TransformCallback } from "node:stream";
import type { Dispatcher } from "undici";
import { untilAborted } from "./fetch-target.js";

/** The head of a response and its body, as undici hands them over. */
export interface OutboundResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Readable;
}

/** A request other than a GET (a webhook's POST): its method and body. */
export interface OutboundBody {
  readonly method: "POST" | "PUT" | "PATCH";
  readonly body: string;
}

/**
 * Sends one GET (or `send`'s method and body) through `dispatcher` (outbound-dispatcher.ts: a
 * shared pool whose connections are vetted as they are made). Resolves with the response head;
 * rejects with the signal's reason when it aborts, or with the connection's error. The URL's host
 * is sent as Host, SNI and the name the certificate must carry; undici adds no Accept-Encoding and
 * decodes nothing.
 */
export async function sendGet(
  dispatcher: Dispatcher,
  url: URL,
  headers: Readonly<Record<string, string>>,
  signal: AbortSignal,
  send?: OutboundBody,
): Promise<OutboundResponse> {
  if (signal.aborted) throw signal.reason;
  const sent = dispatcher.request({
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: send?.method ?? "GET",
    headers: { ...headers },
    ...(send === undefined ? {} : { body: send.body }),
    signal,
  });
  try {
    // Raced with the signal: a request still waiting for its connection (a tunnel being opened)
    // must end at the caller's deadline too, whatever undici does meanwhile.
    const response = await untilAborted(sent, signal);
    return { status: response.statusCode, headers: response.headers, body: response.body };
  } catch (error) {
    // undici reports an abort as its own error type; the caller knows the signal's reason.
    if (signal.aborted) {
      sent.then((late) => dropBody(late.body)).catch(() => undefined);
      throw signal.reason;
    }
    throw error;
  }
}

/**
 * Discards a body the caller does not want (a redirect's, a 404's) so that its connection can
 * serve the next request: up to `limit` bytes are read, a longer body closes the connection instead.
 * Resolves once the body is done either way; never rejects.
 */
export function discardBody(body: Readable, limit = 64 * 1024): Promise<void> {
  let seen = 0;
  const done = new Promise<void>((resolve) => {
    body.on("end", resolve);
    body.on("close", resolve);
  });
  body.on("data", (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > limit) body.destroy();
  });
  body.on("error", () => undefined);
  body.resume();
  return done;
}

/** Closes a body nobody will read; undici reports that as an error nobody needs to hear. */
export function dropBody(body: Readable): void {
  body.on("error", () => undefined);
  body.destroy();
}

/** Copies a response head into a fetch `Headers`, keeping repeated fields (Set-Cookie) apart. */
export function toHeaders(source: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(source)) {
    for (const item of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      try {
        headers.append(name, item);
      } catch {
        // The HTTP parser is more lenient than the Fetch `Headers` rules; such a field is dropped
        // rather than failing a response whose body may be all the caller wants.
      }
    }
  }
  return headers;
}

/**
 * The response body as a stream that fails with `tooLarge()` once more than `maxBytes` arrive,
 * and with `translate(error)` when the source fails. Destroying the returned stream destroys the
 * source, which closes its connection; `onClose` runs once, however the stream ends.
 */
export function boundBody(
  source: Readable,
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
  // undici reports a body cut short of its declared length or final chunk as an error here
  // (UND_ERR_SOCKET), so a truncated body never looks complete.
  source.on("error", (error) => body.destroy(translate(error)));
  body.on("close", () => {
    if (!source.readableEnded) source.destroy();
    onClose();
  });
  source.pipe(body);
  return body;
}
