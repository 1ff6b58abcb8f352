import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import Database from "better-sqlite3";
import type { FastifyInstance } from "fastify";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { ConfigError, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { loggerOptions } from "../../src/http/logging.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { type FakeUpstream, sendJson, startFakeUpstream } from "../helpers/connector-fixtures.js";

/**
 * Connector passwords at rest: encrypted with the operator's key (or one generated into the data
 * directory), never returned or logged, still sent to the upstream as given; stored in plain text
 * by an older Wharf, they are encrypted at the next start; a rotated key re-encrypts them; a key
 * that opens nothing leaves the connector failing with a clear message, and the server running.
 */

const ADMIN = `admin-${randomBytes(12).toString("hex")}`;
const PASSWORD = "upstream-pa55word";
const basicOf = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;
const newKey = () => randomBytes(32).toString("base64");

interface Started {
  readonly app: FastifyInstance;
  readonly db: Db;
  /** Every log line written so far. */
  readonly logs: string[];
  close(): Promise<void>;
}

/** A Wharf on `dataDir` as a restart would build it: the data is kept between starts. */
async function start(dataDir: string, env: Record<string, string> = {}): Promise<Started> {
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_FETCH_ALLOW_PRIVATE: "true",
    WHARF_CONNECTOR_HEALTH_INTERVAL_MINUTES: "0",
    ...env,
  });
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      logs.push(chunk.toString("utf8"));
      callback();
    },
  });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  try {
    bootstrapAdminKey(db, dataDir, ADMIN, systemClock);
    const app = await buildApp(config, {
      db,
      blobs: createFileBlobStore(dataDir),
      logger: { ...(loggerOptions("trace") as object), stream },
    });
    await app.ready();
    return {
      app,
      db,
      logs,
      async close() {
        await app.close();
        db.close();
      },
    };
  } catch (error) {
    db.close();
    throw error;
  }
}

const admin = { "x-apikey": ADMIN };
const storedPassword = (db: Db, name = "up") =>
  (db.prepare("SELECT password FROM connectors WHERE name_key = ?").get(name) as { password: string | null }).password;
const keyIdOf = (sealed: string | null) => sealed?.split(":")[1];

async function createConnector(s: Started, url: string, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await s.app.inject({
    method: "POST",
    url: "/api/management/connectors/create",
    headers: admin,
    payload: { name: "up", url, feedType: "universal", username: "api", password: PASSWORD, ...extra },
  });
  expect(res.statusCode, res.body).toBe(201);
}

