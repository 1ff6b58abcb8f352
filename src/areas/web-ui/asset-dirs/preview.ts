import type { BlobStore } from "../../../storage/blob-store.js";

/**
 * How a file page previews a file. Only what is known safe is shown in the page: text (read here,
 * capped, and escaped by the template) and raster images (an <img>: browsers run no script in
 * them). Active content (HTML, XML, SVG) is shown only in a sandboxed frame, served by the ui
 * download route with a sandbox CSP (ui-api.ts); anything else is offered for download only.
 */
export type PreviewKind = "text" | "image" | "sandboxed" | "none";

/** Text previews show at most this much of a file. */
export const TEXT_PREVIEW_BYTES = 64 * 1024;

const RASTER_IMAGES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const TEXT_TYPES = new Set([
  "application/json",
  "application/javascript",
  "application/x-sh",
  "application/x-yaml",
  "application/yaml",
  "application/toml",
  "application/sql",
]);
/** The API's own test for active content (endpoints/content-routes.ts): such types never render in the page. */
const ACTIVE = /html|xml|svg/i;

export function previewKind(contentType: string): PreviewKind {
  const type = (contentType.split(";")[0] ?? "").trim().toLowerCase();
  if (ACTIVE.test(type)) return "sandboxed";
  if (RASTER_IMAGES.has(type)) return "image";
  if (type.startsWith("text/") || TEXT_TYPES.has(type)) return "text";
  return "none";
}

export interface TextPreview {
  readonly text: string;
  /** The file is longer than what is shown. */
  readonly truncated: boolean;
}

/** The start of a text file, or undefined when it is not text after all (holds NUL bytes) or is gone. */
export async function readTextPreview(
  blobs: BlobStore,
  file: { readonly sha256: string; readonly size: number },
): Promise<TextPreview | undefined> {
  if (file.size === 0) return { text: "", truncated: false };
  const end = Math.min(file.size, TEXT_PREVIEW_BYTES) - 1;
  const stream = await blobs.open(file.sha256, { start: 0, end });
  if (stream === undefined) return undefined;
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  const bytes = Buffer.concat(chunks);
  if (bytes.includes(0)) return undefined;
  // A multi-byte character cut at the end shows as one replacement character: harmless.
  return { text: new TextDecoder("utf-8").decode(bytes), truncated: file.size > bytes.length };
}
