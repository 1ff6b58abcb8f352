import { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { DomainError } from "../domain/errors.js";
import { hasParam, param, parseBoolean } from "./params.js";

/** JSON replies, and the guard of every route whose body must be JSON. */

/** `?indent`, `?indent=true`, `?Indent=1` pretty-print; `?indent=false` does not (old feed-management doc). */
export function wantsIndent(query: unknown): boolean {
  const source = query as Record<string, unknown> | undefined;
  return hasParam(source, "indent") && parseBoolean(param(source, "indent"), true);
}

/**
 * Sends a JSON body checked against its response schema, indented when asked. The serializer is
 * replaced only at this point, so an error sent later is still plain text.
 */
export function sendJson<T>(reply: FastifyReply, status: number, schema: z.ZodType<T>, body: T, indent: boolean) {
  if (indent) {
    // A custom serializer bypasses the default content type, so it is set here (docs/PRODUCT.md).
    reply.type("application/json; charset=utf-8");
    reply.serializer((payload: unknown) => JSON.stringify(schema.parse(payload), null, 2));
  }
  return reply.code(status).send(body);
}

/**
 * Bodies arrive through a catch-all parser as a raw stream when they are not JSON or a form
 * (http/body-parsers.ts); such a body cannot be a feed, a connector, a user or any other object a
 * route reads, and must not be mistaken for one: 415 JSON_REQUIRED. A preValidation hook, or
 * called first in a handler.
 */
export async function requireJsonBody(request: FastifyRequest): Promise<void> {
  if (request.body instanceof Readable) {
    throw new DomainError(
      "unsupported",
      "JSON_REQUIRED",
      "Send the request body as JSON (Content-Type: application/json).",
    );
  }
}