async function checkHealth(s: Started): Promise<{ state: string; errorMessage: string | null }> {
  const res = await s.app.inject({ method: "POST", url: "/api/management/connectors/check/up", headers: admin });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

describe("connector passwords at rest", () => {
  let upstream: FakeUpstream;
  let url: string;
  const dirs: string[] = [];
  const running: Started[] = [];

  /** Answers only the right Basic credentials, as a real upstream would. */
  function answer(request: IncomingMessage, response: ServerResponse): void {
    if (request.headers.authorization !== basicOf("api", PASSWORD)) return void response.writeHead(401).end();
    const target = new URL(request.url ?? "/", "http://x");
    if (target.pathname.endsWith("/packages")) return sendJson(response, 200, []);
    response.writeHead(404).end();
  }
  const asked = () => upstream.requests.length;
  const lastAuthorization = () => upstream.requests.at(-1)?.authorization;

  async function dataDir(): Promise<string> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-secrets-"));
    dirs.push(dir);
    return dir;
  }
  async function started(dir: string, env: Record<string, string> = {}): Promise<Started> {
    const s = await start(dir, env);
    running.push(s);
    return s;
  }
  async function stop(s: Started): Promise<void> {
    running.splice(running.indexOf(s), 1);
    await s.close();
  }

  beforeAll(async () => {
    upstream = await startFakeUpstream(answer);
    url = `${upstream.base}/upack/feed`;
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((s) => s.close()));
  });
  afterAll(async () => {
    await upstream?.close();
    await Promise.all(dirs.map((dir) => fs.rm(dir, { recursive: true, force: true })));
  });

  it("are encrypted with a key generated into the data directory (0600), never returned or logged, and reach the upstream as given", async () => {
    const dir = await dataDir();
    const s = await started(dir);
    const keyFile = path.join(dir, "secret-key");
    expect((await fs.stat(keyFile)).mode & 0o777).toBe(0o600);
    expect(Buffer.from((await fs.readFile(keyFile, "utf8")).trim(), "base64")).toHaveLength(32);

    await createConnector(s, url);
    const sealed = storedPassword(s.db) ?? "";
    expect(sealed).toMatch(/^v1:[0-9a-f]{16}:[^:]+:[^:]+:[^:]+$/);
    for (const leak of [PASSWORD, Buffer.from(PASSWORD).toString("base64"), basicOf("api", PASSWORD)]) {
      expect(sealed).not.toContain(leak);
    }
    expect(await checkHealth(s)).toMatchObject({ state: "healthy", errorMessage: null });
    expect(lastAuthorization()).toBe(basicOf("api", PASSWORD));

    const answers = await Promise.all(
      ["/api/management/connectors/get/up", "/api/management/connectors/list", "/api/connector-health"].map((u) =>
        s.app.inject({ method: "GET", url: u, headers: admin }),
      ),
    );
    for (const res of answers) {
      expect(res.statusCode, res.body).toBe(200);
      expect(res.body).not.toContain(PASSWORD);
      expect(res.body).not.toContain(sealed);
      expect(res.body).not.toContain("password");
    }
    const logs = s.logs.join("");
    expect(logs).toContain("/api/management/connectors/create");
    expect(logs).not.toContain(PASSWORD);
    expect(logs).not.toContain(sealed);
  });

  it("stored in plain text by an older Wharf, are encrypted at the next start, once", async () => {
    const dir = await dataDir();
    const first = await started(dir);
    await createConnector(first, url);
    await stop(first);
    const other = new Database(path.join(dir, "wharf.sqlite"));
    other.prepare("UPDATE connectors SET password = ?").run(PASSWORD);
    other.close();

    const second = await started(dir);
    const sealed = storedPassword(second.db);
    expect(sealed).toMatch(/^v1:/);
    expect(second.logs.join("")).toContain("connector passwords encrypted with the current secret key");
    expect(await checkHealth(second)).toMatchObject({ state: "healthy" });
    expect(lastAuthorization()).toBe(basicOf("api", PASSWORD));
    await stop(second);

    const third = await started(dir);
    expect(storedPassword(third.db)).toBe(sealed);
    expect(third.logs.join("")).not.toContain("connector passwords encrypted");
  });

  it("survive a key rotation: with the old key as previous, they are re-encrypted under the new one", async () => {
    const [a, b] = [newKey(), newKey()];
    const dir = await dataDir();
    const first = await started(dir, { WHARF_SECRET_KEY: a });
    await createConnector(first, url);
    const underA = keyIdOf(storedPassword(first.db));
    await stop(first);

    const rotated = await started(dir, { WHARF_SECRET_KEY: b, WHARF_SECRET_KEY_PREVIOUS: a });
    const underB = keyIdOf(storedPassword(rotated.db));
    expect(underB).toMatch(/^[0-9a-f]{16}$/);
    expect(underB).not.toBe(underA);
    expect(await checkHealth(rotated)).toMatchObject({ state: "healthy" });
    expect(lastAuthorization()).toBe(basicOf("api", PASSWORD));
    await stop(rotated);

    // The old key is no longer needed.
    const after = await started(dir, { WHARF_SECRET_KEY: b });
    expect(keyIdOf(storedPassword(after.db))).toBe(underB);
    expect(await checkHealth(after)).toMatchObject({ state: "healthy" });
  });

  it("with a key that opens nothing, Wharf starts, the connector fails with a clear message and sends nothing; a new password mends it", async () => {
    const [a, b] = [newKey(), newKey()];
    const dir = await dataDir();
    const first = await started(dir, { WHARF_SECRET_KEY: a });
    await createConnector(first, url);
    const feed = await first.app.inject({
      method: "POST",
      url: "/api/management/feeds/create",
      headers: admin,
      payload: { name: "proxy", feedType: "universal", connectors: ["up"] },
    });
    expect(feed.statusCode, feed.body).toBe(201);
    const sealed = storedPassword(first.db);
    await stop(first);

    const wrong = await started(dir, { WHARF_SECRET_KEY: b });
    expect(wrong.logs.join("")).toContain("the password of connector 'up' cannot be decrypted");
    const before = asked();
    const health = await checkHealth(wrong);
    expect(health.state).toBe("error");
    expect(health.errorMessage).toContain("Connector 'up': its stored password cannot be decrypted");
    expect(health.errorMessage).toContain("WHARF_SECRET_KEY_PREVIOUS");
    const listing = await wrong.app.inject({ method: "GET", url: "/upack/proxy/packages", headers: admin });
    expect(listing.statusCode, listing.body).toBe(503);
    expect(listing.headers["content-type"]).toBe("text/plain");
    expect(listing.body).toContain("Connector 'up': its stored password cannot be decrypted");
    expect(asked()).toBe(before);

    // Other changes keep the stored password for the right key to open later; a new one replaces it.
    const timeout = await wrong.app.inject({
      method: "POST",
      url: "/api/management/connectors/update/up",
      headers: admin,
      payload: { timeout: 20 },
    });
    expect(timeout.statusCode, timeout.body).toBe(200);
    expect(storedPassword(wrong.db)).toBe(sealed);
    const mended = await wrong.app.inject({
      method: "POST",
      url: "/api/management/connectors/update/up",
      headers: admin,
      payload: { password: PASSWORD },
    });
    expect(mended.statusCode, mended.body).toBe(200);
    expect(await checkHealth(wrong)).toMatchObject({ state: "healthy" });
    expect(lastAuthorization()).toBe(basicOf("api", PASSWORD));
  });

  it("a key file must be private and hold a key; WHARF_SECRET_KEY must be one, and is never echoed", async () => {
    const dir = await dataDir();
    const keyFile = path.join(dir, "operator.key");
    await fs.writeFile(keyFile, `${newKey()}\n`, { mode: 0o644 });
    await fs.chmod(keyFile, 0o644);
    await expect(start(dir, { WHARF_SECRET_KEY_FILE: keyFile })).rejects.toThrow(/chmod 600/);
    await expect(start(dir, { WHARF_SECRET_KEY_FILE: keyFile })).rejects.toBeInstanceOf(ConfigError);
    await fs.chmod(keyFile, 0o600);
    const s = await started(dir, { WHARF_SECRET_KEY_FILE: keyFile });
    await createConnector(s, url);
    expect(await checkHealth(s)).toMatchObject({ state: "healthy" });
    await expect(fs.stat(path.join(dir, "secret-key"))).rejects.toThrow(/ENOENT/);
    await stop(s);

    await fs.writeFile(keyFile, "not a key\n");
    await expect(start(dir, { WHARF_SECRET_KEY_FILE: keyFile })).rejects.toThrow(/must hold 32 bytes/);
    await expect(start(dir, { WHARF_SECRET_KEY_FILE: path.join(dir, "missing") })).rejects.toThrow(/ENOENT/);

    const bad = "this-is-no-key-but-a-secret";
    for (const env of [{ WHARF_SECRET_KEY: bad }, { WHARF_SECRET_KEY_PREVIOUS: `${newKey()},${bad}` }]) {
      const error = (() => {
        try {
          loadConfig(env);
        } catch (thrown) {
          return thrown as Error;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error?.message).toContain(Object.keys(env)[0]);
      expect(error?.message).not.toContain(bad);
    }
    expect(() => loadConfig({ WHARF_SECRET_KEY: newKey(), WHARF_SECRET_KEY_FILE: keyFile })).toThrow(/not both/);
    expect(loadConfig({ WHARF_SECRET_KEY: "ab".repeat(32) }).secretKeys.key).toBe("ab".repeat(32));
  });
});

describe("data files are private", () => {
  let dir: string;
  let previous: number;
  afterEach(async () => {
    process.umask(previous);
    await fs.rm(dir, { recursive: true, force: true });
  });

  it("the database, its WAL and shared memory are 0600, also when an older Wharf left them readable", async () => {
    previous = process.umask(0o022);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-private-"));
    const file = path.join(dir, "data", "wharf.sqlite");
    const modes = async () =>
      Promise.all(
        [path.dirname(file), file, `${file}-wal`, `${file}-shm`].map(async (f) => (await fs.stat(f)).mode & 0o777),
      );
    const db = openDatabase(file);
    db.prepare("CREATE TABLE t (x)").run();
    expect(await modes()).toEqual([0o700, 0o600, 0o600, 0o600]);
    db.close();

    for (const f of [file, `${file}-wal`, `${file}-shm`]) await fs.chmod(f, 0o644).catch(() => undefined);
    const again = openDatabase(file);
    again.prepare("INSERT INTO t VALUES (1)").run();
    expect((await modes()).slice(1)).toEqual([0o600, 0o600, 0o600]);
    again.close();
  });
});
