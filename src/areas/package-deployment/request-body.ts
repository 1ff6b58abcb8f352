import { Readable } from "node:stream";
import type { FastifyRequest } from "fastify";
import { DomainError, invalid } from "../../domain/errors.js";
import { DEPLOYMENT_FIELDS, type FieldValues } from "./fields.js";

/**
 * The fields of a posted record, however they came (docs/seed-api.md C; docs/compat.md 6.2): a JSON object,
 * a form parsed by @fastify/formbody, or form pairs with no Content-Type at all (PowerShell's
 * default), which the catch-all parser hands over as a raw stream (http/body-parsers.ts). Names
 * are lowercased here, so that `feedname` and `FEEDNAME` are `FeedName`; a key sent in the body
 * (`key`, `API_Key`) has already been taken out by the auth hook for JSON and forms.
 */

/** A record is a few short strings; a body this large is not one. */
export const MAX_RAW_FORM_BYTES = 64 * 1024;

export async function readDeploymentFields(request: FastifyRequest): Promise<FieldValues> {
  const body: unknown = request.body;
  if (body instanceof Readable) return fieldsOf(new URLSearchParams(await readRawForm(request, body)));
  if (body === undefined || body === null) return new Map();
  if (typeof body !== "object" || Array.isArray(body)) {
    throw invalid("INVALID_DEPLOYMENT_BODY", "The body must be a JSON object or form fields.");
  }
  return fieldsOf(Object.entries(body));
}

/** Raw bodies are taken as form pairs only when no Content-Type says otherwise. */
async function readRawForm(request: FastifyRequest, body: Readable): Promise<string> {
  if (request.headers["content-type"] !== undefined) {
    throw new DomainError(
      "unsupported",
      "UNSUPPORTED_DEPLOYMENT_BODY",
      "Send the record as JSON, as a form (application/x-www-form-urlencoded), or as form pairs without a Content-Type.",
    );
  }
  if (Number(request.headers["content-length"] ?? "0") > MAX_RAW_FORM_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  // Not destroyed on a refusal: the 413 must still be sent on this connection (closed afterwards).
  for await (const chunk of body.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_RAW_FORM_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge() {
  return new DomainError("too_large", "DEPLOYMENT_BODY_TOO_LARGE", `The body exceeds ${MAX_RAW_FORM_BYTES} bytes.`);
}

/**
 * Lowercased name -> trimmed value of the record's fields; others are ignored. Blank values count
 * as absent (docs/compat.md 0.2: clients leave empty parameters out or send them empty). A field given
 * twice, in any spelling, is refused rather than guessed at.
 */
function fieldsOf(entries: Iterable<[string, unknown]>): FieldValues {
  const fields = new Map<string, string>();
  const seen = new Set<string>();
  for (const [name, raw] of entries) {
    const key = name.toLowerCase();
    const field = DEPLOYMENT_FIELDS.get(key);
    if (field === undefined) continue;
    if (seen.has(key) || Array.isArray(raw)) {
      throw invalid("DEPLOYMENT_FIELD_REPEATED", `The field '${field}' is given more than once.`);
    }
    seen.add(key);
    if (raw === undefined || raw === null) continue;
    if (typeof raw !== "string") throw invalid("INVALID_DEPLOYMENT_FIELD", `Invalid '${field}': expected a string.`);
    const value = raw.trim();
    if (value !== "") fields.set(key, value);
  }
  return fields;
}
