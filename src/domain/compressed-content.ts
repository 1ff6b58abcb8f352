/**
 * Whether content is already compressed, so that compressing it again costs CPU and saves
 * nothing: the one rule for HTTP responses (http/compression.ts: never content-encoded) and for
 * archives Wharf writes (storage/archives.ts: zip entries stored, not deflated).
 *
 * Any one sign is enough: the file's name, its declared media type, or its first bytes. A name
 * or a type can be wrong (an asset uploaded as text/plain that is a .zip, a `.bin` that is
 * gzip), and the first bytes are not always at hand (a stream not yet read), so each is checked
 * when known. A false "compressed" only costs a few percent of size; a false "not compressed"
 * costs the CPU this rule exists to save, and over HTTP a wrong Content-Encoding.
 */
export interface ContentSigns {
  /** A file name or a URL path; only its last extension counts. */
  readonly name?: string;
  /** A media type, parameters allowed (`image/png`, `application/zip; x=1`). */
  readonly contentType?: string;
  /** The content's first bytes (16 are enough for every signature below). */
  readonly firstBytes?: Uint8Array;
}

/** Bytes of the start of a file that `hasCompressedSignature` looks at. */
export const SIGNATURE_BYTES = 16;

/**
 * Archives and packages (zip, gzip, bzip2, xz, zstd, 7z, rar and formats built on them: .upack,
 * .nupkg, .jar, .whl, .deb, .docx...), images other than SVG and BMP, audio, video, fonts and PDF.
 */
const COMPRESSED_EXTENSIONS = new Set(
  [
    ["zip", "upack", "vpack", "nupkg", "snupkg", "jar", "war", "ear", "aar", "apk", "whl", "egg", "gem", "crate"],
    ["vsix", "xpi", "nar", "cab", "msi", "msix", "appx", "deb", "rpm", "dmg", "epub"],
    ["docx", "xlsx", "pptx", "odt", "ods", "odp"],
    [
      "gz",
      "tgz",
      "gzip",
      "bz2",
      "tbz",
      "tbz2",
      "xz",
      "txz",
      "lz",
      "lzma",
      "lz4",
      "zst",
      "zstd",
      "tzst",
      "7z",
      "rar",
      "br",
    ],
    ["png", "jpg", "jpeg", "gif", "webp", "avif", "heic", "heif", "jxl", "svgz"],
    ["mp3", "m4a", "aac", "ogg", "oga", "opus", "flac", "wma"],
    ["mp4", "m4v", "mov", "mkv", "webm", "avi", "wmv", "flv", "mpg", "mpeg"],
    ["woff", "woff2", "pdf"],
  ].flat(),
);

/** Media types of compressed formats, besides image/*, audio/*, video/* and `+zip`/`+gzip` suffixes. */
const COMPRESSED_TYPES = new Set([
  "application/zip",
  "application/x-zip-compressed",
  "application/gzip",
  "application/x-gzip",
  "application/x-bzip2",
  "application/x-xz",
  "application/zstd",
  "application/x-7z-compressed",
  "application/vnd.rar",
  "application/x-rar-compressed",
  "application/x-compress",
  "application/x-lzip",
  "application/java-archive",
  "application/vnd.android.package-archive",
  "application/x-apple-diskimage",
  "application/vnd.ms-cab-compressed",
  "application/pdf",
  "font/woff",
  "font/woff2",
]);

/** Uncompressed media among image/*, audio/* and video/*. */
const UNCOMPRESSED_MEDIA = new Set(["image/svg+xml", "image/bmp", "image/x-ms-bmp", "audio/wav", "audio/x-wav"]);

/** Leading bytes of compressed formats, at offset 0 unless said otherwise. */
const SIGNATURES: ReadonlyArray<{ readonly bytes: readonly number[]; readonly at?: number }> = [
  { bytes: [0x1f, 0x8b] }, // gzip (.gz, .tgz)
  { bytes: [0x50, 0x4b, 0x03, 0x04] }, // zip (.upack, .nupkg, .jar, .docx...)
  { bytes: [0x50, 0x4b, 0x05, 0x06] }, // empty zip
  { bytes: [0x50, 0x4b, 0x07, 0x08] }, // spanned zip
  { bytes: [0x42, 0x5a, 0x68] }, // bzip2 "BZh"
  { bytes: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00] }, // xz
  { bytes: [0x28, 0xb5, 0x2f, 0xfd] }, // zstd
  { bytes: [0x04, 0x22, 0x4d, 0x18] }, // lz4 frame
  { bytes: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c] }, // 7z
  { bytes: [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07] }, // rar "Rar!"
  { bytes: [0x89, 0x50, 0x4e, 0x47] }, // png
  { bytes: [0xff, 0xd8, 0xff] }, // jpeg
  { bytes: [0x47, 0x49, 0x46, 0x38] }, // gif "GIF8"
  { bytes: [0x57, 0x45, 0x42, 0x50], at: 8 }, // webp: "RIFF", size, "WEBP"
  { bytes: [0x66, 0x74, 0x79, 0x70], at: 4 }, // "ftyp": mp4, mov, avif, heic
  { bytes: [0x1a, 0x45, 0xdf, 0xa3] }, // matroska, webm
  { bytes: [0x77, 0x4f, 0x46, 0x46] }, // woff "wOFF"
  { bytes: [0x77, 0x4f, 0x46, 0x32] }, // woff2 "wOF2"
  { bytes: [0x25, 0x50, 0x44, 0x46] }, // pdf "%PDF"
];

export function isCompressedContent(signs: ContentSigns): boolean {
  return (
    (signs.name !== undefined && hasCompressedExtension(signs.name)) ||
    (signs.contentType !== undefined && isCompressedType(signs.contentType)) ||
    (signs.firstBytes !== undefined && hasCompressedSignature(signs.firstBytes))
  );
}

export function hasCompressedExtension(name: string): boolean {
  const base = name.slice(name.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot >= 0 && COMPRESSED_EXTENSIONS.has(base.slice(dot + 1).toLowerCase());
}

export function isCompressedType(contentType: string): boolean {
  const type = contentType.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  if (COMPRESSED_TYPES.has(type) || type.endsWith("+zip") || type.endsWith("+gzip")) return true;
  const top = type.slice(0, type.indexOf("/") + 1);
  return (top === "image/" || top === "audio/" || top === "video/") && !UNCOMPRESSED_MEDIA.has(type);
}

export function hasCompressedSignature(bytes: Uint8Array): boolean {
  return SIGNATURES.some(({ bytes: signature, at = 0 }) => signature.every((byte, i) => bytes[at + i] === byte));
}
