import { type AssetPath, ancestorPaths, childPath, parseAssetPath } from "../../../domain/asset-path.js";
import { DomainError, invalid } from "../../../domain/errors.js";
import { quote } from "../../../domain/upack-manifest.js";
import type { SourceEntry } from "../../../storage/archives.js";
import type { AssetItem } from "../repository.js";

/** One archive entry of an import, with the item it becomes. */
export interface PlannedEntry {
  /** The entry's name in the archive ("sub/" for directories). */
  readonly name: string;
  readonly path: AssetPath;
  readonly isDirectory: boolean;
  readonly size: number;
  /** A file that exists already and is kept (overwrite=false): its data is not read. */
  readonly skip: boolean;
}

export interface ImportPlan {
  /** Every entry, in archive order. */
  readonly entries: readonly PlannedEntry[];
  /** Paths of existing files the import replaces (overwrite=true). */
  readonly replacing: readonly string[];
}

/**
 * Decides what an import (docs/compat.md 4.5) does with each entry, refusing the whole archive before
 * anything is written: names that are not valid asset paths inside `folder`, two entries for one
 * item (paths compare case-insensitively), and a file where a folder is (or must be, as a parent)
 * or the other way round, within the archive or against `existing`, the items below `folder` now.
 */
export function planImport(
  folder: AssetPath,
  archive: readonly SourceEntry[],
  existing: readonly AssetItem[],
  overwrite: boolean,
): ImportPlan {
  const current = new Map(existing.map((item) => [item.key, item]));
  const planned = new Map<string, PlannedEntry>();
  const entries: PlannedEntry[] = [];
  const replacing: string[] = [];
  for (const entry of archive) {
    const path = targetPath(folder, entry.name);
    const clash = planned.get(path.key);
    if (clash !== undefined) {
      throw invalid(
        "ARCHIVE_DUPLICATE_ENTRY",
        `The archive entries ${JSON.stringify(clash.name)} and ${JSON.stringify(entry.name)} name the same item ` +
          "(asset paths compare case-insensitively).",
      );
    }
    const item = current.get(path.key);
    if (item !== undefined && item.isFolder !== entry.isDirectory) throw kindClash(entry.name, item);
    const exists = item !== undefined && !entry.isDirectory;
    if (exists && overwrite) replacing.push(item.path);
    const plannedEntry = {
      name: entry.name,
      path,
      isDirectory: entry.isDirectory,
      size: entry.size,
      skip: exists && !overwrite,
    };
    planned.set(path.key, plannedEntry);
    entries.push(plannedEntry);
  }
  // Once every entry is known: a file entry may come after the entries it would have to hold.
  for (const entry of entries) {
    for (const ancestor of ancestorPaths(entry.path)) {
      const asEntry = planned.get(ancestor.key);
      if (asEntry !== undefined && !asEntry.isDirectory) {
        throw invalid(
          "ARCHIVE_ITEM_CONFLICT",
          `The archive entry ${JSON.stringify(asEntry.name)} is a file, but ${JSON.stringify(entry.name)} needs it to be a folder.`,
        );
      }
      const item = current.get(ancestor.key);
      if (item !== undefined && !item.isFolder) throw kindClash(entry.name, item);
    }
  }
  return { entries, replacing };
}

/** Where an entry goes, checked as any asset path is (the archive reader checked the name already). */
function targetPath(folder: AssetPath, name: string): AssetPath {
  try {
    return parseAssetPath(childPath(folder, name));
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    throw invalid("ARCHIVE_UNSAFE_PATH", `The archive entry ${JSON.stringify(name)} is refused: ${error.message}`, {
      cause: error,
    });
  }
}

function kindClash(name: string, item: AssetItem): DomainError {
  const what = item.isFolder ? "a folder" : "a file";
  return invalid(
    "ARCHIVE_ITEM_CONFLICT",
    `The archive entry ${JSON.stringify(name)} cannot be imported: ${quote(item.path)} is ${what} in the asset directory.`,
  );
}
