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
 * upack.json always wins over the request: a disagreeing name, group or version is refused, and
 * other metadata parameters are ignored for a complete .upack, whose bytes are served unchanged.
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
      const manifest = await readManifest(reader);
      checkIdentity(params, manifest);
      return { blob: uploaded, manifest, fileList: fileListOf(reader) };
    }
    const built = manifestFromParams(params);
    const blob = await deps.store(repackZip(reader, built, limits));
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

async function readManifest(reader: ZipReader): Promise<UpackManifest> {
  const text = await reader.readText("upack.json", MAX_MANIFEST_BYTES);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw invalid("INVALID_MANIFEST", "upack.json: the manifest is not valid JSON");
  }
  return validate(json, "upack.json");
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
  const manifest = validate(json, "package metadata");
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

/** The plain ZIP's entries under `package/`, upack.json first, streamed straight into the store. */
function repackZip(reader: ZipReader, built: BuiltManifest, limits: ArchiveLimits): Readable {
  const extra = { name: "upack.json", content: built.bytes };
  const budget = new EntryBudget(limits);
  checkRepackOptions({ prefix: CONTENT_PREFIX, extraEntries: [extra] }, budget);
  const zip = new yazl.ZipFile();
  const out = new PassThrough();
  const fail = (error: Error) => out.destroy(error);
  zip.on("error", fail);
  zip.addBuffer(extra.content, extra.name);
  for (const entry of reader.entries()) {
    const target = CONTENT_PREFIX + entry.name;
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
  const bytes = await readRange(deps.blobs, uploaded.sha256, 0, uploaded.size - 1);
  const manifest = parseVirtualManifest(new Uint8Array(bytes), { label: ".vpack" });
  checkIdentity(params, manifest);
  const zip = new yazl.ZipFile();
  zip.addBuffer(bytes, "upack.json");
  zip.end();
  return { blob: await deps.store(zip.outputStream as Readable), manifest };
}
