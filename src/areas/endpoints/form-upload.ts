import type { FastifyRequest } from "fastify";
import { type AssetPath, childPath, parseAssetPath } from "../../domain/asset-path.js";
import { invalid } from "../../domain/errors.js";
import { quote } from "../../domain/upack-manifest.js";
import { readFormDataUpload } from "../../http/form-data-upload.js";
import { claimedDigests } from "../../http/upload-digests.js";
import type { Feed } from "../management/index.js";
import type { AssetItem, WriteMode } from "./repository.js";
import type { AssetService, HeldContent } from "./service.js";

/**
 * A form upload (`multipart/form-data`, curl -F) to `content/<path>`: docs/compat.md 4.2 describes
 * raw bodies only, and a form is how a browser or `curl -F` sends files. Not ProGet's chunked
 * multipart upload protocol (`?multipart=`, multipart/).
 * - One file part to a path that names a file is stored at that path; its filename is not used.
 * - Several file parts, or a path that names a folder (a trailing '/', the root, an existing
 *   folder), store each file under that folder by its filename, which may hold subfolders and is
 *   checked like every asset path (no '..', absolute paths, backslashes or control characters).
 * - Every file is stored, or none: each follows the method's rule (POST creates or replaces, PUT
 *   only creates, PATCH only replaces), and one refusal refuses the form. Text fields are ignored.
 */
export interface FormUploadTarget {
  readonly directory: Feed;
  readonly path: AssetPath;
  /** The URL names a folder: ends with '/' or is the directory's root. */
  readonly namesFolder: boolean;
  readonly mode: WriteMode;
  readonly mayReplace: boolean;
}

interface ReceivedFile {
  readonly fileName: string;
  readonly contentType: string | undefined;
  readonly held: HeldContent;
}

export async function storeFormUpload(
  assets: AssetService,
  request: FastifyRequest,
  target: FormUploadTarget,
): Promise<AssetItem[]> {
  const { directory, path } = target;
  const underFolder =
    target.namesFolder || path.path === "" || (await assets.findItem(directory, path))?.isFolder === true;
  const received: ReceivedFile[] = [];
  let handedOver = false;
  try {
    await readFormDataUpload(request, {
      digests: claimedDigests(request.headers),
      noFileHint: "send the file as a file field (curl -F file=@<path>), or the file itself as the body.",
      store: async (file) => {
        // Once the files go by their names, a name is refused before its bytes are read.
        if (underFolder || file.index > 0) {
          for (const { fileName } of received) pathUnder(path, fileName);
          pathUnder(path, file.fileName);
        }
        const held = await assets.storeContent(directory, file.stream, { expected: file.digests });
        received.push({ fileName: file.fileName, contentType: file.contentType, held });
      },
    });
    const files = received.map(({ fileName, contentType, held }) => ({
      path: underFolder || received.length > 1 ? pathUnder(path, fileName) : path,
      contentType,
      held,
    }));
    refuseDuplicatePaths(files.map((file) => file.path));
    handedOver = true;
    return await assets.putStoredFiles(directory, files, { mode: target.mode, mayReplace: target.mayReplace });
  } finally {
    if (!handedOver) await assets.releaseContents(received.map(({ held }) => held));
  }
}

/** Where a file named `fileName` goes in `folder`: the name is a relative asset path of its own. */
function pathUnder(folder: AssetPath, fileName: string): AssetPath {
  if (fileName === "") {
    throw invalid(
      "FORM_FILE_NEEDS_NAME",
      "A file part sent to a folder, or with other files, needs a filename in its Content-Disposition " +
        "(curl -F file=@<path> sends one); or send one file to the URL of the file.",
    );
  }
  // The name alone first, so that the message names what the client sent.
  return parseAssetPath(childPath(folder, parseAssetPath(fileName).path));
}

function refuseDuplicatePaths(paths: readonly AssetPath[]): void {
  const seen = new Set<string>();
  for (const path of paths) {
    if (seen.has(path.key)) {
      throw invalid("FORM_DUPLICATE_PATH", `The form holds two files for ${quote(path.path)}: send each path once.`);
    }
    seen.add(path.key);
  }
}
