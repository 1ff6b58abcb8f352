import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { hasZodFastifySchemaValidationErrors } from "fastify-type-provider-zod";
import { z } from "zod";
import { DomainError, type ErrorKind } from "../domain/errors.js";
import { databaseBusy, isBusy } from "../storage/busy.js";
import { diskFull, isDiskFull } from "../storage/disk-full.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The setting a route's JSON or form body limit follows, named when a body goes past it. */
    bodyLimitSetting?: string;
  }
}

/** Every error response's body in route schemas (OpenAPI): a plain-text message (docs/compat.md 0.3). */
export const errorText = z.string().describe("Plain-text error message (text/plain)");

/** The one table from error kind to HTTP status; nothing else in Wharf knows status codes of errors. */
export const STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  too_large: 413,
  unprocessable: 422,
  unsupported: 415,
  unavailable: 503,
  too_many_requests: 429,
  bad_gateway: 502,
  gateway_timeout: 504,
  insufficient_storage: 507,
};

/** Sends an error the way Inedo clients read it: a plain-text message (docs/compat.md 0.3). */
export function sendError(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  if (status === 401) reply.header("WWW-Authenticate", 'Basic realm="Wharf"');
  // Exactly `text/plain`: some clients read the body only for that exact type (docs/compat.md 0.3).
  return reply.code(status).header("Content-Type", "text/plain").header("X-Wharf-Error", code).send(message);
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | DomainError | Error, request, reply) => {
    // A write that found another process's lock and was not retried is still "try again", never a 500.
    if (isBusy(error)) error = databaseBusy(error);
    // A write that found the disk full (temp files, spools, SQLite) is the operator's to fix: 507, never a 500.
    if (isDiskFull(error)) {
      request.log.warn({ err: error }, "the disk is full");
      error = diskFull(undefined, error);
    }
    if (error instanceof DomainError) {
      // What it was made from (a driver's or the network's error) is for the log only, never the client.
      const cause = error.cause === undefined ? {} : { err: error.cause };
      request.log.info({ code: error.code, kind: error.kind, ...cause }, error.message);
      if (error.retryAfterSeconds !== undefined) reply.header("Retry-After", String(error.retryAfterSeconds));
      return sendError(reply, STATUS_BY_KIND[error.kind], error.code, error.message);
    }
    if (hasZodFastifySchemaValidationErrors(error)) {
      const details = error.validation
        .map((issue) => `${issue.instancePath.replace(/^\//, "").replaceAll("/", ".") || "body"}: ${issue.message}`)
        .join("; ");
      return sendError(reply, 400, "INVALID_REQUEST", `Invalid ${error.validationContext ?? "request"}: ${details}`);
    }
    const status = "statusCode" in error ? error.statusCode : undefined;
    if ("code" in error && error.code === "FST_ERR_CTP_BODY_TOO_LARGE") {
      return sendError(reply, 413, "BODY_TOO_LARGE", bodyTooLargeMessage(request));
    }
    if (status !== undefined && status >= 400 && status < 500) {
      // Fastify's own client errors (malformed JSON, body too large, unsupported media type).
      const code = "code" in error && typeof error.code === "string" ? error.code : "BAD_REQUEST";
      return sendError(reply, status, code, error.message);
    }
    request.log.error({ err: error }, "unhandled error");
    return sendError(reply, 500, "INTERNAL_ERROR", `An internal error occurred (request ${request.id}).`);
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(reply, 404, "ROUTE_NOT_FOUND", `No endpoint answers ${request.method} on this URL.`),
  );
}

/**
 * Errors Node's HTTP parser finds before Fastify sees a request (oversized headers, a request
 * with both Content-Length and Transfer-Encoding): answered in plain text like every other error.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = error.code === "HPE_HEADER_OVERFLOW" ? 431 : error.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
  const body = status === 431 ? "Request headers are too large." : "The request is malformed.";
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/plain\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * Fastify's refusal of a JSON or form body past its route's limit, naming the setting that limit
 * follows where there is one (docs/PRODUCT.md: refusals caused by a setting name it).
 */
function bodyTooLargeMessage(request: FastifyRequest): string {
  const { bodyLimit, config } = request.routeOptions;
  const refusal = `The request body is too large for this endpoint (${bodyLimit} bytes at most)`;
  if (config.bodyLimitSetting === undefined) return `${refusal}.`;
  return `${refusal}, a limit that follows ${config.bodyLimitSetting}; a raw body (the file itself) is streamed instead.`;
}
