import type { Readable } from "node:stream";
import type { FastifyReply, FastifyRequest } from "fastify";
import { canReadSmall } from "../storage/blob-cache.js";
import { readBlobStart } from "../storage/blob-start.js";
import { type BlobStore, canOpenReader, openWithSize } from "../storage/blob-store.js";
import { isCompressedContent } from "../domain/compressed-content.js";
import { isCompressibleType, refuseContentCoding } from "./compression.js";
import { sendError } from "./errors.js";
import { recyclingBlobStream } from "./recycling-stream.js";

/** What a route knows about the stored item it serves; the bytes themselves stay in the store. */
export interface BlobToSend {
  readonly sha256: string;
  readonly size: number;
  readonly lastModified: Date;
  readonly contentType: string;
  readonly contentDisposition?: string;
  readonly cacheControl?: string;
  /** Sent on 200, 206 and 304 alike (e.g. Vary, user metadata headers). */
  readonly extraHeaders?: Readonly<Record<string, string>>;
}

export type RangeResult =
  | { readonly kind: "full"; readonly reason: "absent" | "invalid" | "multiple" | "empty" }
  | { readonly kind: "unsatisfiable" }
  | { readonly kind: "partial"; readonly start: number; readonly end: number };

const DIGITS = /^\d+$/;

/**
 * Reads a `Range` header (RFC 9110 14.1.2) against a representation of `size` bytes. Only one
 * range is ever served: a multi-range request gets the whole representation, which RFC 9110 14.2
 * allows ("a server MAY ignore the Range header field"). Our clients (pgutil, ADLIB) only send a
 * single range, and multipart/byteranges would add a body format nobody reads plus a known
 * amplification vector (many overlapping ranges). Syntactically invalid headers are ignored too.
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined) return { kind: "full", reason: "absent" };
  const eq = header.indexOf("=");
  // Range units are case-insensitive; an unknown unit must be ignored.
  if (eq < 0 || header.slice(0, eq).trim().toLowerCase() !== "bytes") return { kind: "full", reason: "invalid" };
  // Recipients must tolerate empty list elements ("bytes=0-5,").
  const specs = header
    .slice(eq + 1)
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (specs.length === 0) return { kind: "full", reason: "invalid" };
  const parsed = specs.map(parseSpec);
  if (parsed.some((p) => p === undefined)) return { kind: "full", reason: "invalid" };
  if (specs.length > 1) return { kind: "full", reason: "multiple" };
  const spec = parsed[0];
  if (spec === undefined) return { kind: "full", reason: "invalid" };

  if (spec.first === undefined) {
    // A suffix range; zero-length is never satisfiable. On an empty representation a non-zero
    // suffix is satisfiable but has no bytes to describe in a Content-Range, so send it whole.
    const suffix = spec.last ?? 0;
    if (suffix === 0) return { kind: "unsatisfiable" };
    if (size === 0) return { kind: "full", reason: "empty" };
    return { kind: "partial", start: Math.max(0, size - suffix), end: size - 1 };
  }
  if (spec.first >= size) return { kind: "unsatisfiable" };
  const end = spec.last === undefined ? size - 1 : Math.min(spec.last, size - 1);
  return { kind: "partial", start: spec.first, end };
}

/** One `first-last`, `first-` or `-suffix`; undefined when malformed, including last < first. */
function parseSpec(spec: string): { first?: number; last?: number } | undefined {
  const dash = spec.indexOf("-");
  if (dash < 0) return undefined;
  const a = spec.slice(0, dash).trim();
  const b = spec.slice(dash + 1).trim();
  if (a === "") return DIGITS.test(b) ? { last: Number(b) } : undefined;
  if (!DIGITS.test(a)) return undefined;
  if (b === "") return { first: Number(a) };
  if (!DIGITS.test(b) || Number(b) < Number(a)) return undefined;
  return { first: Number(a), last: Number(b) };
}

export interface EntityTag {
  readonly weak: boolean;
  readonly opaque: string;
}

/**
 * Reads an entity-tag list (`If-Match`, `If-None-Match`) or `*`. Bare tokens are accepted as
 * strong tags: ProGet documents unquoted ETags, so some scripts echo them back that way.
 */
export function parseEntityTags(header: string): "*" | EntityTag[] {
  if (header.trim() === "*") return "*";
  const tags: EntityTag[] = [];
  for (const m of header.matchAll(/(W\/)?"([^"]*)"|[^\s,]+/g)) {
    tags.push(m[2] !== undefined ? { weak: m[1] !== undefined, opaque: m[2] } : { weak: false, opaque: m[0] });
  }
  return tags;
}

const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;
const RFC850_DATE = /^[A-Z][a-z]+, \d{2}-[A-Z][a-z]{2}-\d{2} \d{2}:\d{2}:\d{2} GMT$/;
const ASCTIME_DATE = /^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}$/;

/**
 * Milliseconds of an HTTP-date (RFC 9110 5.6.7: IMF-fixdate and the two obsolete forms), or
 * undefined. Stricter than Date.parse on purpose: an invalid date must make the condition be
 * ignored, not be read as some year that turns into a wrong 304.
 */
