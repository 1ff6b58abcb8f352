import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { utils } from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createCredentialsRepository,
  createCredentialsStore,
} from "../../src/areas/configuration/credentials-repository.js";
import { buildApp } from "../../src/app.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { credentialsCommand } from "../../src/cli/credentials.js";
import { loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import { loggerOptions } from "../../src/http/logging.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { loadSecretKeys } from "../../src/storage/secret-keys.js";
import { openSshExecutor } from "../../src/drift/ssh-executor.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey } from "../helpers/fixtures.js";
import { skipSshTests, startSshd, type SshServer, throwawayPrivateKey } from "../helpers/sshd.js";

/**
 * Stored credentials (issue 13 section 3): `/api/infrastructure/credentials/...` stores what ssh
 * servers log in with, sealed with the data directory's secret key; no answer and no log line
 * ever holds the secret (the raw bodies and the captured log are searched for it), and a
 * credential a server uses cannot be deleted.
 */
const BASE = "/api/infrastructure/credentials";
const PASSWORD = "correct horse battery staple 42";

describe("stored credentials API", () => {
  let t: TestApp;
  let privateKey: string;
  const logs: string[] = [];
  const send = (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, key?: string) =>
    t.app.inject({
      method,
      url,
      headers: { "x-apikey": key ?? t.adminKey },
      ...(payload !== undefined && { payload: payload as object }),
    });
  /** Pieces of the secrets that must appear nowhere: the key's body lines and the password. */
  const secretPieces = () => [PASSWORD, ...privateKey.split("\n").filter((line) => line.length > 40)];
  const expectNoSecret = (text: string) => {
    for (const piece of secretPieces()) expect(text).not.toContain(piece);
  };

  beforeAll(async () => {
    privateKey = await throwawayPrivateKey();
    const stream = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        logs.push(chunk.toString("utf8"));
        callback();
      },
    });
    t = await buildTestApp({ logger: { ...(loggerOptions("trace") as object), stream } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it("stores a key credential sealed and answers everything but the secret", async () => {
    const created = await send("POST", `${BASE}/create/deploy-key`, { userName: "deploy", privateKey });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toEqual({
      name: "deploy-key",
      kind: "ssh-key",
      userName: "deploy",
      createdAt: expect.any(String),
      modifiedAt: expect.any(String),
    });
    expect(created.headers["cache-control"]).toBe("no-store");
    expectNoSecret(created.body);

    const row = t.db.prepare("SELECT kind, user_name, secret FROM credentials WHERE name_key = 'deploy-key'").get() as {
      kind: string;
      user_name: string;
      secret: string;
    };
    expect(row).toMatchObject({ kind: "ssh-key", user_name: "deploy" });
    expect(row.secret).toMatch(/^v1:[0-9a-f]{16}:/);
    expectNoSecret(row.secret);
    expect(row.secret).not.toContain("OPENSSH");

    // The store opens it again, for the ssh transport only.
    const store = createCredentialsStore(createCredentialsRepository(t.db), loadSecretKeys(t.config).box);
    const reference = await store.findByName("DEPLOY-KEY");
    expect(reference).toEqual({ id: expect.any(Number), name: "deploy-key" });
    expect(await store.open(reference?.id as number)).toEqual({ userName: "deploy", privateKey });
  });

  it("stores a password credential, inferring its kind, and lists both without secrets", async () => {
    const created = await send("POST", `${BASE}/create/Legacy_Box`, { userName: "admin", password: PASSWORD });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ name: "Legacy_Box", kind: "ssh-password", userName: "admin" });
    for (const method of ["GET", "POST"] as const) {
      const listed = await send(method, `${BASE}/list`);
      expect(listed.statusCode).toBe(200);
      expect(listed.json().map((c: { name: string }) => c.name)).toEqual(["deploy-key", "Legacy_Box"]);
      for (const credential of listed.json() as Record<string, unknown>[]) {
        expect(Object.keys(credential).sort()).toEqual(["createdAt", "kind", "modifiedAt", "name", "userName"]);
      }
      expectNoSecret(listed.body);
    }
    const one = await send("GET", `${BASE}/list?name=legacy_box`);
    expect(one.json()).toEqual([expect.objectContaining({ name: "Legacy_Box" })]);
    expect((await send("GET", `${BASE}/list?name=nope`)).statusCode).toBe(404);
    const row = t.db.prepare("SELECT secret FROM credentials WHERE name_key = 'legacy_box'").get() as {
      secret: string;
    };
    expect(row.secret).not.toContain(PASSWORD);
  });

  it("refuses bad input with a message naming the field, never echoing a secret", async () => {
    const cases: [string, unknown, RegExp][] = [
      ["1starts-with-digit", { userName: "u", password: "p" }, /Invalid credential name/],
      [`${"a".repeat(51)}`, { userName: "u", password: "p" }, /Invalid credential name/],
      ["ends-", { userName: "u", password: "p" }, /Invalid credential name/],
      ["no-user", { password: "p" }, /'userName' is required/],
      ["spaced-user", { userName: "a b", password: "p" }, /'userName'/],
      ["no-secret", { userName: "u" }, /'privateKey'.*or 'password'/],
      ["both", { userName: "u", password: PASSWORD, privateKey }, /either 'privateKey' or 'password'/],
      ["wrong-kind", { userName: "u", kind: "ssh-key", password: PASSWORD }, /takes 'privateKey'/],
      ["bad-kind", { userName: "u", kind: "kerberos", password: PASSWORD }, /'kind' must be ssh-key or ssh-password/],
      ["garbage-key", { userName: "u", privateKey: "hunter2 is not a key" }, /not an OpenSSH or PEM private key/],
      ["empty-password", { userName: "u", password: "" }, /'password' must be 1 to/],
    ];
    for (const [name, body, message] of cases) {
      const res = await send("POST", `${BASE}/create/${name}`, body);
      expect(res.statusCode, `${name}: ${res.body}`).toBe(400);
      expect(res.body).toMatch(message);
      expectNoSecret(res.body);
      expect(res.body).not.toContain("hunter2");
    }
    const publicKey = utils.parseKey(privateKey);
    if (publicKey instanceof Error) throw publicKey;
    const pub = `ssh-ed25519 ${publicKey.getPublicSSH().toString("base64")}`;
    const res = await send("POST", `${BASE}/create/public`, { userName: "u", privateKey: pub });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain("is a public key");
    expect((await send("POST", `${BASE}/create/dup`, "not json")).statusCode).toBe(415);
    const dup = await send("POST", `${BASE}/create/DEPLOY-KEY`, { userName: "x", password: "y" });
    expect(dup.statusCode).toBe(409);
    expect(dup.body).toContain("'deploy-key' already exists");
    expect(t.db.prepare("SELECT count(*) AS n FROM credentials").get()).toEqual({ n: 2 });
  });

  it("updates partially, renames, and replaces a secret only when one is given", async () => {
    const before = t.db.prepare("SELECT secret FROM credentials WHERE name_key = 'legacy_box'").get();
    const renamed = await send("POST", `${BASE}/update/legacy_box`, { name: "legacy-box", userName: "root2" });
    expect(renamed.statusCode, renamed.body).toBe(200);
    expect(renamed.json()).toMatchObject({ name: "legacy-box", kind: "ssh-password", userName: "root2" });
    expect(t.db.prepare("SELECT secret FROM credentials WHERE name_key = 'legacy-box'").get()).toEqual(before);

    const toKey = await send("POST", `${BASE}/update/legacy-box`, { kind: "ssh-key" });
    expect(toKey.statusCode).toBe(400);
    expect(toKey.body).toContain("'privateKey' is required");
    const switched = await send("POST", `${BASE}/update/legacy-box`, { privateKey });
    expect(switched.json()).toMatchObject({ kind: "ssh-key", userName: "root2" });
    expectNoSecret(switched.body);
    const taken = await send("POST", `${BASE}/update/legacy-box`, { name: "Deploy-Key" });
    expect(taken.statusCode).toBe(409);
    expect((await send("POST", `${BASE}/update/missing`, { userName: "x" })).statusCode).toBe(404);
  });

  it("refuses to delete a credential a server uses (409 naming it), deletes it once free", async () => {
    const { id } = t.db.prepare("SELECT id FROM credentials WHERE name_key = 'legacy-box'").get() as { id: number };
    const now = new Date().toISOString();
    t.db
      .prepare(
        `INSERT INTO servers (name, name_key, server_type, host_name, port, credentials_id, host_key_sha256, root_path,
                              created_at, modified_at) VALUES ('web-7', 'web-7', 'ssh', 'h', 22, ?, 'x', '/srv', ?, ?)`,
      )
      .run(id, now, now);
    const refused = await send("POST", `${BASE}/delete/legacy-box`);
    expect(refused.statusCode).toBe(409);
    expect(refused.headers["x-wharf-error"]).toBe("CREDENTIAL_IN_USE");
    expect(refused.body).toContain("used by server web-7");
    t.db.prepare("DELETE FROM servers WHERE name_key = 'web-7'").run();
    const deleted = await send("DELETE", `${BASE}/delete/legacy-box`);
    expect(deleted.statusCode).toBe(200);
    expect(deleted.body).toBe("");
    expect((await send("POST", `${BASE}/delete/legacy-box`)).statusCode).toBe(404);
  });

  it("needs the infrastructure scope, and Manage to write", async () => {
    const other = await createSystemKey(t.database, ["feeds"]);
    expect((await send("GET", `${BASE}/list`, undefined, other)).statusCode).toBe(403);
    expect((await send("POST", `${BASE}/create/x1`, { userName: "u", password: "p" }, other)).statusCode).toBe(403);
    const infra = await createSystemKey(t.database, ["infrastructure"]);
    expect((await send("GET", `${BASE}/list`, undefined, infra)).statusCode).toBe(200);
    const anonymous = await t.app.inject({ method: "GET", url: `${BASE}/list` });
    expect([401, 403]).toContain(anonymous.statusCode);
  });

  it("wharf credentials: create from a key file or standard input, list, delete; never prints a secret", async () => {
    const lines: string[] = [];
    const keyFile = path.join(t.dataDir, "id_test");
    await writeFile(keyFile, privateKey, { mode: 0o600 });
    const cli = (args: string[], stdin = "") =>
      credentialsCommand(args, {
        db: t.db,
        clock: systemClock,
        config: t.config,
        out: (line) => lines.push(line),
        err: (line) => lines.push(`ERR ${line}`),
        readStdin: async () => stdin,
      });
    expect(await cli(["create", "cli-key", "--user", "ops", "--private-key-file", keyFile])).toBe(0);
    expect(await cli(["create", "cli-pw", "--user", "ops", "--password-stdin"], `${PASSWORD}\n`)).toBe(0);
    expect(await cli(["update", "cli-pw", "--user", "ops2"])).toBe(0);
    expect(await cli(["list"])).toBe(0);
    expect(await cli(["create", "cli-x", "--user", "ops"])).toBe(2);
    expect(await cli(["create", "cli-x", "--user", "ops", "--private-key-file", "/no/such/file"])).toBe(2);
    expect(await cli(["delete", "cli-key"])).toBe(0);
    expect(await cli(["delete", "cli-key"])).toBe(1);
    const output = lines.join("\n");
    expect(output).toMatch(/cli-pw\s+ssh-password\s+ops2/);
    expect(output).toMatch(/cli-key\s+ssh-key\s+ops/);
    expect(output).toContain("Deleted credential 'cli-key'.");
    expectNoSecret(output);
    const store = createCredentialsStore(createCredentialsRepository(t.db), loadSecretKeys(t.config).box);
    const stored = await store.findByName("cli-pw");
    expect(await store.open(stored?.id as number)).toEqual({ userName: "ops2", password: PASSWORD });
  });

  it("never logs a secret", () => {
    expect(logs.length).toBeGreaterThan(0);
    expectNoSecret(logs.join("\n"));
  });
});

