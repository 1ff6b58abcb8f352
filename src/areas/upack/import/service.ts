import { constants, type Stats } from "node:fs";
import { type FileHandle, lstat, open, realpath, unlink } from "node:fs/promises";
import path from "node:path";
import { parseAssetPath } from "../../../domain/asset-path.js";
import { DomainError, invalid, notFound } from "../../../domain/errors.js";
import type { Principal } from "../../../domain/principal.js";
import { quote } from "../../../domain/upack-manifest.js";
import type { AssetService } from "../../endpoints/index.js";
import type { UpackWriteService, UploadResult } from "../write/upload-service.js";
import { isInside } from "../../../storage/path-containment.js";

/**
 * Imports into a universal feed (docs/compat.md 2.9) from the two places a package file can already be:
 * an asset directory (its blob is shared: the version references it, no byte is copied) or a
 * folder on the server that an administrator opened for it (WHARF_IMPORT_ROOT). Validation and
 * storage are the upload's (write/upload-service.ts `importPackage`); this only finds the file and, when
 * asked, deletes it once the version is committed. Permissions are the caller's to check.
 */
export interface UpackImportService {
  fromAssetDirectory(command: AssetImport): Promise<ImportOutcome>;
  fromServerPath(command: ServerPathImport): Promise<ImportOutcome>;
}

interface ImportTarget {
  readonly feedId: number;
  readonly principal: Principal;
  /** Whether the caller may replace an existing version (Feeds_OverwritePackage). */
  readonly canOverwrite: () => Promise<boolean>;
  readonly deleteFromSource: boolean;
}

export interface AssetImport extends ImportTarget {
  /** The asset directory's name or alternate name; 404 unless it is one. */
  readonly directory: string;
  /** The file's path in it; backslashes are separators (the docs write `myFolder\example-lib.upack`). */
  readonly from: string;
}

export interface ServerPathImport extends ImportTarget {
  /**
   * Absolute, or relative to the import root; it must resolve (symbolic links too) inside the
   * import root. Through a link, the file read, and deleted with `deleteFromSource`, is its target.
   */
  readonly from: string;
}

export interface ImportOutcome {
  readonly result: UploadResult;
  /**
   * Set when the version was committed but its source could not be deleted: the import stands
   * (a retry would only meet the version it made), the caller logs this.
   */
  readonly sourceDeleteError?: unknown;
}

export interface UpackImportServiceDeps {
  readonly write: UpackWriteService;
  /** Absent: imports from asset directories answer 404, as for an unknown directory. */
  readonly assets: AssetService | undefined;
  /** Absolute; undefined: imports from server paths are refused. */
  readonly importRoot: string | undefined;
}

const outsideRoot = () =>
  new DomainError(
    "forbidden",
    "IMPORT_PATH_OUTSIDE_ROOT",
    "The path is outside the server's import folder; only files inside it can be imported.",
  );
const serverFileNotFound = () =>
  notFound("IMPORT_FILE_NOT_FOUND", "The file to import was not found in the server's import folder.");