export function parseHttpDate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  // asctime carries no zone but is defined as UTC; Date.parse would read it as local time.
  const text = ASCTIME_DATE.test(v) ? `${v} GMT` : IMF_FIXDATE.test(v) || RFC850_DATE.test(v) ? v : undefined;
  const ms = text === undefined ? NaN : Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The entity's validators: the strong ETag's opaque part and Last-Modified at second precision. */
export interface Validators {
  readonly etag: string;
  readonly lastModified: number | undefined;
}

export interface ConditionalHeaders {
  readonly ifMatch?: string;
  readonly ifNoneMatch?: string;
  readonly ifModifiedSince?: string;
  readonly ifUnmodifiedSince?: string;
}

/** RFC 9110 13.2.2 steps 1-4, in that order, for a representation that exists. */
export function evaluatePreconditions(
  method: string,
  h: ConditionalHeaders,
  v: Validators,
): "proceed" | "not-modified" | "precondition-failed" {
  const readOnly = method === "GET" || method === "HEAD";
  if (h.ifMatch !== undefined) {
    if (!matches(parseEntityTags(h.ifMatch), v.etag, "strong")) return "precondition-failed";
  } else if (h.ifUnmodifiedSince !== undefined && v.lastModified !== undefined) {
    const since = parseHttpDate(h.ifUnmodifiedSince);
    if (since !== undefined && v.lastModified > since) return "precondition-failed";
  }
  if (h.ifNoneMatch !== undefined) {
    if (matches(parseEntityTags(h.ifNoneMatch), v.etag, "weak")) {
      return readOnly ? "not-modified" : "precondition-failed";
    }
  } else if (readOnly && h.ifModifiedSince !== undefined && v.lastModified !== undefined) {
    const since = parseHttpDate(h.ifModifiedSince);
    if (since !== undefined && v.lastModified <= since) return "not-modified";
  }
  return "proceed";
}

/**
 * RFC 9110 13.1.5: true when the Range may be honoured. An ETag must match strongly; a date must
 * equal Last-Modified exactly. Our Last-Modified is as strong as it gets for a date (content
 * changes always mean a new upload time), though a replacement within the same second would
 * share it; clients that care send the ETag, which cannot collide.
 */
export function ifRangeMatches(header: string, v: Validators): boolean {
  const value = header.trim();
  if (value.startsWith('"') || value.startsWith("W/")) {
    const tags = parseEntityTags(value);
    return tags !== "*" && tags.length === 1 && matches(tags, v.etag, "strong");
  }
  const date = parseHttpDate(value);
  return date !== undefined && date === v.lastModified;
}

function matches(tags: "*" | EntityTag[], etag: string, comparison: "strong" | "weak"): boolean {
  if (tags === "*") return true;
  return tags.some((t) => t.opaque === etag && (comparison === "weak" || !t.weak));
}

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

export interface SendBlobOptions {
  /**
   * Awaited once a 200 or 206 (HEAD included) has its status and headers set, just before they
   * and the body go out; never for a 304, 412, 416 or error. For work the client must be able to
   * see by the time it has the body (a deployment the download announces). Must not reject: the
   * stream already opened would never be sent, nor closed.
   */
  readonly beforeBody?: () => Promise<void> | undefined;
}

/**
 * Serves a stored blob for GET or HEAD with validators, conditional requests and single byte
 * ranges: the one place that turns stored bytes into a response (STYLE "HTTP"). The status is
 * decided from headers and metadata alone; the store is touched only for a 200/206, and HEAD
 * only stats it so that it answers exactly what GET would without opening the file.
 */
