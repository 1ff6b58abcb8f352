import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { systemClock } from "../../src/domain/clock.js";
import { openDatabase } from "../../src/storage/database.js";
import { ROOT, runWharf, startServer } from "./process.js";

/** The `wharf` command as an operator runs it: a child process, exit codes, stdout and stderr. */

const { version } = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { version: string };

let dataDir: string;
beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-cli-e2e-"));
});
afterEach(async () => {
  await fs.rm(dataDir, { recursive: true, force: true });
});

const wharf = (...args: string[]) => runWharf(args, { WHARF_DATA_DIR: dataDir });

describe("wharf (command line)", () => {
  it("--help prints the usage on stdout and exits 0", async () => {
    const result = await wharf("--help");
    expect(result.code).toBe(0);
    expect(result.stderr).toBe("");
    for (const command of ["serve", "feeds", "api-keys", "users", "permissions"]) {
      expect(result.stdout).toMatch(new RegExp(`^\\s+${command}\\b`, "m"));
    }
    expect((await wharf("help")).stdout).toBe(result.stdout);
  });

  it("--version prints the package version", async () => {
    const result = await wharf("--version");
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
  });

  it("refuses an unknown command or none with the usage on stderr and exit 2", async () => {
    const unknown = await wharf("frobnicate");
    expect(unknown.code).toBe(2);
    expect(unknown.stdout).toBe("");
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    expect(unknown.stderr).toContain("Usage: wharf");

    const none = await wharf();
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("Usage: wharf");
  });

  it("refuses invalid configuration with exit 2, before touching the data directory", async () => {
    const result = await runWharf(["feeds", "list"], { WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "loud" });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("WHARF_LOG_LEVEL");
    expect(await fs.readdir(dataDir)).toEqual([]);
  });

  it("feeds: list, create, list again, and a refused request exits non-zero", async () => {
    const empty = await wharf("feeds", "list");
    expect(empty.code).toBe(0);
    expect(empty.stdout).not.toContain("cli-feed");
    // A new database is worth a note (a mistyped WHARF_DATA_DIR would otherwise go unnoticed), once.
    expect(empty.stderr).toContain(`created a new, empty Wharf database in ${dataDir}`);

    const created = await wharf("feeds", "create", "cli-feed", "--type", "universal");
    expect(created.code).toBe(0);

    const listed = await wharf("feeds", "list");
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^cli-feed\s+universal\b/m);
    expect(listed.stderr).toBe("");

    const duplicate = await wharf("feeds", "create", "cli-feed", "--type", "universal");
    expect(duplicate.code).toBe(1);
    const missing = await wharf("feeds", "get", "no-such-feed");
    expect(missing).toMatchObject({ code: 1, stdout: "" });
    expect(missing.stderr).toMatch(/^error: .*no-such-feed/m);
  });

  it("feeds: works on the data directory of a running server, which sees the change", async () => {
    const key = `cli-admin-${randomBytes(16).toString("hex")}`;
    const server = await startServer({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: key });
    try {
      expect((await wharf("feeds", "create", "while-running", "--type", "universal")).code).toBe(0);
      const res = await fetch(`${server.url}/api/management/feeds/list`, { headers: { "X-ApiKey": key } });
      expect(res.status).toBe(200);
      const feeds = (await res.json()) as { name: string }[];
      expect(feeds.map((feed) => feed.name)).toContain("while-running");
    } finally {
      expect(await server.stop()).toEqual({ code: 0, signal: null });
    }
  });

  it("api-keys list shows the bootstrap key without revealing it", async () => {
    const key = `cli-admin-${randomBytes(16).toString("hex")}`;
    const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
    bootstrapAdminKey(db, dataDir, key, systemClock);
    db.close();

    const result = await wharf("api-keys", "list");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("WHARF_ADMIN_API_KEY");
    expect(result.stdout + result.stderr).not.toContain(key);
  });

  it("api-keys with an unknown subcommand is a usage error (exit 2) on stderr, without a stack trace", async () => {
    const result = await wharf("api-keys", "no-such-subcommand");
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("error: unknown subcommand 'no-such-subcommand'");
    expect(result.stderr).toContain("Usage:\n  wharf api-keys list");
    expect(result.stderr).not.toMatch(/at .*\.[jt]s:\d+/);
  });

  it("a subcommand's help needs no database: nothing is created in the data directory", async () => {
    for (const args of [
      ["feeds", "--help"],
      ["api-keys", "--help"],
      ["users", "--help"],
      ["permissions", "--help"],
    ]) {
      const result = await wharf(...args);
      expect(result).toMatchObject({ code: 0, stderr: "" });
      expect(result.stdout).toContain(`wharf ${args[0]}`);
    }
    expect(await fs.readdir(dataDir)).toEqual([]);
  });
});