export function createUpackImportService(deps: UpackImportServiceDeps): UpackImportService {
  const { write } = deps;

  return {
    async fromAssetDirectory(command) {
      const { assets } = deps;
      if (assets === undefined) throw notFound("ASSET_DIRECTORY_NOT_FOUND", "asset directory not found");
      const directory = await assets.directory(command.directory);
      // Leading separators are lenience: the path is inside the directory whatever way it is written.
      const assetPath = parseAssetPath(command.from.replaceAll("\\", "/").replace(/^\/+/, ""));
      const item = await assets.item(directory, assetPath);
      const { file } = item;
      if (file === undefined) {
        throw invalid("ASSET_IS_FOLDER", `${quote(item.path)} is a folder; only a package file can be imported.`);
      }
      const result = await write.importPackage({
        feedId: command.feedId,
        principal: command.principal,
        canOverwrite: command.canOverwrite,
        source: {
          blob: {
            sha256: file.sha256,
            sha1: file.sha1,
            size: file.size,
            ...(file.md5 ? { md5: file.md5 } : {}),
            ...(file.sha512 ? { sha512: file.sha512 } : {}),
          },
        },
      });
      if (!command.deleteFromSource) return { result };
      try {
        // Only the file that was imported: content uploaded to the path meanwhile is not the source.
        const current = await assets.item(directory, assetPath).catch(() => undefined);
        if (current?.file?.sha256 === file.sha256) {
          // The blob survives: the new version references it (blob_references).
          await assets.delete(directory, assetPath, { recursive: false, filesOnly: true });
        }
        return { result };
      } catch (error) {
        return { result, sourceDeleteError: error };
      }
    },

    async fromServerPath(command) {
      const source = await openServerFile(deps.importRoot, command.from);
      let result: UploadResult;
      try {
        result = await write.importPackage({
          feedId: command.feedId,
          principal: command.principal,
          canOverwrite: command.canOverwrite,
          source: { open: () => source.handle.createReadStream({ start: 0, autoClose: false }) },
        });
      } finally {
        await source.handle.close();
      }
      if (!command.deleteFromSource) return { result };
      try {
        await deleteIfUnchanged(source);
        return { result };
      } catch (error) {
        return { result, sourceDeleteError: error };
      }
    },
  };
}

interface ServerFile {
  /** The resolved path: no symbolic link in it, inside the real import root. */
  readonly realPath: string;
  readonly handle: FileHandle;
  readonly stats: Stats;
}

/**
 * Opens `from` for reading if, and only if, it is a regular file inside the import root. The path
 * is checked as written (so `..` is refused without probing the filesystem outside), then resolved
 * with realpath and checked again (so a symbolic link cannot lead outside), then opened without
 * following links and compared with what was checked.
 */
async function openServerFile(root: string | undefined, from: string): Promise<ServerFile> {
  if (root === undefined) {
    throw invalid(
      "IMPORT_FROM_PATH_DISABLED",
      "Imports from server paths are not enabled; an administrator must set WHARF_IMPORT_ROOT, " +
        "or give 'assetDirectory' to import from an asset directory.",
    );
  }
  if (from.includes("\0")) throw invalid("INVALID_IMPORT_PATH", "The path contains a NUL character.");
  const candidate = path.resolve(root, from);
  if (!isInside(root, candidate)) throw outsideRoot();
  const realRoot = await realpath(root).catch((error: unknown) => {
    if (isMissing(error)) {
      throw new DomainError("unavailable", "IMPORT_ROOT_MISSING", "The server's import folder does not exist.");
    }
    throw error;
  });
  const realPath = await realpath(candidate).catch((error: unknown) => {
    if (isMissing(error)) throw serverFileNotFound();
    throw error;
  });
  if (!isInside(realRoot, realPath)) throw outsideRoot();
  const checked = await lstat(realPath).catch((error: unknown) => {
    if (isMissing(error)) throw serverFileNotFound();
    throw error;
  });
  if (checked.isDirectory()) throw invalid("IMPORT_PATH_IS_FOLDER", "The path names a folder; give a package file.");
  // A FIFO or device would block or never end; only regular files are packages.
  if (!checked.isFile()) throw invalid("IMPORT_PATH_NOT_FILE", "The path does not name a regular file.");
  const handle = await open(realPath, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    (error: unknown) => {
      if (isMissing(error)) throw serverFileNotFound();
      throw error;
    },
  );
  try {
    const stats = await handle.stat();
    if (!stats.isFile() || !sameFile(stats, checked)) throw serverFileNotFound();
    return { realPath, handle, stats };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** Deletes the imported file, unless another file took its name meanwhile. */
async function deleteIfUnchanged(source: ServerFile): Promise<void> {
  const now = await lstat(source.realPath).catch(() => undefined);
  if (now === undefined || !sameFile(now, source.stats)) return;
  await unlink(source.realPath);
}

/** Whether `target` is `root` or below it (both absolute, normalised). */
const sameFile = (a: Stats, b: Stats) => a.dev === b.dev && a.ino === b.ino;

function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR" || code === "ELOOP";
}
