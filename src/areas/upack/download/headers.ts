/**
 * Response headers of universal feed downloads (docs/seed-api.md area A; docs/compat.md 2.4, 2.5, 2.6).
 */

/** `Content-Type` of each download kind (docs/seed-api.md "Download package"). */
export const PACKAGE_CONTENT_TYPE = "application/zip";
export const TGZ_CONTENT_TYPE = "application/x-compressed";
export const VPACK_CONTENT_TYPE = "application/json";

/** How a package downloads: the stored file, or its `package/` contents as a new archive. */
export type DownloadFormat = "upack" | "zip" | "tgz";

const EXTENSION_TYPES: Readonly<Record<string, string>> = {
  txt: "text/plain",
  log: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  xml: "application/xml",
  yaml: "application/yaml",
  yml: "application/yaml",
  html: "text/html",
  htm: "text/html",
  css: "text/css",
  js: "text/javascript",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  ico: "image/x-icon",
  webp: "image/webp",
  pdf: "application/pdf",
  zip: "application/zip",
  upack: "application/zip",
  vpack: "application/json",
  tgz: "application/x-compressed",
  gz: "application/gzip",
  tar: "application/x-tar",
  ps1: "text/plain",
  sh: "text/x-shellscript",
  nupkg: "application/zip",
  jar: "application/java-archive",
};

/**
 * Content-Type from a file's extension ("reflects the file type", docs/seed-api.md download-file).
 * Active types (HTML, SVG) are harmless here: every download is an attachment and is sent with
 * `X-Content-Type-Options: nosniff`.
 */
export function contentTypeFor(fileName: string): string {
  const dot = fileName.lastIndexOf(".");
  const extension = dot < 0 ? "" : fileName.slice(dot + 1).toLowerCase();
  return EXTENSION_TYPES[extension] ?? "application/octet-stream";
}

// packages-api reads it from here; the one definition is shared with asset-directory exports.
export { attachment } from "../../../http/content-disposition.js";

/** `<name>.<version>.upack|zip|tgz|vpack` (docs/seed-api.md "Download package"; docs/compat.md 1.6). */
export function packageFileName(name: string, version: string, extension: DownloadFormat | "vpack"): string {
  return `${name}.${version}.${extension}`;
}

export function contentTypeOf(format: DownloadFormat): string {
  return format === "tgz" ? TGZ_CONTENT_TYPE : PACKAGE_CONTENT_TYPE;
}
