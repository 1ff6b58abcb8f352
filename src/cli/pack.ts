import { createReadStream } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DomainError } from "../domain/errors.js";
import { hasCompressedExtension } from "../domain/compressed-content.js";
import { isPlainObject, manifestToJson, type UpackManifest, validateManifest } from "../domain/upack-manifest.js";
import { formatVersion } from "../domain/upack-version.js";
import { writeZipFile, zipMode } from "../storage/archives.js";
import { WHARF_VERSION } from "../version.js";
import { type CommandIo, type CommandLine, readStandardInput, runCommand, UsageError } from "./command.js";
import { formatBytes } from "./progress.js";
import { type FolderEntry, listFolder } from "./pack-folder.js";

/**
 * `wharf pack <folder>`: a universal package (docs/compat.md 1.1) from a folder, as the upack CLI and
 * pgutil make them: `upack.json` first, then the folder's files under `package/`. The manifest is
 * held to the rules the server applies on upload (domain/upack-manifest.ts), so that what packs
 * also uploads. Files are streamed into the zip one at a time: memory does not grow with the folder.
 */

export const PACK_USAGE = `Usage:
  wharf pack <folder> --name <name> --version <version> [options]

Makes a universal package (.upack): upack.json, and the folder's files under package/.
Symlinks are packed as what they point to, and refused when they point outside the folder.

Options:
  --name <name>               package name: letters, digits, '-', '.' and '_' (required)
  --version <version>         semantic version, e.g. 1.2.0 or 2.0.0-rc.1 (required)
  --group <group>             package group, e.g. acme/tools (default: none)
  --title <text>              title (at most 50 characters)
  --description <text>        description (Markdown)
  --icon <url>                icon: an http(s) URL or package://<path in the package>
  --project-url <url>         the project's http(s) URL
  --tags <a,b,...>            tags, comma-separated
  --dependencies <a,b,...>    dependencies, comma-separated: group/name:version-range
  --note <text>               why the package was made (upack.json createdReason)
  --manifest <file>           start from this upack.json (- reads standard input); options override it
  --no-audit                  leave out createdDate, createdUsing and createdBy
  --output <file>             where to write (default: <name>-<version>.upack here)`;

const OPTIONS = {
  name: { type: "string" },
  version: { type: "string" },
  group: { type: "string" },
  title: { type: "string" },
  description: { type: "string" },
  icon: { type: "string" },
  "project-url": { type: "string" },
  tags: { type: "string" },
  dependencies: { type: "string" },
  note: { type: "string" },
  manifest: { type: "string" },
  "no-audit": { type: "boolean" },
  output: { type: "string", short: "o" },
} as const;

type PackOptions = CommandLine<typeof OPTIONS>["values"];

/** Runs `wharf pack`; needs no database and no server. Exit code 0 written, 1 failed, 2 bad arguments. */
export function packCommand(args: string[], ctx: CommandIo): Promise<number> {
  return runCommand({ usage: PACK_USAGE, options: OPTIONS }, args, ctx, run);
}

