import type { AssetPath } from "../../../domain/asset-path.js";
import { conflict, DomainError, invalid, notFound } from "../../../domain/errors.js";
import { quote } from "../../../domain/upack-manifest.js";
import { param, type QueryLike } from "../../../http/params.js";
import type { MultipartPart, MultipartUpload } from "./repository.js";

/**
 * The rules of multipart uploads (docs/compat.md 4.2) that need no I/O: reading the query arguments
 * and checking parts against the upload, each other and the whole file.
 */

/** pgutil sends 32 hex digits, ProGetAutomation a GUID with dashes; nothing else reaches the database. */
const UPLOAD_ID = /^[A-Za-z0-9_-]{1,100}$/;

/** One part as its request describes it. */
export interface PartRequest extends MultipartPart {
  readonly uploadKey: string;
  readonly totalSize: number;
  readonly totalParts: number;
}

const missingArgument = (name: string) =>
  invalid("MULTIPART_ARGUMENT_MISSING", `The multipart argument '${name}' is required.`);

/** The client's `id` of the upload. */
export function uploadKeyOf(query: QueryLike): string {
  const id = param(query, "id");
  if (id === undefined) throw missingArgument("id");
  if (!UPLOAD_ID.test(id)) {
    throw invalid("INVALID_MULTIPART_ID", "The multipart 'id' must be 1 to 100 letters, digits, '-' or '_'.");
  }
  return id;
}

function wholeNumber(query: QueryLike, name: string): number {
  const raw = param(query, name);
  if (raw === undefined) throw missingArgument(name);
  const value = /^\d{1,16}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value)) {
    throw invalid("INVALID_MULTIPART_ARGUMENT", `The multipart argument '${name}' must be a whole number (0 or more).`);
  }
  return value;
}

/** Everything about a part that can be refused before its body is read. */
export function parsePart(query: QueryLike, maxUploadBytes: number): PartRequest {
  const uploadKey = uploadKeyOf(query);
  const index = wholeNumber(query, "index");
  const offset = wholeNumber(query, "offset");
  const totalSize = wholeNumber(query, "totalSize");
  const size = wholeNumber(query, "partSize");
  const totalParts = wholeNumber(query, "totalParts");
  if (totalSize > maxUploadBytes) {
    throw new DomainError(
      "too_large",
      "UPLOAD_TOO_LARGE",
      `The file (totalSize ${totalSize} bytes) exceeds the limit of ${maxUploadBytes} bytes.`,
    );
  }
  if (totalParts < 1) throw invalid("INVALID_MULTIPART_ARGUMENT", "'totalParts' must be at least 1.");
  // Every part of a non-empty file holds at least one byte, so the parts are a partition of the file.
  if (totalParts > Math.max(totalSize, 1)) {
    throw invalid(
      "INVALID_MULTIPART_ARGUMENT",
      `'totalParts' (${totalParts}) cannot exceed 'totalSize' (${totalSize}).`,
    );
  }
  if (index >= totalParts) {
    throw invalid(
      "MULTIPART_INDEX_OUT_OF_RANGE",
      `Part index ${index} is out of range: totalParts is ${totalParts} and indexes start at 0.`,
    );
  }
  if (size === 0 && totalSize > 0) throw invalid("INVALID_MULTIPART_ARGUMENT", "'partSize' must be at least 1.");
  if (offset + size > totalSize) {
    throw invalid(
      "MULTIPART_RANGE_OUT_OF_FILE",
      `Part ${index} (offset ${offset}, partSize ${size}) ends past totalSize (${totalSize} bytes).`,
    );
  }
  return { uploadKey, index, offset, size, totalSize, totalParts };
}

const bytesOf = (part: MultipartPart) => `bytes ${part.offset}-${part.offset + part.size - 1}`;
const overlaps = (a: MultipartPart, b: MultipartPart) => a.offset < b.offset + b.size && b.offset < a.offset + a.size;

/** A part may take only bytes that no other index holds or is receiving; a retry repeats its range. */
export function checkNoOverlap(
  part: MultipartPart,
  recorded: MultipartPart[],
  receiving: Iterable<MultipartPart>,
): void {
  for (const other of recorded) {
    if (other.index === part.index && (other.offset !== part.offset || other.size !== part.size)) {
      throw invalid(
        "MULTIPART_PART_CHANGED",
        `Part ${part.index} was received with offset ${other.offset} and partSize ${other.size}; a retry must repeat them.`,
      );
    }
    if (other.index !== part.index && overlaps(part, other)) throw overlap(part, other);
  }
  for (const other of receiving) {
    if (other.index === part.index) {
      throw conflict("MULTIPART_PART_IN_PROGRESS", `Part ${part.index} is being received by another request.`);
    }
    if (overlaps(part, other)) throw overlap(part, other);
  }
}

