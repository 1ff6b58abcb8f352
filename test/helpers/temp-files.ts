import path from "node:path";
import type { TestApp } from "./app.js";
import { filesUnder } from "./form-data.js";

/**
 * The files left under the app's tmp/, for tests that a refused or finished upload cleans up after
 * itself. Files, not folders: an object store's spool is a folder there (store-<key>), which stays,
 * empty, on a cluster node.
 */
export function filesLeftInTmp(app: Pick<TestApp, "dataDir">): Promise<string[]> {
  return filesUnder(path.join(app.dataDir, "tmp"));
}
