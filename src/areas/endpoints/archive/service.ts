import type { Readable } from "node:stream";
import { type AssetPath, ancestorPaths } from "../../../domain/asset-path.js";
import { invalid } from "../../../domain/errors.js";
import { quote } from "../../../domain/upack-manifest.js";
import { type ArchiveLimits, UPLOAD_ARCHIVE_LIMITS } from "../../../storage/archives.js";
import type { BlobStore } from "../../../storage/blob-store.js";
import type { Feed } from "../../management/index.js";
import { folderArchive } from "./export.js";
import { planImport } from "./plan.js";
import { withSpooledUpload } from "./spool.js";
import { openUploadedArchive } from "./upload.js";
import { createImportWriter } from "./writes.js";
import { replaceForbidden, type WriteMode } from "../repository.js";
import type { AssetService } from "../service.js";

export type ArchiveFormat = "zip" | "tgz";

/**
 * Export and import of asset folders as archives (docs/compat.md 4.5): export streams a ZIP or gzipped
 * TAR of a folder; import extracts one into a folder, refusing escaping paths, links, and archives
 * past the entry, size and ratio bounds of storage/archives.ts.
 */
export interface AssetArchives {
  /** 404 when the folder does not exist (the root always does). Paths in the archive are relative to the folder. */
  export(directory: Feed, folder: AssetPath, options: { format: ArchiveFormat; recursive: boolean }): Promise<Readable>;
  /**
   * Extracts the archive into the folder (created if missing). Existing files are kept unless
   * `overwrite`, and replacing one needs `mayReplace`.
   */
  import(
    directory: Feed,
    folder: AssetPath,
    body: () => Readable,
    options: { format: ArchiveFormat; overwrite: boolean; mayReplace: () => Promise<boolean> },
  ): Promise<{ files: number; skipped: number }>;
}

export interface ArchiveDeps {
  readonly assets: AssetService;
  readonly blobs: BlobStore;
  /** Where uploaded archives are spooled before reading (ZIP needs random access); the blob store's tmp/. */
  readonly tempDir: string;
  readonly maxUploadBytes: number;
  /** What an uploaded archive is held to (WHARF_ARCHIVE_*); UPLOAD_ARCHIVE_LIMITS when not given. */
  readonly limits?: ArchiveLimits;
}

export function createAssetArchives(deps: ArchiveDeps): AssetArchives {
  const { assets, blobs } = deps;

  /** Refuses, before the body is read, an import into a file or below one. */
  async function checkTargetFolder(directory: Feed, folder: AssetPath): Promise<void> {
    if (folder.path === "") return;
    const item = await assets.findItem(directory, folder);
    if (item !== undefined) {
      if (!item.isFolder) throw fileInTheWay(item.path);
      return;
    }
    // A missing folder is created with its missing parents, none of which may be a file.
    for (const ancestor of ancestorPaths(folder)) {
      const found = await assets.findItem(directory, ancestor);
      if (found !== undefined && !found.isFolder) throw fileInTheWay(found.path);
    }
  }

  return {
    async export(directory, folder, { format, recursive }) {
      if (folder.path !== "") {
        // 404 with the message clients look for (docs/compat.md 4.5, docs/clients.md ProGetAutomation).
        const item = await assets.item(directory, folder);
        if (!item.isFolder) {
          throw invalid("ASSET_IS_FILE", `${quote(item.path)} is a file; only folders are exported.`);
        }
      }
      const items = await assets.list(directory, folder, recursive);
      return folderArchive(blobs, folder, items, format);
    },

    async import(directory, folder, body, options) {
      await checkTargetFolder(directory, folder);
      const spool = { tempDir: deps.tempDir, maxBytes: deps.maxUploadBytes };
      return withSpooledUpload(body(), spool, async (file) => {
        const archive = await openUploadedArchive(file, options.format, deps.limits ?? UPLOAD_ARCHIVE_LIMITS);
        try {
          const existing = await assets.list(directory, folder, true);
          const plan = planImport(folder, archive.entries(), existing, options.overwrite);
          // Asked once, and only when replacing is wanted: without the permission, overwrite=true
          // over existing files is refused before anything is written.
          const mayReplace = options.overwrite && (await options.mayReplace());
          const replaced = plan.replacing[0];
          if (replaced !== undefined && !mayReplace) throw replaceForbidden(replaced);
          // Without replacing, a file that appears meanwhile is kept like those that were there.
          const mode: WriteMode = mayReplace ? "create-or-replace" : "create";

          const byName = new Map(plan.entries.map((entry) => [entry.name, entry]));
          let skipped = 0;
          if (folder.path !== "") await assets.createFolder(directory, folder);
          const writer = createImportWriter(assets, directory, { mode, mayReplace });
          try {
            await archive.extract(async (entry, data) => {
              const planned = byName.get(entry.name);
              if (planned === undefined) throw new Error(`the archive entry ${entry.name} was not there when checked`);
              if (planned.isDirectory) return writer.folder(planned.path);
              if (planned.skip) skipped += 1;
              else await writer.file(planned, data());
            });
            const written = await writer.finish();
            return { files: written.files, skipped: skipped + written.kept };
          } finally {
            await writer.close();
          }
        } finally {
          await archive.close();
        }
      });
    },
  };
}

const fileInTheWay = (path: string) =>
  invalid("PARENT_IS_FILE", `${quote(path)} is a file, so it cannot hold other items.`);
