import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DATA_DIR_NAMES, dataPaths } from "../../src/storage/data-paths.js";
import { DOC, tableRows } from "../helpers/source-facts.js";

/** storage/data-paths.ts names everything under the data directory; docs/architecture.md describes it. */

/** The first column of the table in docs/architecture.md "## The data directory". */
function documentedPaths(): string {
  const doc = readFileSync(DOC, "utf8");
  const start = doc.indexOf("## The data directory");
  expect(start).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf("\n## ", start + 1);
  const table = doc.slice(start, end < 0 ? undefined : end).match(/^\|.*$/gm) ?? [];
  return tableRows(table.join("\n"))
    .map(([first = ""]) => first)
    .join(" ");
}

describe("the data directory's paths", () => {
  it("are the names under the given directory, and the database's SQLite companions beside it", () => {
    const paths = dataPaths("/srv/wharf");
    expect(paths).toEqual({
      database: "/srv/wharf/wharf.sqlite",
      databaseFiles: ["/srv/wharf/wharf.sqlite", "/srv/wharf/wharf.sqlite-wal", "/srv/wharf/wharf.sqlite-shm"],
      serverLock: "/srv/wharf/server.lock",
      secretKey: "/srv/wharf/secret-key",
      adminApiKey: "/srv/wharf/admin-api-key",
      spaceReserve: "/srv/wharf/space-reserve",
      blobs: "/srv/wharf/blobs",
      tmp: "/srv/wharf/tmp",
      multipart: "/srv/wharf/multipart",
    });
    for (const name of Object.keys(DATA_DIR_NAMES) as (keyof typeof DATA_DIR_NAMES)[]) {
      expect(path.dirname(paths[name])).toBe("/srv/wharf");
    }
  });

  it("are each described in docs/architecture.md, under their own name", () => {
    const documented = documentedPaths();
    for (const name of Object.values(DATA_DIR_NAMES)) expect(documented).toMatch(new RegExp(`\`${name}[\`/]`));
    for (const file of dataPaths(".").databaseFiles) expect(documented).toContain(`\`${path.basename(file)}\``);
  });
});
