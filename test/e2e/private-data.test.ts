import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildUpack } from "../helpers/upack-fixtures.js";
import { type RunningServer, startServer } from "./process.js";

/**
 * The real server process keeps its data private to its user (docs/PRODUCT.md security baseline):
 * whatever the umask it was started with, every directory it creates is 0700 and every file 0600
 * (database, WAL, shared memory, blobs, key files), and a data directory or database an older
 * Wharf left readable by others is narrowed at start.
 */

let dataDir: string;
let server: RunningServer | undefined;

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-e2e-private-"));
});
afterEach(async () => {
  await server?.stop();
  server = undefined;
  await fs.rm(dataDir, { recursive: true, force: true });
});

/** Every entry under `dir` (itself included) with its permission bits. */
async function modesUnder(dir: string): Promise<Map<string, number>> {
  const modes = new Map<string, number>([[".", (await fs.stat(dir)).mode & 0o777]]);
  for (const entry of await fs.readdir(dir, { recursive: true })) {
    modes.set(entry, (await fs.stat(path.join(dir, entry))).mode & 0o777);
  }
  return modes;
}

describe("wharf serve: private data files (real process)", () => {
  it("creates everything private, and narrows what an older Wharf left open", async () => {
    const key = `e2e-admin-${randomBytes(16).toString("hex")}`;
    // As an older Wharf left them: readable by everyone.
    await fs.chmod(dataDir, 0o755);
    await fs.writeFile(path.join(dataDir, "wharf.sqlite"), "", { mode: 0o644 });
    await fs.writeFile(path.join(dataDir, "secret-key"), `${randomBytes(32).toString("base64")}\n`, { mode: 0o644 });
    server = await startServer({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: key });
    const headers = { "X-ApiKey": key };
    const feed = await fetch(`${server.url}/api/management/feeds/create`, {
      method: "POST",
      headers: { ...headers, "Content-Type": "application/json" },
      body: JSON.stringify({ name: "main", feedType: "universal" }),
    });
    expect(feed.status).toBe(201);
    const upload = await fetch(`${server.url}/upack/main/upload`, {
      method: "PUT",
      headers: { ...headers, "Content-Type": "application/zip" },
      body: new Uint8Array(await buildUpack({ name: "tool", version: "1.0.0" })),
    });
    expect(upload.status, await upload.text()).toBe(201);

    const modes = await modesUnder(dataDir);
    expect(modes.get(".")).toBe(0o700);
    for (const file of ["wharf.sqlite", "wharf.sqlite-wal", "wharf.sqlite-shm", "secret-key"]) {
      expect(modes.get(file), file).toBe(0o600);
    }
    expect([...modes.keys()].some((entry) => entry.startsWith("blobs/") && modes.get(entry) === 0o600)).toBe(true);
    expect([...modes].filter(([, mode]) => (mode & 0o077) !== 0)).toEqual([]);
  });
});
