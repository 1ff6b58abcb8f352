import type { Readable } from "node:stream";
import multipart, { type Multipart } from "@fastify/multipart";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { DomainError, invalid } from "../domain/errors.js";
import type { ClaimedDigests } from "./upload-digests.js";

/*
 * HTML form uploads (`multipart/form-data`, RFC 7578: `curl -F file=@x`, a browser's file input).
 * Not to be confused with ProGet's chunked multipart upload protocol of asset directories
 * (`?multipart=upload|complete`, areas/endpoints/multipart/), whose parts are raw bodies.
 */

/** Most file parts one form may carry. */
export const MAX_FORM_FILES = 1000;
/** Most text fields one form may carry, and the largest one: they are held in memory. */
const MAX_FORM_FIELDS = 256;
const MAX_FORM_FIELD_BYTES = 64 * 1024;
/** Header lines of one part: a form part needs two (Content-Disposition, Content-Type). */
const MAX_PART_HEADERS = 16;

/** A file part, handed over as it arrives: its bytes must be read to the end before the next part can be. */
export interface FormDataFile {
  /** 0 for the form's first file part. */
  readonly index: number;
  readonly fieldName: string;
  /** The part's filename exactly as sent, directories included (never trusted: callers validate it); "" when none. */
  readonly fileName: string;
  /**
   * The type the part declares, or undefined for `application/octet-stream`: what curl and browsers
   * label every file whose type they do not know, so the file's own name says more.
   */
  readonly contentType: string | undefined;
  readonly stream: Readable;
  /**
   * Digests to verify this file against: the request's digest headers (upload-digests.ts), which
   * describe a form's only file (a form with digest headers and a second file is refused).
   */
  readonly digests: ClaimedDigests;
}

export interface FormDataUpload<T> {
  /** What `store` returned for each file part, in form order. */
  readonly files: readonly T[];
  /** Text fields by name as sent, values in form order (a field may repeat). */
  readonly fields: ReadonlyMap<string, readonly string[]>;
}

/**
 * Makes the routes of `scope` (and only those: register it in a plugin holding just the upload
 * routes) read `multipart/form-data` bodies as forms, streamed part by part (docs/STYLE.md "HTTP"),
 * each file part at most `maxFileBytes`. Other types stay raw bodies. A body labelled
 * `multipart/form-data` with no boundary cannot be a form: it is read as an unlabelled raw body,
 * as before forms were parsed (ProGetAutomation labels a raw archive so, docs/clients.md 3.9).
 */
export async function acceptFormDataUploads(scope: FastifyInstance, maxFileBytes: number): Promise<void> {
  await scope.register(multipart, {
    // Filenames keep their directories, so that `../x` is refused rather than silently renamed `x`.
    preservePath: true,
    throwFileSizeLimit: true,
    // A file part's stream holds up to 1 MiB before it pushes back (busboy's default is 16 KiB):
    // fewer pauses of the parser, larger writes to the blob store (256 MiB: ~0.77 of a raw upload's
    // throughput with 16 KiB, ~0.9-1.0 with 1 MiB; bench/form-upload.ts).
    fileHwm: 1024 * 1024,
    limits: {
      // One byte over the limit, so that the blob store's own count refuses it with its usual message.
      fileSize: maxFileBytes + 1,
      files: MAX_FORM_FILES,
      fields: MAX_FORM_FIELDS,
      fieldSize: MAX_FORM_FIELD_BYTES,
      parts: MAX_FORM_FILES + MAX_FORM_FIELDS,
      headerPairs: MAX_PART_HEADERS,
    },
  });
  // Synchronous (callback) hook: the type is looked at before the body parser is chosen.
  scope.addHook("onRequest", (request, _reply, done) => {
    const type = request.headers["content-type"];
    if (type !== undefined && /^\s*multipart\/form-data/i.test(type) && !/;\s*boundary=/i.test(type)) {
      delete request.headers["content-type"];
    }
    done();
  });
}

/** Whether the request's body is a form (only in a scope set up by acceptFormDataUploads). */
export function isFormDataUpload(request: FastifyRequest): boolean {
  return typeof request.isMultipart === "function" && request.isMultipart();
}