async function run({ values, positionals }: CommandLine<typeof OPTIONS>, ctx: CommandIo): Promise<number> {
  const [folder, ...extra] = positionals;
  if (folder === undefined) throw new UsageError("the folder to pack is required");
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`);
  const manifest = checkedManifest(await manifestFields(values));
  const output = path.resolve(values.output ?? `${manifest.name}-${formatVersion(manifest.version)}.upack`);
  const written = await writePackage(folder, manifest, output);
  const id = manifest.group === "" ? manifest.name : `${manifest.group}/${manifest.name}`;
  ctx.out(
    `Wrote ${id} ${formatVersion(manifest.version)} to ${output} ` +
      `(${written.files} files, ${formatBytes(written.bytes)}).`,
  );
  return 0;
}

/** upack.json as the options give it: --manifest's object, then every option given over it. */
async function manifestFields(values: PackOptions): Promise<Record<string, unknown>> {
  const fields: Record<string, unknown> = values.manifest === undefined ? {} : await readManifestFile(values.manifest);
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined) fields[key] = value;
  };
  set("group", values.group);
  set("name", values.name);
  set("version", values.version);
  set("title", values.title);
  set("description", values.description);
  set("icon", values.icon);
  set("projectUrl", values["project-url"]);
  if (values.tags !== undefined) fields.tags = values.tags.split(",").map((tag) => tag.trim());
  // A comma-separated string: validateManifest splits it outside version-range brackets.
  set("dependencies", values.dependencies);
  set("createdReason", values.note);
  if (values["no-audit"] !== true) {
    // What upack pack records (docs/compat.md 1.5), in ISO 8601 (docs/compat.md 1.2).
    fields.createdDate = new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
    fields.createdUsing = `wharf/${WHARF_VERSION}`;
    const user = currentUserName();
    if (user !== undefined) fields.createdBy = user;
  }
  if (fields.name === undefined) throw new UsageError("--name is required");
  if (fields.version === undefined) throw new UsageError("--version is required");
  return fields;
}

async function readManifestFile(file: string): Promise<Record<string, unknown>> {
  const text = file === "-" ? await readStandardInput() : await fs.readFile(file, "utf8");
  let json: unknown;
  try {
    json = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (error) {
    throw new UsageError(`--manifest ${file} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!isPlainObject(json)) throw new UsageError(`--manifest ${file} must hold a JSON object`);
  return { ...json };
}

/** The server's own rules (validateManifest); a value they refuse is a usage error here. */
function checkedManifest(fields: Record<string, unknown>): UpackManifest {
  try {
    const manifest = validateManifest(fields);
    if (manifest.isVirtual) throw new UsageError("a manifest with 'contents' describes a virtual package (.vpack)");
    return manifest;
  } catch (error) {
    if (error instanceof DomainError) throw new UsageError(error.message);
    throw error;
  }
}

function currentUserName(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return undefined; // a container user without a passwd entry
  }
}

/**
 * Writes the package next to `output` and renames it into place once complete, so that a failed
 * pack leaves neither a partial file nor a changed old one. The output file is never packed into
 * itself when it lies inside the folder.
 */
async function writePackage(
  folder: string,
  manifest: UpackManifest,
  output: string,
): Promise<{ files: number; bytes: number }> {
  const partial = `${output}.${process.pid}.partial`;
  const skip = [output, partial, ...(await realPathOf(output))];
  const entries = await listFolder(folder, { skip });
  const upackJson = Buffer.from(`${JSON.stringify(manifestToJson(manifest), null, 2)}\n`);
  await fs.rm(partial, { force: true });
  await writeZipFile(partial, [{ name: "upack.json", content: upackJson }], async (zip) => {
    // writeZipFile fails on the zip's errors: a file that cannot be read becomes one.
    for (const entry of entries) addEntry(zip, entry, (error) => zip.emit("error", error));
  });
  await fs.rename(partial, output);
  return { files: entries.filter((entry) => entry.source !== undefined).length, bytes: (await fs.stat(output)).size };
}

async function realPathOf(file: string): Promise<string[]> {
  try {
    return [path.join(await fs.realpath(path.dirname(file)), path.basename(file))];
  } catch {
    return [];
  }
}

type Zip = Parameters<Parameters<typeof writeZipFile>[2]>[0];

/** One file, opened when yazl reaches it (one at a time), with its size declared so a file that changes fails. */
function addEntry(zip: Zip, entry: FolderEntry, fail: (error: Error) => void): void {
  const options = { mtime: entry.modified, ...zipMode(entry.source === undefined, entry.permissions) };
  if (entry.source === undefined) return zip.addEmptyDirectory(entry.name, options);
  const source = entry.source;
  // Deflating a file that is already compressed (a .zip, .jar, .png...) costs CPU and saves nothing.
  const compress = !hasCompressedExtension(entry.name);
  zip.addReadStreamLazy(entry.name, { ...options, size: entry.size, compress }, (ready) => {
    const stream = createReadStream(source);
    stream.on("error", fail); // yazl does not listen for errors on the streams it reads
    ready(null, stream);
  });
}
