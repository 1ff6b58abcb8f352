import { randomUUID } from "node:crypto";
import { createReadStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import yazl from "yazl";
import { DomainError, invalid } from "../../../domain/errors.js";
import { manifestToJson, quote, validateManifest, type UpackManifest } from "../../../domain/upack-manifest.js";
import { canonicalVersion, formatVersion } from "../../../domain/upack-version.js";
import { parseVirtualManifest } from "../../../domain/vpack.js";
import {
  addZipEntry,
  type ArchiveLimits,
  checkRepackOptions,
  UPLOAD_ARCHIVE_LIMITS,
  EntryBudget,
} from "../../../storage/archives.js";
import type { BlobInfo, BlobStore } from "../../../storage/blob-store.js";
import { tgzToZipFile } from "../../../storage/tgz.js";
import { openZipBlob, type ZipReader } from "../../../storage/zip.js";
import type { UploadParams } from "./upload-params.js";

/** What the stored upload turned out to be: the package file to record, with its manifest and entries. */
export interface PackageFile {
  readonly blob: BlobInfo;
  readonly manifest: UpackManifest;
  /** Every archive entry, from the central directory (migration 0004 `file_list`). */
  readonly fileList: ReadonlyArray<{ name: string; size: number; date: string }>;
}

export interface PackageFileDeps {
  readonly blobs: BlobStore;
  /** Where a TGZ is converted before its ZIP is stored (same filesystem as the data, removed after). */
  readonly tempDir: string;
  /** What uploaded archives are held to; UPLOAD_ARCHIVE_LIMITS when not given. */
  readonly limits?: ArchiveLimits;
  /** Stores a file this step makes, held for the caller, who releases it later (BlobKeeper.put). */
  readonly store: (source: Readable) => Promise<BlobInfo>;
}

/** upack.json is read into memory; real manifests are a few KiB, long Markdown descriptions included. */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const CONTENT_PREFIX = "package/";

/**
 * Turns an upload already stored as a blob into a package file (docs/compat.md 2.7), reading only what
 * it needs: a ZIP's central directory and upack.json through ranged reads, never the whole file.
 * - a ZIP with upack.json is the package as it is: its bytes (and SHA-1) are what gets served;
 * - a ZIP without one, or a gzipped TAR, becomes a new package built from the request's metadata
 *   with the content under `package/` (new bytes, so a second blob);
 * - a JSON text with `contents` is a plain .vpack (docs/compat.md 1.6), wrapped as upack.json in a ZIP
 *   the way InedoCore does before uploading.
 * A package file's identity is its upack.json's: a disagreeing name, group or version is refused.
 * Other metadata parameters add to it (docs/seed-api.md A: "if it is already a package file,
 * additional metadata may be given in the query string"; also a form's fields or a JSON body's
 * properties): a property upack.json lacks is written into a new upack.json (new bytes), one it has
 * with another value is refused (400, as a parameter given twice). Without such additions a
 * complete .upack is stored byte for byte.
 */
export async function packageFromUpload(
  deps: PackageFileDeps,
  uploaded: BlobInfo,
  params: UploadParams,
): Promise<PackageFile> {
  const limits = deps.limits ?? UPLOAD_ARCHIVE_LIMITS;
  const format = await sniff(deps.blobs, uploaded);
  if (format === "gzip") return withFileList(deps, await tgzToZip(deps, uploaded, manifestFromParams(params)));
  if (format === "json") return withFileList(deps, await vpackToZip(deps, uploaded, params));
  const reader = await openZipBlob(deps.blobs, uploaded.sha256, limits);
  try {
    // The bytes are served as they are: a client that extracts by local headers must find what
    // the central directory (checked when opening) says. A plain ZIP is checked too: same archive.
    await reader.verifyLocalHeaders();
    if (reader.findEntry("upack.json") !== undefined) {
      const json = await readManifestJson(reader);
      const manifest = validate(json, "upack.json");
      checkIdentity(params, manifest);
      const merged = withAdditionalMetadata(json, params);
      if (merged === undefined) return { blob: uploaded, manifest, fileList: fileListOf(reader) };
      const built = builtManifest(validate(merged, "upack.json"));
      const blob = await deps.store(
        rewriteZip(reader, built, limits, (name) => (name === "upack.json" ? undefined : name)),
      );
      return withFileList(deps, { blob, manifest: built.manifest });
    }
    const built = manifestFromParams(params);
    const blob = await deps.store(rewriteZip(reader, built, limits, (name) => CONTENT_PREFIX + name));
    return withFileList(deps, { blob, manifest: built.manifest });
  } finally {
    await reader.close();
  }
}

async function withFileList(
  deps: PackageFileDeps,
  converted: { blob: BlobInfo; manifest: UpackManifest },
): Promise<PackageFile> {
  const reader = await openZipBlob(deps.blobs, converted.blob.sha256, deps.limits ?? UPLOAD_ARCHIVE_LIMITS);
  try {
    return { ...converted, fileList: fileListOf(reader) };
  } finally {
    await reader.close();
  }
}

async function sniff(blobs: BlobStore, blob: BlobInfo): Promise<"zip" | "gzip" | "json"> {
  if (blob.size === 0) throw invalid("EMPTY_UPLOAD", "The upload is empty.");
  const head = await readRange(blobs, blob.sha256, 0, Math.min(blob.size, 64) - 1);
  if (head[0] === 0x50 && head[1] === 0x4b) return "zip";
  if (head[0] === 0x1f && head[1] === 0x8b) return "gzip";
  if (/^(\uFEFF)?\s*\{/.test(head.toString("utf8"))) return "json";
  throw invalid("ARCHIVE_INVALID", "The upload is not a ZIP (.upack), a gzipped TAR or a .vpack JSON file.");
}

async function readRange(blobs: BlobStore, sha256: string, start: number, end: number): Promise<Buffer> {
  const stream = await blobs.open(sha256, { start, end });
  if (stream === undefined) throw new Error(`blob ${sha256} vanished while held`);
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

async function readManifestJson(reader: ZipReader): Promise<unknown> {
  const text = await reader.readText("upack.json", MAX_MANIFEST_BYTES);
  try {
    return JSON.parse(text);
  } catch {
    throw invalid("INVALID_MANIFEST", "upack.json: the manifest is not valid JSON");
  }
}

const IDENTITY_PARAMS = new Set(["group", "name", "version"]);
const LIST_PARAMS = new Set(["tags", "dependencies"]);

/** A list as query strings and forms carry it (comma-separated) or as JSON does (an array), for comparing and storing. */
function listOf(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  return String(value)
    .split(",")
    .map((item) => item.trim())
    .filter(Boolean);
}

function sameValue(name: string, inFile: unknown, given: unknown): boolean {
  if (LIST_PARAMS.has(name)) return JSON.stringify(listOf(inFile)) === JSON.stringify(listOf(given));
  if (typeof given === "string" && (typeof inFile === "number" || typeof inFile === "boolean")) {
    return String(inFile) === given;
  }
  return JSON.stringify(inFile) === JSON.stringify(given);
}

/**
 * The package's upack.json with the request's metadata added, or undefined when the request adds
 * nothing (no parameter beyond the identity, or only values upack.json already has). Names match
 * case-insensitively (`Title=` is `title`); a value that differs from upack.json's is refused.
 */
function withAdditionalMetadata(json: unknown, params: UploadParams): Record<string, unknown> | undefined {
  if (!isRecord(json)) return undefined;
  const additions: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(params.metadata)) {
    if (IDENTITY_PARAMS.has(name.toLowerCase())) continue;
    const inFile = Object.keys(json).find((key) => key.toLowerCase() === name.toLowerCase());
    if (inFile === undefined) {
      additions[name] = name === "tags" ? listOf(value) : value;
      continue;
    }
    if (sameValue(name, json[inFile], value)) continue;
    const shown = typeof value === "string" ? value : JSON.stringify(value);
    throw invalid(
      "CONFLICTING_PARAMETERS",
      `The parameter ${quote(name)} was given as ${quote(shown ?? "")} but the package's upack.json has ` +
        `${quote(JSON.stringify(json[inFile]) ?? "")}; leave it out, or give the same value.`,
    );
  }
  return Object.keys(additions).length === 0 ? undefined : { ...json, ...additions };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A manifest with `contents` is a virtual package (docs/compat.md 1.6): its entries are checked too. */
function validate(json: unknown, label: string): UpackManifest {
  const virtual = typeof json === "object" && json !== null && ("contents" in json || "metaContents" in json);
  return virtual ? parseVirtualManifest(json, { label }) : validateManifest(json, { label });
}

/** The request may name the package too; it must then be the one upack.json names (case-insensitively). */
function checkIdentity(params: UploadParams, manifest: UpackManifest): void {
  const version = formatVersion(manifest.version);
  const differs =
    (params.name !== undefined && params.name.toLowerCase() !== manifest.name.toLowerCase()) ||
    (params.group !== undefined && params.group.toLowerCase() !== manifest.group.toLowerCase()) ||
    (params.version !== undefined &&
      (canonicalVersion(params.version) ?? params.version).toLowerCase() !== version.toLowerCase());
  if (!differs) return;
  const asked = `${params.group ?? manifest.group}/${params.name ?? manifest.name} ${params.version ?? version}`;
  throw invalid(
    "PACKAGE_IDENTITY_MISMATCH",
    `The request names the package ${quote(asked.replace(/^\//, ""))} but its upack.json names ` +
      `${quote(`${manifest.group}/${manifest.name} ${version}`.replace(/^\//, ""))}.`,
  );
}

/** A manifest made from the request, with the upack.json bytes that will hold it. */
interface BuiltManifest {
  readonly manifest: UpackManifest;
  readonly bytes: Buffer;
}

/**
 * upack.json for a plain ZIP or TGZ, from the request's parameters (docs/compat.md 2.7), refused (413)
 * when it would be larger than an uploaded upack.json may be: checked here, before any conversion.
 */
function manifestFromParams(params: UploadParams): BuiltManifest {
  if (params.name === undefined || params.version === undefined) {
    throw invalid(
      "MANIFEST_NOT_FOUND",
      "upack.json not found in package; to upload a plain ZIP or TGZ, give at least 'name' and 'version'.",
    );
  }
  const json: Record<string, unknown> = { ...params.metadata };
  // Query strings and forms carry lists as comma-separated text; dependencies split themselves.
  if (typeof json.tags === "string")
    json.tags = json.tags
      .split(",")
      .map((tag) => tag.trim())
      .filter(Boolean);
  return builtManifest(validate(json, "package metadata"));
}

function builtManifest(manifest: UpackManifest): BuiltManifest {
  return { manifest, bytes: manifestBytes(manifest) };
}

function fileListOf(reader: ZipReader): PackageFile["fileList"] {
  return reader.entries().map((entry) => ({ name: entry.name, size: entry.size, date: entry.modified.toISOString() }));
}

/** upack.json as written into a converted package; too_large past the limit an uploaded one has. */
function manifestBytes(manifest: UpackManifest): Buffer {
  const bytes = Buffer.from(JSON.stringify(manifestToJson(manifest), null, 2), "utf8");
  if (bytes.length > MAX_MANIFEST_BYTES) {
    throw new DomainError(
      "too_large",
      "MANIFEST_TOO_LARGE",
      `package metadata: the upack.json made from it would be larger than ${MAX_MANIFEST_BYTES} bytes.`,
    );
  }
  return bytes;
}

/**
 * A new ZIP, streamed straight into the store: `built`'s upack.json first, then the entries of
 * `reader` at the path `pathOf` gives (undefined leaves one out): under `package/` for a plain ZIP,
 * as they were (but the old upack.json) for a package whose metadata the request added to.
 */
function rewriteZip(
  reader: ZipReader,
  built: BuiltManifest,
  limits: ArchiveLimits,
  pathOf: (name: string) => string | undefined,
): Readable {
  const extra = { name: "upack.json", content: built.bytes };
  const budget = new EntryBudget(limits);
  checkRepackOptions({ prefix: "", extraEntries: [extra] }, budget);
  const zip = new yazl.ZipFile();
  const out = new PassThrough();
  const fail = (error: Error) => out.destroy(error);
  zip.on("error", fail);
  zip.addBuffer(extra.content, extra.name);
  for (const entry of reader.entries()) {
    const target = pathOf(entry.name);
    if (target === undefined) continue;
    budget.add(target, entry.size);
    addZipEntry(zip, reader, entry, target, fail);
  }
  zip.end();
  pipeline(zip.outputStream, out).catch(fail);
  return out;
}

async function tgzToZip(
  deps: PackageFileDeps,
  uploaded: BlobInfo,
  built: BuiltManifest,
): Promise<{ blob: BlobInfo; manifest: UpackManifest }> {
  await mkdir(deps.tempDir, { recursive: true });
  const temp = path.join(deps.tempDir, `upack-${randomUUID()}.zip`);
  try {
    const source = await deps.blobs.open(uploaded.sha256);
    if (source === undefined) throw new Error(`blob ${uploaded.sha256} vanished while held`);
    const options = { prefix: CONTENT_PREFIX, extraEntries: [{ name: "upack.json", content: built.bytes }] };
    await tgzToZipFile(source, temp, deps.limits ?? UPLOAD_ARCHIVE_LIMITS, options, uploaded.size);
    return { blob: await deps.store(createReadStream(temp)), manifest: built.manifest };
  } finally {
    await rm(temp, { force: true });
  }
}

async function vpackToZip(
  deps: PackageFileDeps,
  uploaded: BlobInfo,
  params: UploadParams,
): Promise<{ blob: BlobInfo; manifest: UpackManifest }> {
  if (uploaded.size > MAX_MANIFEST_BYTES) {
    throw invalid("INVALID_MANIFEST", `.vpack: a virtual package manifest must be under ${MAX_MANIFEST_BYTES} bytes`);
  }
  let bytes = await readRange(deps.blobs, uploaded.sha256, 0, uploaded.size - 1);
  let manifest = parseVirtualManifest(new Uint8Array(bytes), { label: ".vpack" });
  checkIdentity(params, manifest);
  const merged = withAdditionalMetadata(JSON.parse(bytes.toString("utf8").replace(/^\uFEFF/, "")), params);
  if (merged !== undefined) {
    bytes = Buffer.from(JSON.stringify(merged, null, 2), "utf8");
    manifest = parseVirtualManifest(new Uint8Array(bytes), { label: ".vpack" });
  }
  const zip = new yazl.ZipFile();
  zip.addBuffer(bytes, "upack.json");
  zip.end();
  return { blob: await deps.store(zip.outputStream as Readable), manifest };
}
