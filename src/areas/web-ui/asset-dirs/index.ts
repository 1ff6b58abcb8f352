import type { FastifyInstance } from "fastify";
import type { WebUiDeps } from "../index.js";

/**
 * Asset directories (issue 16 section 1): the file browser, previews of text and images (active
 * content sandboxed), uploads by drag and drop through the multipart API, folders, delete, metadata.
 */
export async function registerAssetDirectoryPages(_app: FastifyInstance, _deps: WebUiDeps): Promise<void> {}
