import { PassThrough, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import yazl from "yazl";
import { invalid } from "../../domain/errors.js";
import { isPlainObject, manifestToJson, validateManifest } from "../../domain/upack-manifest.js";
import type { UpackVersion } from "../../domain/upack-version.js";
import { addZipEntry, isCompressedEntry } from "../../storage/archives.js";
import type { ZipReader } from "../../storage/zip.js";

/**
 * The repackaged file (docs/compat.md 1.2, 1.5): the original's entries as they are, but for a new
 * `upack.json` naming the new version, with one more `repackageHistory` entry naming the original
 * (`group/name:version:sha1`, as upack's repack writes it) and who made it, when and why.
 */

/** The original, as the history entry names it. */
export interface RepackagedOriginal {
  readonly group: string;
  readonly name: string;
  readonly version: string;
  readonly sha1: string;
  readonly sha256: string;
  readonly feed: string;
}

export interface RepackageEntry {
  readonly original: RepackagedOriginal;
  readonly date: Date;
  readonly by: string;
  /** The tool, user-agent like (`Wharf/0.1.0`). */
  readonly using: string;
  readonly reason?: string | undefined;
}

const MANIFEST = "upack.json";

/** The new upack.json: every property kept, the version replaced, the history extended. */
export function repackagedManifest(originalText: string, newVersion: UpackVersion, entry: RepackageEntry): Buffer {
  let json: unknown;
  try {
    json = JSON.parse(originalText);
  } catch (error) {
    throw invalid("INVALID_MANIFEST", "upack.json: the stored manifest is not JSON.", { cause: error });
  }
  if (!isPlainObject(json)) throw invalid("INVALID_MANIFEST", "upack.json: the manifest must be a JSON object.");
  const manifest = validateManifest(json);
  const { original } = entry;
  const history = {
    // `group/name:version:sha1`, as upack's repack writes it (docs/compat.md 1.3, 1.5).
    id: `${original.group === "" ? "" : `${original.group}/`}${original.name}:${original.version}:${original.sha1}`,
    date: entry.date.toISOString(),
    ...(entry.reason === undefined ? {} : { reason: entry.reason }),
    using: entry.using,
    by: entry.by,
    // Custom properties are `_`-prefixed (docs/compat.md 1.2): the original's SHA-256 and feed.
    _sha256: original.sha256,
    _feed: original.feed,
  };
  const next = { ...manifest, version: newVersion, repackageHistory: [...(manifest.repackageHistory ?? []), history] };
  return Buffer.from(`${JSON.stringify(manifestToJson(next), null, 2)}\n`);
}

/**
 * Streams the new package: `manifest` first (readers that stream find it without seeking), then
 * every other entry of `reader` with its name, time and mode, read one at a time (never the whole
 * package in memory), already-compressed files stored rather than deflated again. The stream owns
 * `reader` and closes it when it ends, fails or is destroyed.
 */
export function zipWithManifest(reader: ZipReader, manifest: Buffer, modified: Date): Readable {
  const zip = new yazl.ZipFile();
  const out = new PassThrough();
  const fail = (error: Error) => out.destroy(error);
  zip.on("error", fail);
  zip.addBuffer(manifest, MANIFEST, { mtime: modified });
  void (async () => {
    for (const entry of reader.entries()) {
      if (entry.name === MANIFEST) continue;
      // By its name alone: a ZipReader offers no cheap look at an entry's first bytes.
      const compress = entry.isDirectory || !(await isCompressedEntry({}, entry, entry.name));
      addZipEntry(zip, reader, entry, entry.name, fail, compress);
    }
    zip.end();
  })().catch(fail);
  pipeline(zip.outputStream, out).catch(() => undefined); // a failure is already `out`'s error
  out.once("close", () => void reader.close());
  return out;
}
