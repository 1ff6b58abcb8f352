import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { latestPostgresVersion } from "../../src/storage/postgres/migrations.js";
import { type PostgresServer, postgresInstalled, startPostgres } from "../helpers/postgres.js";
import { runWharf } from "./process.js";

/**
 * `wharf migrate` as an operator runs it before starting cluster nodes, what a node needs besides
 * WHARF_DATABASE_URL, and the data commands, which refuse it (storage/postgres/cluster-mode.ts).
 */

// Trust authentication ignores it; it stands for the operator's real password, which nothing may print.
const PASSWORD = "s3cret-never-printed";
const withPassword = (url: string) => url.replace("postgres://wharf@", `postgres://wharf:${PASSWORD}@`);

describe.skipIf(!postgresInstalled())("wharf migrate and WHARF_DATABASE_URL", () => {
  let server: PostgresServer;
  let dataDir: string;
  beforeAll(async () => {
    server = await startPostgres();
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-migrate-e2e-"));
  });
  afterAll(async () => {
    await server?.stop();
    if (dataDir) await fs.rm(dataDir, { recursive: true, force: true });
  });

  it("migrates a new PostgreSQL database once, saying each file, and never prints the password", async () => {
    const url = withPassword(await server.createDatabase());
    const env = { WHARF_DATABASE_URL: url, WHARF_DATA_DIR: dataDir };
    const latest = latestPostgresVersion();
    const first = await runWharf(["migrate"], env);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^applied 0001-baseline\.sql$/m);
    expect(first.stdout).toContain(`postgres://wharf:***@127.0.0.1:`);
    expect(first.stdout).toMatch(new RegExp(`schema at version ${latest} \\(was 0\\)\\n$`));
    const again = await runWharf(["migrate"], env);
    expect(again).toMatchObject({ code: 0, stderr: "" });
    expect(again.stdout).toMatch(new RegExp(`schema at version ${latest}, nothing to do\\n$`));
    for (const output of [first.stdout, again.stdout]) expect(output).not.toContain(PASSWORD);
  });

  it("says why it cannot reach the database, exit 1, without the password", async () => {
    // A port nothing listens on: the cluster's own, after a stop would be racy; port 1 is never PostgreSQL.
    const result = await runWharf(["migrate"], {
      WHARF_DATABASE_URL: `postgres://wharf:${PASSWORD}@127.0.0.1:1/wharf`,
      WHARF_DATA_DIR: dataDir,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^wharf migrate: PostgreSQL postgres:\/\/wharf:\*\*\*@127\.0\.0\.1:1\/wharf: .*ECONNREFUSED/,
    );
    expect(result.stdout + result.stderr).not.toContain(PASSWORD);
  });

  it("refuses a URL of another kind at once (exit 2), without repeating it", async () => {
    const result = await runWharf(["migrate"], { WHARF_DATABASE_URL: `mysql://root:${PASSWORD}@db/wharf` });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/WHARF_DATABASE_URL: must be a postgres:\/\/ URL/);
    expect(result.stderr).not.toContain(PASSWORD);
  });

  it("keeps the data commands off SQLite while WHARF_DATABASE_URL names PostgreSQL", async () => {
    const env = { WHARF_DATABASE_URL: withPassword(await server.createDatabase()), WHARF_DATA_DIR: dataDir };
    for (const args of [["feeds", "list"], ["gc"]]) {
      const result = await runWharf(args, env);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(/works on the data directory's SQLite database and cannot use WHARF_DATABASE_URL/);
      expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    }
    // Nothing was created in the data directory meanwhile.
    expect(await fs.readdir(dataDir)).toEqual([]);
  });

  it("serve in cluster mode needs the shared secret key and an object store, and says so before creating anything", async () => {
    const env = {
      WHARF_DATABASE_URL: withPassword(await server.createDatabase()),
      WHARF_DATA_DIR: dataDir,
      WHARF_PORT: "0",
    };
    const noKey = await runWharf(["serve"], env);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/needs WHARF_SECRET_KEY or WHARF_SECRET_KEY_FILE, the same on every node/);
    const key = Buffer.alloc(32, 7).toString("base64");
    const noStore = await runWharf(["serve"], { ...env, WHARF_SECRET_KEY: key });
    expect(noStore.code).toBe(2);
    expect(noStore.stderr).toMatch(/needs WHARF_PACKAGE_STORE naming an S3 or Azure store/);
    for (const result of [noKey, noStore]) expect(result.stdout + result.stderr).not.toContain(PASSWORD);
    expect(await fs.readdir(dataDir)).toEqual([]);
  });

  it("migrates the data directory's SQLite database without WHARF_DATABASE_URL", async () => {
    const result = await runWharf(["migrate"], { WHARF_DATA_DIR: dataDir });
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toMatch(/^SQLite .*wharf\.sqlite: schema at version \d+\n$/);
  });
});
