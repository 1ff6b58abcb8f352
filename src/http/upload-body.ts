import { PassThrough, Readable } from "node:stream";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { uploadTooLarge } from "../domain/upload-limit.js";

/**
 * Upload bodies arrive as the raw stream handed over by the catch-all parser (body-parsers.ts).
 * Returns a factory for that stream, or undefined when the request carries no body. A declared
 * Content-Length over the limit is refused before a byte is read; the limit itself is enforced
 * again while streaming by the blob store.
 */
export function rawUploadBody(
  request: FastifyRequest,
  maxBytes: number,
  options: { emptyZipIsBody?: boolean } = {},
): (() => Readable) | undefined {
  const length = declaredBodyBytes(request);
  if (length !== undefined && length > maxBytes) {
    throw uploadTooLarge(maxBytes);
  }
  // An empty body declared as a zip is a (broken) package, not "no body": its error says so.
  const declaredZip =
    options.emptyZipIsBody === true &&
    request.headers["content-type"]?.toLowerCase().startsWith("application/zip") === true;
  if (!(request.body instanceof Readable) || (length === 0 && !declaredZip)) return undefined;
  const source = request.body;
  return () => {
    const body = new PassThrough();
    source.on("error", (error) => body.destroy(error));
    source.pipe(body);
    return body;
  };
}

/**
 * The body's length as the request declares it: its Content-Length, 0 without one (HTTP/1.1: no
 * body), undefined when chunked. Node's parser fails a body that ends before it or runs past it.
 */
export function declaredBodyBytes(request: FastifyRequest): number | undefined {
  if (request.headers["transfer-encoding"] !== undefined) return undefined;
  const length = Number(request.headers["content-length"] ?? "0");
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * A refused request whose body was not read whole: close the connection rather than read the
 * rest (Node would, to reuse the connection). Registered at the root (body-parsers.ts).
 */
export function closeConnectionsOfRefusedUploads(app: FastifyInstance): void {
  // Synchronous (callback) hook: no promise and no extra microtask on every request.
  app.addHook("onSend", (request, reply, _payload, done) => {
    if (reply.statusCode >= 400 && !request.raw.complete) reply.header("connection", "close");
    done();
  });
}