describe.skipIf(skipSshTests)("stored credentials reaching a real OpenSSH server", () => {
  let t: TestApp;
  let sshd: SshServer;

  beforeAll(async () => {
    sshd = await startSshd();
    t = await buildTestApp();
  });
  afterAll(async () => {
    await t?.close();
    await sshd?.stop();
  });

  it("logs in with the stored key of an ssh server created through the API, whose host key was pinned", async () => {
    const headers = { "x-apikey": t.adminKey };
    const created = await t.app.inject({
      method: "POST",
      url: `${BASE}/create/test-sshd`,
      headers,
      payload: { userName: sshd.userName, privateKey: sshd.privateKey },
    });
    expect(created.statusCode, created.body).toBe(201);
    const server = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/create/ssh-box",
      headers,
      payload: {
        serverType: "ssh",
        hostName: sshd.host,
        port: sshd.port,
        credentialsName: "test-sshd",
        rootPath: `${sshd.root}/box`,
      },
    });
    expect(server.statusCode, server.body).toBe(201);
    const row = t.db
      .prepare("SELECT credentials_id, host_key_sha256 FROM servers WHERE name_key = 'ssh-box'")
      .get() as { credentials_id: number; host_key_sha256: string };
    expect(row.host_key_sha256).toBe(sshd.hostKeySha256);

    const store = createCredentialsStore(createCredentialsRepository(t.db), loadSecretKeys(t.config).box);
    const credential = await store.open(row.credentials_id);
    const executor = await openSshExecutor({
      host: sshd.host,
      port: sshd.port,
      ...credential,
      hostKeySha256: row.host_key_sha256,
      root: `${sshd.root}/box`,
      timeoutMs: 5000,
    });
    try {
      await executor.writeFileAtomic("/hello.txt", Buffer.from("hi\n"));
      expect(await executor.readFile("/hello.txt", 10)).toEqual(Buffer.from("hi\n"));
    } finally {
      await executor.close();
    }
    const inUse = await t.app.inject({ method: "POST", url: `${BASE}/delete/test-sshd`, headers });
    expect(inUse.statusCode).toBe(409);
    expect(inUse.body).toContain("ssh-box");
  });
});