const overlap = (part: MultipartPart, other: MultipartPart) =>
  invalid(
    "MULTIPART_OVERLAP",
    `Part ${part.index} (${bytesOf(part)}) overlaps part ${other.index} (${bytesOf(other)}).`,
  );

/** Parts and the completion name the path the upload was started for. */
export function checkSamePath(upload: MultipartUpload, path: AssetPath): void {
  if (upload.pathKey !== path.key) {
    throw invalid(
      "MULTIPART_PATH_MISMATCH",
      `The multipart upload '${upload.uploadKey}' is for ${quote(upload.path)}, not ${quote(path.path)}.`,
    );
  }
}

/** Later parts must describe the same file as the first one did. */
export function checkSameUpload(upload: MultipartUpload, path: AssetPath, part: PartRequest): void {
  checkSamePath(upload, path);
  if (upload.totalSize !== part.totalSize || upload.totalParts !== part.totalParts) {
    throw invalid(
      "MULTIPART_MISMATCH",
      `Part ${part.index} says totalSize ${part.totalSize} and totalParts ${part.totalParts}, but the upload ` +
        `'${upload.uploadKey}' was started with totalSize ${upload.totalSize} and totalParts ${upload.totalParts}.`,
    );
  }
}

/** Every index must be there and the parts must tile [0, totalSize) (overlaps were refused on arrival). */
export function checkComplete(upload: MultipartUpload, parts: MultipartPart[]): void {
  const received = new Set(parts.map((part) => part.index));
  const missingCount = upload.totalParts - received.size;
  if (missingCount > 0) {
    const listed: number[] = [];
    for (let index = 0; index < upload.totalParts && listed.length < 10; index++) {
      if (!received.has(index)) listed.push(index);
    }
    const more = missingCount > listed.length ? ` and ${missingCount - listed.length} more` : "";
    throw invalid(
      "MULTIPART_INCOMPLETE",
      `The multipart upload '${upload.uploadKey}' lacks part ${listed.join(", ")}${more} of ${upload.totalParts} ` +
        "(indexes start at 0).",
    );
  }
  let end = 0;
  for (const part of [...parts, { index: -1, offset: upload.totalSize, size: 0 }]) {
    if (part.offset !== end) {
      throw invalid(
        "MULTIPART_INCOMPLETE",
        `The parts of the multipart upload '${upload.uploadKey}' leave bytes ${end}-${part.offset - 1} ` +
          `of ${upload.totalSize} uncovered.`,
      );
    }
    end = part.offset + part.size;
  }
}

/** The upload's row or spool went away (a sweep, a directory deletion) while a part was received. */
export const uploadRemoved = () =>
  notFound("MULTIPART_UPLOAD_REMOVED", "The multipart upload was removed while the part was received.");

/** A part's body carries more bytes than its partSize: refused before any byte past its range is kept. */
export const partTooLong = (part: MultipartPart) =>
  invalid("MULTIPART_PART_TOO_LONG", `Part ${part.index} is longer than its partSize (${part.size} bytes).`);

export const partTooShort = (part: MultipartPart, received: number) =>
  invalid("MULTIPART_PART_TOO_SHORT", `Part ${part.index} has ${received} bytes, but partSize is ${part.size}.`);

export const uploadNotFound = (uploadKey: string) =>
  notFound(
    "MULTIPART_UPLOAD_NOT_FOUND",
    `The multipart upload '${uploadKey}' was not found in this asset directory (unfinished uploads are ` +
      "removed after WHARF_MULTIPART_MAX_AGE_HOURS).",
  );

/** A part sent while the upload is being completed. */
export const uploadCompleting = (uploadKey: string) =>
  conflict("MULTIPART_COMPLETING", `The multipart upload '${uploadKey}' is being completed.`);

/** A completion sent while parts are being received or another completion runs. */
export const uploadBusy = (uploadKey: string) =>
  conflict(
    "MULTIPART_BUSY",
    `The multipart upload '${uploadKey}' is still receiving parts or being completed; retry later.`,
  );
