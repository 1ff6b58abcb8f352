import { constants } from "node:zlib";
import compress from "@fastify/compress";
import type { FastifyInstance, FastifyReply, FastifyRequest, onSendHookHandler } from "fastify";
import { isCompressedContent } from "../domain/compressed-content.js";

/**
 * Response compression (gzip and brotli, negotiated by Accept-Encoding) by @fastify/compress, held
 * to one rule: a response is content-encoded only when
 * - the client accepts br or gzip (`*` counts as gzip; `q=0` refuses; identity alone gets none),
 * - it is a whole 200-like answer: never a 206 (its Content-Range counts bytes of the unencoded
 *   content) nor a body-less answer (HEAD of a stored file, 304),
 * - its media type is a text type (isCompressibleType): `application/octet-stream` and every type
 *   not listed are never encoded, so package downloads, archives, images and video go out as
 *   stored, with their Content-Length,
 * - and nothing says its content is compressed already (domain/compressed-content.ts): not the
 *   file name in its Content-Disposition or at the end of its URL (`data.json.gz` served as
 *   JSON), not its type, not its first bytes (a body in memory here; a stored file's first bytes
 *   are checked by send-blob.ts),
 * - and it is at least `minBytes` long.
 * Such responses carry `Vary: accept-encoding` whether encoded or not, so that a shared cache
 * keeps the variants apart. An encoded response's strong ETag is made weak (as nginx does): the
 * same strong tag on two encodings would let If-Range resume a gzip download with identity bytes
 * (RFC 9110 8.8.3). Request bodies are never decoded (no Content-Encoding on uploads: a small
 * gzip body could expand past every size check made on the bytes received).
 *
 * No response today holds a secret beside text an attacker chooses (BREACH): an API key is shown
 * once, in an answer nobody can make again. Pages with CSRF tokens will have to mask them per
 * response, or set `compress: false` on their routes.
 */
export interface CompressionSettings {
  /** Smallest body worth encoding, in bytes. */
  readonly minBytes: number;
  /** Brotli quality, 0-11: the library's 11 costs ~50x the CPU of 4 for ~20% less. */
  readonly brotliQuality: number;
}

/** Text types besides text/* and the +json and +xml suffixes (application/problem+json, image/svg+xml...). */
const COMPRESSIBLE_TYPES = new Set([
  "application/json",
  "application/x-ndjson",
  "application/xml",
  "application/javascript",
  "application/x-javascript",
  "application/ecmascript",
  "application/yaml",
  "application/x-yaml",
  "application/toml",
  "application/wasm",
]);

const VARY_TOKEN = "Accept-Encoding";

export function isCompressibleType(contentType: string): boolean {
  const type = contentType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  if (type.startsWith("text/")) return type !== "text/event-stream"; // streamed events must not wait on a compressor
  return COMPRESSIBLE_TYPES.has(type) || type.endsWith("+json") || type.endsWith("+xml");
}

/**
 * Keeps this response unencoded whatever the client accepts: for content found compressed after
 * its headers were decided (a stored file's first bytes). Uses the plugin's own switch, the
 * `x-no-compression` request header, added to the request's headers (not the raw message's).
 */
export function refuseContentCoding(request: FastifyRequest): void {
  request.headers = { "x-no-compression": "already compressed" };
}

/** Registers compression; call before any route is added. */
export async function registerCompression(app: FastifyInstance, settings: CompressionSettings): Promise<void> {
  await app.register(compress, {
    encodings: ["br", "gzip"], // preferred in this order when the client rates them equally
    threshold: settings.minBytes,
    brotliOptions: {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: settings.brotliQuality,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    },
    customTypes: isCompressibleType,
    globalDecompression: false,
  });
  // Instance hooks run before the plugin's, which it adds to each route.
  app.addHook("onSend", decideEncoding);
  // Added to each route after the plugin's hook (onRoute hooks run in order): sees its outcome.
  app.addHook("onRoute", (route) => {
    const own = route.onSend === undefined ? [] : Array.isArray(route.onSend) ? route.onSend : [route.onSend];
    route.onSend = [...own, afterEncoding];
  });
}

/** Replies this module left to the plugin to encode (not those a route encoded itself, such as badges). */
const encodable = new WeakSet<FastifyReply>();

const decideEncoding: onSendHookHandler = (request, reply, payload, done) => {
  if (payload === null || payload === undefined || reply.statusCode === 206 || reply.hasHeader("content-encoding")) {
    return done(null, payload);
  }
  const type = reply.getHeader("content-type");
  const compressible =
    typeof type === "string" &&
    isCompressibleType(type) &&
    !isCompressedContent({
      name: nameOf(request, reply),
      contentType: type,
      firstBytes: Buffer.isBuffer(payload) ? payload : undefined,
    });
  // The plugin would otherwise also encode what mime-db calls compressible (application/x-tar...).
  if (!compressible) refuseContentCoding(request);
  else {
    encodable.add(reply);
    addVary(reply);
  }
  done(null, payload);
};

const afterEncoding: onSendHookHandler = (_request, reply, payload, done) => {
  if (!encodable.has(reply)) return done(null, payload);
  encodable.delete(reply);
  const encoding = reply.getHeader("content-encoding");
  const etag = reply.getHeader("etag");
  if (encoding !== undefined && encoding !== "identity" && typeof etag === "string" && !etag.startsWith("W/")) {
    reply.header("ETag", `W/${etag}`);
  }
  // The plugin looks for its token in lower case only, and adds it again beside "Accept-Encoding".
  const vary = reply.getHeader("vary");
  if (typeof vary === "string") reply.header("Vary", withoutRepeats(vary));
  done(null, payload);
};

/** The file name the response names (Content-Disposition) or, failing that, its URL's last segment. */
function nameOf(request: FastifyRequest, reply: FastifyReply): string {
  const disposition = reply.getHeader("content-disposition");
  const named = typeof disposition === "string" ? /filename\*?=(?:UTF-8'')?"?([^";]*)/i.exec(disposition) : null;
  if (named?.[1] !== undefined) return named[1];
  const url = request.url;
  const query = url.indexOf("?");
  return query < 0 ? url : url.slice(0, query);
}

function addVary(reply: FastifyReply): void {
  const vary = reply.getHeader("vary");
  const value = vary === undefined ? "" : Array.isArray(vary) ? vary.join(", ") : String(vary);
  if (value.trim() === "*" || /accept-encoding/i.test(value)) return;
  reply.header("Vary", value === "" ? VARY_TOKEN : `${value}, ${VARY_TOKEN}`);
}

function withoutRepeats(vary: string): string {
  const seen = new Set<string>();
  return vary
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== "" && !seen.has(name.toLowerCase()) && seen.add(name.toLowerCase()))
    .join(", ");
}
