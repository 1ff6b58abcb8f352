import type { Stats } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { invalid } from "../domain/errors.js";
import { checkEntryName } from "../storage/archives.js";

/**
 * What `wharf pack` puts under `package/`: every file and empty directory of a folder, found
 * before any byte is written, so that a refused entry (a symlink leaving the folder, a socket, a
 * name no reader would accept) stops the pack before it starts. Only names and sizes are kept;
 * the contents are read later, one file at a time.
 */

export interface FolderEntry {
  /** The name inside the package, `package/...`, '/'-separated; directories end with '/'. */
  readonly name: string;
  /** The file to read (a symlink already resolved); undefined for a directory. */
  readonly source: string | undefined;
  readonly size: number;
  readonly modified: Date;
  readonly permissions: number;
}

export interface ListFolderOptions {
  /** Files never packed, as absolute resolved paths (the output file being written into the folder). */
  readonly skip?: readonly string[];
}

/**
 * Lists `folder` recursively in name order. A symlink is followed when its target is inside the
 * folder (it is packed as the file or directory it points to) and refused when it points outside,
 * so that a link to `/etc` or `~/.ssh` can never leak into a published package. Throws an invalid
 * DomainError naming the offending path.
 */
export async function listFolder(folder: string, options: ListFolderOptions = {}): Promise<FolderEntry[]> {
  const fail = (code: string, message: string) => invalid(code, message);
  let root: string;
  try {
    root = await fs.realpath(folder);
  } catch {
    throw fail("PACK_FOLDER_NOT_FOUND", `The folder ${JSON.stringify(folder)} does not exist.`);
  }
  if (!(await fs.stat(root)).isDirectory()) {
    throw fail("PACK_NOT_A_FOLDER", `${JSON.stringify(folder)} is not a folder.`);
  }
  const skip = new Set(options.skip ?? []);
  const inside = (target: string) => target === root || target.startsWith(root + path.sep);
  const entries: FolderEntry[] = [];

  // `ancestors`: the real paths of the directories being walked, so that a link to one of them
  // (a loop) is refused instead of packed forever.
  async function walk(directory: string, prefix: string, ancestors: readonly string[]): Promise<void> {
    const names = (await fs.readdir(directory)).sort();
    if (names.length === 0 && prefix !== "") {
      const stats = await fs.stat(directory);
      entries.push(entryOf(`package/${prefix}`, undefined, stats));
    }
    for (const name of names) {
      const shown = `${prefix}${name}`;
      const full = path.join(directory, name);
      let real = full;
      let stats = await fs.lstat(full);
      if (stats.isSymbolicLink()) {
        try {
          real = await fs.realpath(full);
        } catch {
          throw fail("PACK_BROKEN_SYMLINK", `The symlink ${JSON.stringify(shown)} points to nothing.`);
        }
        if (!inside(real)) {
          throw fail(
            "PACK_SYMLINK_ESCAPES",
            `The symlink ${JSON.stringify(shown)} points outside the folder (to ${real}); refusing to pack it.`,
          );
        }
        stats = await fs.stat(real);
      }
      if (skip.has(real)) continue;
      if (stats.isDirectory()) {
        if (ancestors.includes(real)) {
          throw fail("PACK_SYMLINK_LOOP", `The symlink ${JSON.stringify(shown)} loops back to a folder above it.`);
        }
        await walk(real, `${shown}/`, [...ancestors, real]);
      } else if (stats.isFile()) {
        entries.push(entryOf(`package/${shown}`, real, stats));
      } else {
        throw fail(
          "PACK_SPECIAL_FILE",
          `${JSON.stringify(shown)} is neither a file nor a folder; refusing to pack it.`,
        );
      }
    }
  }

  await walk(root, "", [root]);
  return entries;
}

function entryOf(name: string, source: string | undefined, stats: Stats): FolderEntry {
  return {
    name: checkEntryName(name),
    source,
    size: source === undefined ? 0 : stats.size,
    modified: stats.mtime,
    permissions: stats.mode & 0o777,
  };
}