export async function sendBlob(
  request: FastifyRequest,
  reply: FastifyReply,
  blob: BlobToSend,
  blobs: BlobStore,
  options: SendBlobOptions = {},
): Promise<FastifyReply> {
  const lastModifiedMs = blob.lastModified.getTime();
  const validators: Validators = {
    etag: blob.sha256,
    // HTTP dates have second precision; comparing milliseconds would make every If-Modified-Since fail.
    lastModified: Number.isFinite(lastModifiedMs) ? Math.floor(lastModifiedMs / 1000) * 1000 : undefined,
  };
  // Stored user content must never be sniffed into something active, whatever the status.
  reply.header("X-Content-Type-Options", "nosniff").header("Accept-Ranges", "bytes");

  const outcome = evaluatePreconditions(
    request.method,
    {
      ifMatch: header(request, "if-match"),
      ifNoneMatch: header(request, "if-none-match"),
      ifModifiedSince: header(request, "if-modified-since"),
      ifUnmodifiedSince: header(request, "if-unmodified-since"),
    },
    validators,
  );
  if (outcome === "precondition-failed") {
    return sendError(reply, 412, "PRECONDITION_FAILED", "A precondition of the request does not hold.");
  }
  if (outcome === "not-modified") {
    // RFC 9110 15.4.5: a 304 carries the validators and caching headers a 200 would, no content headers.
    setValidatorHeaders(reply, blob, validators);
    return reply.code(304).send();
  }

  // Range is defined for GET only (RFC 9110 14.2): HEAD answers as a plain GET would. A failed
  // If-Range means the client's partial copy is stale, so it gets the whole blob instead.
  const head = request.method === "HEAD";
  const ifRange = header(request, "if-range");
  const honourRange = !head && (ifRange === undefined || ifRangeMatches(ifRange, validators));
  const range = parseRange(honourRange ? header(request, "range") : undefined, blob.size);
  if (range.kind === "unsatisfiable") {
    reply.header("Content-Range", `bytes */${blob.size}`);
    return sendError(reply, 416, "RANGE_NOT_SATISFIABLE", `The requested range is outside the ${blob.size} bytes.`);
  }

  // Only now is the store touched. A blob that the metadata promises but the store lacks (or
  // holds at another size) is an integrity fault on our side: 500, not 503, because retrying
  // will not bring it back, and it must page someone rather than look like a passing overload.
  // A small blob may come whole from memory (storage/blob-cache.ts) and go out in one write.
  const whole = !head && canReadSmall(blobs) ? await blobs.readSmall(blob.sha256, blob.size) : undefined;
  const opened =
    !head && whole === undefined
      ? await openStream(blobs, blob, range.kind === "partial" ? range : { start: 0, end: blob.size - 1 }, reply)
      : undefined;
  const storedSize = whole?.length ?? opened?.size ?? (head ? (await blobs.stat(blob.sha256))?.size : undefined);
  if (storedSize !== blob.size) {
    opened?.stream?.destroy();
    request.log.error({ sha256: blob.sha256, expectedSize: blob.size, storedSize }, "stored content is missing");
    return sendError(reply, 500, "STORED_CONTENT_MISSING", "The stored content is missing.");
  }
  const stream = opened?.stream;

  // A text-typed file may still hold compressed bytes (a .gz uploaded as text/plain): its first
  // bytes keep it from being encoded again (http/compression.ts), which only they can show.
  if (!head && range.kind !== "partial" && isCompressibleType(blob.contentType)) {
    const firstBytes = whole ?? (await readBlobStart(blobs, blob.sha256, blob.size).catch(() => undefined));
    if (firstBytes === undefined || isCompressedContent({ firstBytes })) refuseContentCoding(request);
  }
  setValidatorHeaders(reply, blob, validators);
  reply.header("Content-Type", blob.contentType);
  if (blob.contentDisposition !== undefined) reply.header("Content-Disposition", blob.contentDisposition);
  if (range.kind === "partial") {
    reply.code(206).header("Content-Range", `bytes ${range.start}-${range.end}/${blob.size}`);
    reply.header("Content-Length", String(range.end - range.start + 1));
  } else {
    reply.code(200).header("Content-Length", String(blob.size));
  }
  const before = options.beforeBody?.();
  if (before !== undefined) await before;
  if (whole !== undefined) {
    return reply.send(range.kind === "partial" ? whole.subarray(range.start, range.end + 1) : whole);
  }
  // Fastify destroys the stream, closing the file, when the client disconnects mid-body or has
  // already left while the file was being opened (both proven in test/integration/send-blob.test.ts).
  return stream === undefined ? reply.send() : reply.send(stream);
}

/**
 * The blob's stream and stored size: positional reads into reused buffers where the store allows
 * them (http/recycling-stream.ts), else its stream, found and opened in one request where it can
 * (an object store: storage/blob-store.ts openWithSize). No stream when the size is not the
 * metadata's: nothing is read then.
 */
async function openStream(
  blobs: BlobStore,
  blob: BlobToSend,
  range: { start: number; end: number },
  reply: FastifyReply,
): Promise<{ stream?: Readable; size: number } | undefined> {
  const reader = canOpenReader(blobs) ? await blobs.openReader(blob.sha256) : undefined;
  if (reader === undefined) return openWithSize(blobs, blob.sha256, range);
  if (reader.size !== blob.size) {
    await reader.close();
    return { size: reader.size };
  }
  return { stream: recyclingBlobStream(reader, range, reply.raw), size: reader.size };
}

/** The last Last-Modified formatted: a hot download sends the same one again and again. */
let lastHttpDate: { readonly ms: number; readonly text: string } | undefined;

function httpDate(ms: number): string {
  if (lastHttpDate?.ms !== ms) lastHttpDate = { ms, text: new Date(ms).toUTCString() };
  return lastHttpDate.text;
}

function setValidatorHeaders(reply: FastifyReply, blob: BlobToSend, v: Validators): void {
  // Content-addressed: the hash identifies the exact bytes, so it is a strong validator.
  reply.header("ETag", `"${v.etag}"`);
  if (v.lastModified !== undefined) reply.header("Last-Modified", httpDate(v.lastModified));
  if (blob.cacheControl !== undefined) reply.header("Cache-Control", blob.cacheControl);
  if (blob.extraHeaders !== undefined) {
    for (const [name, value] of Object.entries(blob.extraHeaders)) reply.header(name, value);
  }
}
