import { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { param, type QueryLike } from "../../http/params.js";
import { errorText } from "./schemas.js";
import { fieldError } from "./validation.js";

/** Small HTTP helpers shared by this area's route files. */

export const TAGS = ["security"];
/** Delete-style endpoints answer POST (pgutil) and DELETE (ProGet's docs) alike (docs/compat.md 11). */
export const DELETE_METHODS: ("POST" | "DELETE")[] = ["POST", "DELETE"];
/** Create/add endpoints: POST as documented, PUT as some scripts send. */
export const WRITE_METHODS: ("POST" | "PUT")[] = ["POST", "PUT"];
export const AUTH_ERRORS = { 401: errorText, 403: errorText } as const;

/**
 * A parameter from the query string, else from a JSON or form body; names matched
 * case-insensitively (docs/compat.md 0.1). Throws 400 naming `field` when it is absent.
 */
export function requiredParam(request: FastifyRequest, field: string, ...names: string[]): string {
  const value = param(request.query as QueryLike, ...names) ?? param(bodyObject(request), ...names);
  if (value === undefined || value.trim() === "") throw fieldError(field, "is required", "PARAMETER_REQUIRED");
  return value.trim();
}

/** A positive integer id parameter (query or body); 400 naming `field` otherwise. */
export function requiredId(request: FastifyRequest, field: string, ...names: string[]): number {
  const value = requiredParam(request, field, ...names);
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1)
    throw fieldError(field, "must be a positive integer", "ID_INVALID");
  return Number(value);
}

function bodyObject(request: FastifyRequest): QueryLike {
  const body = request.body;
  if (!body || typeof body !== "object" || Array.isArray(body) || body instanceof Readable) return undefined;
  return body as Record<string, unknown>;
}
