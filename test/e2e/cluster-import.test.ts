import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { type PostgresServer, postgresInstalled, startPostgres } from "../helpers/postgres.js";
import { buildUpack } from "../helpers/upack-fixtures.js";
import { ROOT, type RunningServer, runWharf, startServer } from "./process.js";

/**
 * `wharf cluster import` (issue 18 section 4): a single node filled over its HTTP API and stopped,
 * its SQLite and disk blobs moved into PostgreSQL and Azurite by the real command, killed once
 * mid-way and run again, then a real cluster node serving the result: the same package bytes, the
 * same keys. And what it refuses: a database holding other data, another secret key.
 */
describe.skipIf(!postgresInstalled())("wharf cluster import", () => {
  let postgres: PostgresServer;
  let azurite: AzuriteServer;
  let dataDir: string;
  const otherDirs: string[] = [];
  const adminKey = `import-admin-${randomBytes(8).toString("hex")}`;
  const packages = new Map<string, Buffer>();
  let userKey: string;
  let ownSecretKey: string;

  const admin = { "x-apikey": adminKey };
  const call = (server: RunningServer, url: string, init: RequestInit = {}) =>
    fetch(`${server.url}${url}`, { ...init, headers: { ...admin, ...(init.headers as Record<string, string>) } });
  const postJson = (server: RunningServer, url: string, body: unknown) =>
    call(server, url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });

  /** The command's environment for `cluster`: its database and its container. */
  const importEnv = (cluster: TestCluster, extra: Record<string, string> = {}) => ({
    WHARF_DATA_DIR: dataDir,
    WHARF_DATABASE_URL: cluster.databaseUrl,
    ...cluster.storeEnv,
    ...extra,
  });

  beforeAll(async () => {
    [postgres, azurite] = await Promise.all([startPostgres(), startAzurite()]);
    dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-import-e2e-"));
    const single = await startServer({ WHARF_DATA_DIR: dataDir, WHARF_ADMIN_API_KEY: adminKey }, 30_000);
    try {
      expect(
        (await postJson(single, "/api/management/feeds/create", { name: "main", feedType: "universal" })).status,
      ).toBe(201);
      for (const [name, version] of [
        ["alpha", "1.0.0"],
        ["alpha", "1.1.0"],
        ["beta", "2.0.0"],
      ] as const) {
        const bytes = await buildUpack({ name, version, files: { "data.bin": randomBytes(2048).toString("hex") } });
        const uploaded = await call(single, "/upack/main/upload", { method: "PUT", body: new Uint8Array(bytes) });
        expect(uploaded.status).toBe(201);
        packages.set(`${name}/${version}`, bytes);
      }
      const created = await postJson(single, "/api/api-keys/create", {
        type: "Feed",
        feed: "main",
        packagePermissions: ["view"],
      });
      expect(created.status).toBe(201);
      userKey = ((await created.json()) as { key: string }).key;
      expect(
        (await postJson(single, "/api/security/users/add", { name: "alice", password: "pa55-word-long" })).status,
      ).toBe(200);
      // A stored credential, sealed under the data directory's own key.
      const connector = await postJson(single, "/api/management/connectors/create", {
        name: "up",
        url: "https://upstream.example.com/upack/elsewhere",
        feedType: "universal",
        username: "api",
        password: "connector-secret",
      });
      expect(connector.status, await connector.clone().text()).toBe(201);
    } finally {
      await single.stop();
    }
    ownSecretKey = (await fs.readFile(path.join(dataDir, "secret-key"), "utf8")).trim();
  }, 90_000);

  afterAll(async () => {
    await azurite?.stop();
    await postgres?.stop();
    for (const dir of [dataDir, ...otherDirs]) if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("refuses a database that holds data of its own, and a secret key other than the data directory's (exit 2)", async () => {
    const used = await testCluster(await postgres.createDatabase(), azurite);
    expect((await runWharf(["migrate"], { WHARF_DATABASE_URL: used.databaseUrl, WHARF_DATA_DIR: dataDir })).code).toBe(
      0,
    );
    await query(
      used.databaseUrl,
      "INSERT INTO users (name, name_key, created_at) VALUES ('mallory', 'mallory', '2024-01-01T00:00:00.000Z')",
    );
    const foreign = await runWharf(["cluster", "import"], importEnv(used));
    expect(foreign.code, foreign.stderr).toBe(2);
    expect(foreign.stderr).toMatch(
      /refused: this database already holds data that did not come from an import .*users/,
    );

    const fresh = await testCluster(await postgres.createDatabase(), azurite);
    const otherKey = await runWharf(["cluster", "import"], importEnv(fresh, { WHARF_SECRET_KEY: fresh.secretKey }));
    expect(otherKey.code, otherKey.stderr).toBe(2);
    expect(otherKey.stderr).toMatch(
      /refused: the secret key given \(WHARF_SECRET_KEY, key [0-9a-f]{16}\) is not the data directory's/,
    );
    // Refused before anything was written: the database holds no import.
    expect(await query(fresh.databaseUrl, "SELECT to_regclass('wharf_cluster_import') AS t")).toEqual([{ t: null }]);
  }, 60_000);

  it("killed mid-way and run again, ends verified; a cluster node then serves the same bytes and keys", async () => {
    const cluster = await testCluster(await postgres.createDatabase(), azurite);
    expect(
      (await runWharf(["migrate"], { WHARF_DATABASE_URL: cluster.databaseUrl, WHARF_DATA_DIR: dataDir })).code,
    ).toBe(0);

    // The first run stops on a table another session holds in SHARE mode, after the blobs and the
    // tables before it: that copy's ALTER TABLE and writes wait for the lock, the reads before do not.
    const holder = new pg.Client({ connectionString: cluster.databaseUrl });
    await holder.connect();
    await holder.query("BEGIN");
    await holder.query("LOCK TABLE upack_versions IN SHARE MODE");
    const first = spawnImport(importEnv(cluster));
    try {
      // Asked on a connection of its own: a transaction sees pg_stat_activity as of its first look.
      await waitFor(async () => {
        const waiting = await query(
          cluster.databaseUrl,
          "SELECT query FROM pg_stat_activity WHERE application_name = 'wharf cluster import' AND wait_event_type = 'Lock'",
        );
        return waiting.some((row) => String(row.query).includes("ALTER TABLE"));
      }, first);
      first.child.kill("SIGKILL");
      await first.exited;
    } finally {
      await holder.query("ROLLBACK");
      await holder.end();
    }
    expect(first.stderr()).toMatch(/blobs: 3\/3, .* \(100%\), 0 already in the object store/);
    const copied = await query(cluster.databaseUrl, "SELECT step FROM wharf_cluster_import WHERE step LIKE 'table:%'");
    expect(copied.map((row) => row.step)).toContain("table:feeds");
    expect(copied.map((row) => row.step)).not.toContain("table:upack_versions");
    // The table being copied when the run died left nothing behind.
    expect(await query(cluster.databaseUrl, "SELECT count(*)::int AS n FROM upack_versions")).toEqual([{ n: 0 }]);

    const second = await runWharf(
      ["cluster", "import"],
      importEnv(cluster, { WHARF_SECRET_KEY: ownSecretKey }),
      60_000,
    );
    expect(second.code, `${second.stdout}\n${second.stderr}`).toBe(0);
    expect(second.stderr).toMatch(/^resuming: \d+\/\d+ tables were copied by an earlier run$/m);
    expect(second.stderr).toMatch(/blobs: 3\/3, .* 3 already in the object store/);
    expect(second.stdout).toMatch(/^blobs: 3 \(.*\), 0 copied, 3 already in the object store$/m);
    expect(second.stdout).toMatch(
      /^secret key [0-9a-f]{16}: every cluster node must use it as WHARF_SECRET_KEY .*1 stored credentials are sealed under it$/m,
    );
    expect(second.stdout).toMatch(
      /^verified: every table has its \d+ rows, and all 3 referenced blobs are in the object store$/m,
    );

    // Exactly SQLite's rows, derived columns included: PostgreSQL's triggers (the audit log's
    // guards, the packages' search text, the built-in tasks' seed) added or changed nothing.
    const sqlite = new Database(path.join(dataDir, "wharf.sqlite"), { readonly: true });
    try {
      // CAST: pg reads bigint as text; integer reads as a number on both.
      for (const sql of [
        "SELECT CAST(id AS integer) AS id, action, object FROM audit_records ORDER BY id",
        "SELECT CAST(id AS integer) AS id, name_key, built_in FROM tasks ORDER BY id",
        "SELECT CAST(id AS integer) AS id, name, search_text, CAST(latest_version_id AS integer) AS v FROM upack_packages ORDER BY id",
        "SELECT CAST(id AS integer) AS id, name FROM users ORDER BY id",
      ]) {
        const expected = sqlite.prepare(sql).all();
        expect(expected.length, sql).toBeGreaterThan(0);
        expect(await query(cluster.databaseUrl, sql), sql).toEqual(expected);
      }
    } finally {
      sqlite.close();
    }

    // Run once more: nothing is copied twice, and it verifies again.
    const third = await runWharf(["cluster", "import"], importEnv(cluster), 60_000);
    expect(third.code, `${third.stdout}\n${third.stderr}`).toBe(0);
    expect(third.stderr).toMatch(/^this data directory was imported and verified at .*: verifying again/m);
    expect(third.stdout).toMatch(/^verified: /m);

    const nodeDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-import-node-"));
    otherDirs.push(nodeDir);
    const node = await startServer(
      {
        WHARF_DATA_DIR: nodeDir,
        WHARF_DATABASE_URL: cluster.databaseUrl,
        WHARF_SECRET_KEY: ownSecretKey,
        WHARF_ADMIN_API_KEY: adminKey,
        ...cluster.storeEnv,
      },
      30_000,
    );
    try {
      for (const [id, bytes] of packages) {
        const download = await fetch(`${node.url}/upack/main/download/${id}`, { headers: { "x-apikey": userKey } });
        expect(download.status, id).toBe(200);
        expect(Buffer.from(await download.arrayBuffer()).equals(bytes), id).toBe(true);
      }
      // The imported feed key is still limited to what it was given.
      const refused = await fetch(`${node.url}/api/security/users/list`, { headers: { "x-apikey": userKey } });
      expect(refused.status).toBe(403);
      const users = await call(node, "/api/security/users/list");
      expect(users.status).toBe(200);
      expect(JSON.stringify(await users.json())).toContain("alice");
      // A new row takes an id past the imported ones (the identities were reset).
      const feed = await postJson(node, "/api/management/feeds/create", { name: "after", feedType: "universal" });
      expect(feed.status, await feed.clone().text()).toBe(201);
    } finally {
      await node.stop();
    }
  }, 120_000);
});

async function query(url: string, sql: string): Promise<Record<string, unknown>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as Record<string, unknown>[];
  } finally {
    await client.end();
  }
}

interface Spawned {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  stderr(): string;
}

/** `wharf cluster import` in a child the test can kill (process.ts's runWharf only waits). */
function spawnImport(env: Record<string, string>): Spawned {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("WHARF_")));
  const child = spawn(process.execPath, [inject("wharfCli"), "cluster", "import"], {
    cwd: ROOT,
    env: { ...clean, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
  const exited = new Promise<void>((resolve) => child.once("close", () => resolve()));
  return { child, exited, stderr: () => stderr };
}

async function waitFor(condition: () => Promise<boolean>, running: Spawned, timeoutMs = 30_000): Promise<void> {
  const giveUp = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (running.child.exitCode !== null) throw new Error(`the import ended first:\n${running.stderr()}`);
    if (Date.now() > giveUp) throw new Error(`timed out waiting:\n${running.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
