import { readdir } from "node:fs/promises";
import path from "node:path";
import type { TestApp } from "./app.js";

/**
 * The files left under the app's tmp/, for tests that a refused or finished upload cleans up after
 * itself. Files, not folders: an object store's spool is a folder there (store-<key>), which stays,
 * empty, on a cluster node.
 */
export async function filesLeftInTmp(app: Pick<TestApp, "dataDir">): Promise<string[]> {
  const root = path.join(app.dataDir, "tmp");
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => !entry.isDirectory())
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)));
}