describe("stored credentials across a secret key rotation", () => {
  const newKey = () => randomBytes(32).toString("base64");
  const secretOf = (db: Db) =>
    (db.prepare("SELECT secret FROM credentials WHERE name_key = 'rotated'").get() as { secret: string }).secret;
  const keyIdOf = (sealed: string) => sealed.split(":")[1];

  /** A Wharf on `dataDir` as a restart builds it: the data stays. */
  async function started(dataDir: string, env: Record<string, string>) {
    const config = loadConfig({ WHARF_DATA_DIR: dataDir, WHARF_LOG_LEVEL: "silent", ...env });
    const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
    const adminKey = `admin-${randomBytes(8).toString("hex")}`;
    bootstrapAdminKey(db, dataDir, adminKey, systemClock);
    const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), logger: false });
    await app.ready();
    const store = createCredentialsStore(createCredentialsRepository(db), loadSecretKeys(config).box);
    return {
      app,
      db,
      store,
      adminKey,
      async close() {
        await app.close();
        db.close();
      },
    };
  }

  it("re-seals under the new key at start (the old one given as previous), and still opens", async () => {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), "wharf-cred-rotation-"));
    try {
      const [a, b] = [newKey(), newKey()];
      const first = await started(dataDir, { WHARF_SECRET_KEY: a });
      const created = await first.app.inject({
        method: "POST",
        url: `${BASE}/create/rotated`,
        headers: { "x-apikey": first.adminKey },
        payload: { userName: "ops", password: PASSWORD },
      });
      expect(created.statusCode, created.body).toBe(201);
      const underA = keyIdOf(secretOf(first.db));
      await first.close();

      const rotated = await started(dataDir, { WHARF_SECRET_KEY: b, WHARF_SECRET_KEY_PREVIOUS: a });
      const underB = keyIdOf(secretOf(rotated.db));
      expect(underB).not.toBe(underA);
      const { id } = (await rotated.store.findByName("rotated")) as { id: number };
      expect(await rotated.store.open(id)).toEqual({ userName: "ops", password: PASSWORD });
      await rotated.close();

      // Without any key that sealed it, opening says so (503 CREDENTIAL_UNREADABLE), naming no secret.
      const lost = await started(dataDir, { WHARF_SECRET_KEY: newKey() });
      const failure = await lost.store.open(id).catch((error: unknown) => error);
      expect(failure).toMatchObject({ code: "CREDENTIAL_UNREADABLE" });
      expect((failure as Error).message).toContain("'rotated'");
      expect((failure as Error).message).not.toContain(PASSWORD);
      await lost.close();
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});