/**
 * Reads a form part by part: each file part is handed to `store`, which must read its stream to
 * the end (storing it) before the next part is read; text fields are collected. Anything the form
 * gets wrong (a truncated body, a boundary the body does not use, a limit passed) is a 4xx
 * DomainError; so is a form with no file part. What `store` returned for the parts read before a
 * failure is the caller's to undo (the failure is thrown after them).
 */
export async function readFormDataUpload<T>(
  request: FastifyRequest,
  options: {
    readonly digests: ClaimedDigests;
    /** What a form with no file part is told to send instead. */
    readonly noFileHint: string;
    readonly store: (file: FormDataFile) => Promise<T>;
  },
): Promise<FormDataUpload<T>> {
  const files: T[] = [];
  const fields = new Map<string, string[]>();
  const claimsDigests = Object.keys(options.digests).length > 0;
  const parts = request.parts();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (error) {
      throw parserProblem(error);
    }
    if (next.done === true) break;
    const part = next.value;
    if (part.type === "field") {
      if (part.valueTruncated || part.fieldnameTruncated) throw fieldTooLarge();
      const value = typeof part.value === "string" ? part.value : JSON.stringify(part.value);
      fields.set(part.fieldname, [...(fields.get(part.fieldname) ?? []), value]);
      continue;
    }
    if (files.length > 0 && claimsDigests) {
      throw invalid(
        "FORM_DIGESTS_NEED_ONE_FILE",
        "Digest headers describe one file, and this form holds several: send each file in its own request " +
          "to have its digests verified.",
      );
    }
    // The parser destroys a part's stream with what went wrong in the body (a truncated part).
    let broken: unknown;
    part.file.once("error", (error) => (broken = error));
    try {
      files.push(
        await options.store({
          index: files.length,
          fieldName: part.fieldname,
          fileName: part.filename ?? "",
          contentType: part.mimetype === "application/octet-stream" ? undefined : part.mimetype,
          stream: part.file,
          digests: options.digests,
        }),
      );
    } catch (error) {
      // (With the body already read, that may have happened before the part was handed over.)
      const cause = broken ?? part.file.errored ?? undefined;
      throw error instanceof DomainError || cause === undefined ? error : parserProblem(cause);
    }
  }
  if (files.length === 0) {
    throw invalid("FORM_HAS_NO_FILE", `The multipart/form-data body has no file part: ${options.noFileHint}`);
  }
  return { files, fields };
}

/** What the form parser (busboy) or @fastify/multipart found wrong in the body, as the 4xx it is. */
function parserProblem(error: unknown): DomainError {
  const code = error instanceof Error && "code" in error ? error.code : undefined;
  if (code === "FST_FILES_LIMIT" || code === "FST_PARTS_LIMIT" || code === "FST_FIELDS_LIMIT") {
    return new DomainError(
      "too_large",
      "FORM_TOO_MANY_PARTS",
      `A form may carry at most ${MAX_FORM_FILES} files and ${MAX_FORM_FIELDS} other fields: send the rest in ` +
        "another request.",
    );
  }
  if (code === "FST_REQ_FILE_TOO_LARGE") {
    // Rarely seen: the blob store, counting one byte sooner, refuses such a file with its own message.
    return new DomainError(
      "too_large",
      "UPLOAD_TOO_LARGE",
      "A file of the form exceeds the upload limit (WHARF_MAX_UPLOAD_BYTES).",
    );
  }
  if (code === "FST_PROTO_VIOLATION") return invalid("FORM_FIELD_NAME_REFUSED", "A form field name is refused.");
  if (code === "FST_INVALID_JSON_FIELD_ERROR") {
    return invalid("FORM_FIELD_INVALID_JSON", "A form field declared as JSON is not valid JSON.");
  }
  return invalid(
    "FORM_MALFORMED",
    `The multipart/form-data body could not be read (${error instanceof Error ? error.message : String(error)}): ` +
      "send a complete form whose parts are separated by the boundary its Content-Type names " +
      "(curl -F file=@<path>), or the file itself as the body.",
  );
}

const fieldTooLarge = () =>
  new DomainError(
    "too_large",
    "FORM_FIELD_TOO_LARGE",
    `A form field other than a file is larger than ${MAX_FORM_FIELD_BYTES} bytes: send large content as a file part.`,
  );
