import fs from "node:fs/promises";
import path from "node:path";
import type { TestApp } from "./app.js";

/** Every file under `dir` (recursively), as paths relative to it; [] when it does not exist. */
export async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)));
}

/**
 * The files left under the app's tmp/, for tests that a refused or finished upload cleans up after
 * itself. Files, not folders: an object store's spool is a folder there (store-<key>), which stays,
 * empty, on a cluster node.
 */
export function filesLeftInTmp(app: Pick<TestApp, "dataDir">): Promise<string[]> {
  return filesUnder(path.join(app.dataDir, "tmp"));
}
