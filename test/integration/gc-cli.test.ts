import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gcCommand } from "../../src/cli/gc.js";
import { lockDataDir } from "../../src/storage/data-dir-lock.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { buildUpack, createUpackFixtures } from "../helpers/upack-fixtures.js";

/**
 * `wharf gc [--dry-run]`: with no server on the data directory it collects there itself (no grace
 * period: it holds the directory's lock, so nothing is in flight); with one running it asks it.
 */

let t: TestApp;
let lines: string[];
let errors: string[];

beforeAll(async () => {
  t = await buildTestApp({ env: { WHARF_GC_INTERVAL_HOURS: "0" } });
  await createUpackFixtures(t).createFeed("gone");
});
afterAll(async () => t.close());

async function wharfGc(...args: string[]): Promise<number> {
  lines = [];
  errors = [];
  return gcCommand(args, { config: t.config, out: (l) => lines.push(l), err: (l) => errors.push(l) });
}

const blobFile = (address: string) => path.join(t.dataDir, "blobs", address.slice(0, 2), address.slice(2, 4), address);

describe("wharf gc", () => {
  it("without a server: --dry-run lists the garbage and its bytes, then gc deletes it", async () => {
    const bytes = await buildUpack({ name: "gone", version: "1.0.0" });
    const upload = await t.app.inject({
      method: "PUT",
      url: "/upack/gone/upload",
      headers: { "x-apikey": t.adminKey },
      payload: bytes,
    });
    expect(upload.statusCode).toBe(201);
    const address = createHash("sha256").update(bytes).digest("hex");
    const removed = await t.app.inject({
      method: "DELETE",
      url: "/api/management/feeds/delete/gone",
      headers: { "x-apikey": t.adminKey },
    });
    expect(removed.statusCode).toBe(200);

    expect(await wharfGc("--dry-run")).toBe(0);
    expect(lines).toEqual([
      `${address} ${bytes.length}`,
      expect.stringMatching(new RegExp(`^examined 1 blobs: would delete 1 \\(${bytes.length} bytes\\)`)),
    ]);
    expect(existsSync(blobFile(address))).toBe(true);

    expect(await wharfGc()).toBe(0);
    expect(lines.at(-1)).toMatch(new RegExp(`^examined 1 blobs: deleted 1 \\(${bytes.length} bytes\\)`));
    expect(existsSync(blobFile(address))).toBe(false);
  });

  it("with a server running: asks it over HTTP with the API key; without a key, says which is needed", async () => {
    const unlock = lockDataDir(t.dataDir);
    try {
      expect(await wharfGc("--dry-run")).toBe(2);
      expect(errors.join("\n")).toContain("WHARF_API_KEY");

      const address = await t.app.listen({ port: 0, host: "127.0.0.1" });
      expect(await wharfGc("--dry-run", "--server", address, "--api-key", t.adminKey)).toBe(0);
      expect(lines.at(-1)).toMatch(/^examined 0 blobs: would delete 0 \(0 bytes\)/);

      expect(await wharfGc("--server", address, "--api-key", "wrong")).toBe(1);
      expect(errors.join("\n")).toContain("answered 403");
    } finally {
      unlock();
    }
  });

  it("refuses unknown arguments with the usage", async () => {
    expect(await wharfGc("--now")).toBe(2);
    expect(errors.join("\n")).toContain("Usage: wharf gc");
    expect(await wharfGc("--help")).toBe(0);
    expect(lines.join("\n")).toContain("--dry-run");
  });
});
