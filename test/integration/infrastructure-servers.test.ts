import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createInfrastructureRepository } from "../../src/areas/configuration/infrastructure-repository.js";
import { createPostgresInfrastructureRepository } from "../../src/areas/configuration/infrastructure-repository-postgres.js";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { byDatabase } from "../../src/storage/metadata-db.js";
import { loadSecretKeys } from "../../src/storage/secret-keys.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { createSystemKey, execute, readAll, readOne } from "../helpers/fixtures.js";
import { skipSshTests, startSshd } from "../helpers/sshd.js";
import { expectJson, expectText } from "../helpers/responses.js";

/** `/api/infrastructure/servers/...` (docs/compat.md 8.2; issue 13 section 1). */
let t: TestApp;
let deployRoot: string;
let outside: string;
type Json = Record<string, unknown>;

beforeAll(async () => {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-infra-")));
  deployRoot = path.join(base, "deploy");
  outside = path.join(base, "outside");
  await fs.mkdir(deployRoot);
  await fs.mkdir(outside);
  await fs.symlink(outside, path.join(deployRoot, "escape"));
  t = await buildTestApp({ env: { WHARF_DEPLOY_ROOT: deployRoot } });
  // A stored credential for ssh servers (the credentials API is tested with it, config-ssh-credentials).
  const now = new Date().toISOString();
  await execute(
    t.database,
    "INSERT INTO credentials (name, name_key, kind, user_name, secret, created_at, modified_at) VALUES ('deploy', 'deploy', 'ssh-password', 'u', 'x', ?, ?)",
    [now, now],
  );
});
afterAll(async () => {
  await t.close();
  await fs.rm(path.dirname(deployRoot), { recursive: true, force: true });
});

const send = (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, key = t.adminKey) =>
  t.app.inject({
    method,
    url,
    headers: { "x-apikey": key, ...(payload !== undefined && { "content-type": "application/json" }) },
    ...(payload !== undefined && { payload: JSON.stringify(payload) }),
  });
const create = (name: string, body: unknown) => send("POST", `/api/infrastructure/servers/create/${name}`, body);
const update = (name: string, body: unknown) => send("POST", `/api/infrastructure/servers/update/${name}`, body);
const local = (dir: string, more: Json = {}) => ({
  serverType: "local",
  rootPath: path.join(deployRoot, dir),
  ...more,
});

describe("local servers", () => {
  it("creates, lists (GET and POST, ?name=), updates partially, renames and deletes", async () => {
    await send("POST", "/api/infrastructure/environments/create/Prod", {});
    await send("POST", "/api/infrastructure/roles/create/web", {});
    const created = expectJson(
      await create("web1", local("web1", { roles: ["web"], environments: ["prod"], drift: "automaticallyRemediate" })),
      201,
    ) as Json;
    expect(created).toEqual({
      name: "web1",
      serverType: "local",
      drift: "automaticallyRedmediate",
      active: true,
      roles: ["web"],
      environments: ["Prod"],
      variables: {},
      rootPath: path.join(deployRoot, "web1"),
      items: [],
    });
    const listed = expectJson(await send("GET", "/api/infrastructure/servers/list")) as Json[];
    expect(listed.map((s) => s.name)).toContain("web1");
    expect(expectJson(await send("POST", "/api/infrastructure/servers/list?name=WEB1"))).toEqual([created]);
    expectText(await send("GET", "/api/infrastructure/servers/list?name=nope"), 404, "nope");

    const updated = expectJson(await update("web1", { active: false, drift: "reportOnly" })) as Json;
    expect(updated).toEqual({ ...created, active: false, drift: "reportOnly" });
    const renamed = expectJson(await update("web1", { name: "web-one" })) as Json;
    expect(renamed).toMatchObject({ name: "web-one", active: false, roles: ["web"], environments: ["Prod"] });
    expectText(await update("web1", {}), 404, "web1");

    // Deleting an environment drops its server memberships (one table, one API).
    await send("POST", "/api/infrastructure/environments/delete/Prod");
    expect(expectJson(await send("GET", "/api/infrastructure/servers/list?name=web-one"))).toEqual([
      expect.objectContaining({ environments: [] }),
    ]);

    const deleted = await send("DELETE", "/api/infrastructure/servers/delete/web-one");
    expect(deleted.statusCode).toBe(200);
    expect(deleted.body).toBe("");
    expectText(await send("POST", "/api/infrastructure/servers/delete/web-one"), 404);
  });

  it("keeps the name rules, refuses duplicates and missing references with text", async () => {
    for (const bad of ["1abc", "ab-", "a_", "a.b", "x".repeat(51)]) {
      expectText(await create(bad, local("n")), 400, "Invalid server name");
    }
    expect((await create("x".repeat(50), local("long"))).statusCode).toBe(201);
    expect((await create("dup", local("dup"))).statusCode).toBe(201);
    expectText(await create("DUP", local("dup")), 409, "already exists");
    expectText(await create("r1", local("r1", { roles: ["ghost"] })), 422, "The role 'ghost' does not exist.");
    expectText(await create("r2", local("r2", { environments: ["ghost"] })), 422, "environment 'ghost'");
    expectText(await update("dup", { roles: ["ghost"] }), 422, "ghost");
    expectText(await create("w", { serverType: "windows" }), 422, "Wharf does not support 'windows'");
    expectText(await create("p", { serverType: "PowerShell" }), 422, "'agent'");
    expectText(await create("q", { serverType: "vms" }), 400, "serverType");
    expectText(await create("q", { rootPath: "/x" }), 400, "serverType");
    expectText(await create("q", local("q", { drift: "sometimes" })), 400, "drift");
    // A body of another type is not an empty object.
    const text = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/create/q",
      headers: { "x-apikey": t.adminKey, "content-type": "text/plain" },
      payload: "serverType=local",
    });
    expectText(text, 415);
  });

  it("confines a local root to WHARF_DEPLOY_ROOT, symbolic links resolved", async () => {
    expectText(await create("out", { serverType: "local", rootPath: outside }), 422, "WHARF_DEPLOY_ROOT");
    expectText(await create("out", local("../outside")), 422, "not inside WHARF_DEPLOY_ROOT");
    expectText(await create("out", local("escape/sub")), 422, "symbolic links");
    expectText(await create("out", { serverType: "local", rootPath: "relative/dir" }), 400, "absolute");
    expectText(await create("out", { serverType: "local" }), 400, "rootPath");
    expect((await create("inside", local("a/b/c"))).statusCode).toBe(201);
    expectText(await update("inside", { rootPath: path.join(deployRoot, "escape") }), 422, "WHARF_DEPLOY_ROOT");
  });

  it("without WHARF_DEPLOY_ROOT refuses local servers naming the setting", async () => {
    const other = await buildTestApp();
    try {
      const res = await other.app.inject({
        method: "POST",
        url: "/api/infrastructure/servers/create/l",
        headers: { "x-apikey": other.adminKey, "content-type": "application/json" },
        payload: JSON.stringify({ serverType: "local", rootPath: "/srv/x" }),
      });
      expectText(res, 422, "WHARF_DEPLOY_ROOT");
    } finally {
      await other.close();
    }
  });

  it("hides sensitive variables, keeps them on a round trip, and replaces items", async () => {
    const created = expectJson(
      await create(
        "vars",
        local("vars", {
          variables: { Port: "8080", Password: { value: "s3cret-value", sensitive: true } },
          items: [
            { type: "directory", path: "/app" },
            { type: "file", path: "/app/secret.conf", content: "hidden-content", sensitive: true },
          ],
        }),
      ),
      201,
    ) as Json;
    expect(created.variables).toEqual({ Port: "8080", Password: { value: null, sensitive: true } });
    const items = created.items as Json[];
    expect(items.map((i) => i.type)).toEqual(["directory", "file"]);
    const all = JSON.stringify(expectJson(await send("GET", "/api/infrastructure/servers/list")));
    expect(all).not.toContain("s3cret-value");
    expect(all).not.toContain("hidden-content");
    // The stored item seals the content; the stored variable keeps the value for templates.
    const definitions = await readAll<{ definition: string }>(t.database, "SELECT definition FROM config_items");
    expect(JSON.stringify(definitions)).not.toContain("hidden-content");

    const roundTrip = expectJson(await update("vars", { variables: created.variables, items: [] })) as Json;
    expect(roundTrip.variables).toEqual(created.variables);
    expect(roundTrip.items).toEqual([]);
    // Stored sealed with the data directory's key; the runtime's reads open it for templates.
    const row = await readOne<{ id: number; variables: string }>(
      t.database,
      "SELECT id, variables FROM servers WHERE name_key = 'vars'",
    );
    expect(row?.variables).not.toContain("s3cret-value");
    expect(JSON.parse(row?.variables ?? "{}")).toMatchObject({ Port: "8080", Password: { sensitive: true } });
    const secrets = loadSecretKeys(t.config).box;
    const runtime = byDatabase(
      t.database,
      (sqlite) => createInfrastructureRepository(sqlite, secrets),
      (postgres) => createPostgresInfrastructureRepository(postgres, secrets),
    );
    expect(await runtime.serverVariables(row?.id ?? 0)).toEqual(
      new Map([
        ["Port", { value: "8080", sensitive: false }],
        ["Password", { value: "s3cret-value", sensitive: true }],
      ]),
    );
    expectText(await update("vars", { items: [{ type: "file", path: "../etc/passwd" }] }), 400, "items[0]");
    expectText(await update("vars", { variables: { "bad name!": "x" } }), 400, "bad name!");
  });
});

describe("agent servers", () => {
  it("shows the key once, stores only its hash, issues a new one and revokes it", async () => {
    const created = expectJson(await create("agent1", { serverType: "agent" }), 201) as Json;
    const key = created.agentKey as string;
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({ serverType: "agent", agentConnected: false });
    const row = async () =>
      (
        await readOne<{ agent_key_hash: string | null }>(
          t.database,
          "SELECT agent_key_hash FROM servers WHERE name_key = 'agent1'",
        )
      )?.agent_key_hash;
    expect(await row()).toBe(hashApiKey(key));
    expect(JSON.stringify(await readAll(t.database, "SELECT * FROM servers"))).not.toContain(key);
    const listed = expectJson(await send("GET", "/api/infrastructure/servers/list?name=agent1")) as Json[];
    expect(listed[0]).not.toHaveProperty("agentKey");
    expect(JSON.stringify(listed)).not.toContain(key);

    const issued = await send("POST", "/api/infrastructure/servers/agent-key/agent1");
    expect(issued.statusCode).toBe(200);
    expect(issued.headers["content-type"]).toMatch(/^text\/plain/);
    expect(issued.body).not.toBe(key);
    expect(await row()).toBe(hashApiKey(issued.body));

    const revoked = await send("POST", "/api/infrastructure/servers/revoke-agent-key/agent1");
    expect(revoked.statusCode).toBe(200);
    expect(revoked.body).toBe("");
    expect(await row()).toBeNull();
    expectText(await send("POST", "/api/infrastructure/servers/agent-key/nope"), 404);
    expect((await create("plain", local("plain"))).statusCode).toBe(201);
    expectText(await send("POST", "/api/infrastructure/servers/agent-key/plain"), 422, "not an agent");
  });

  it("shows when the agent was last seen, its version, and whether it is connected", async () => {
    expect((await create("seen", { serverType: "agent" })).statusCode).toBe(201);
    const show = async () => (expectJson(await send("GET", "/api/infrastructure/servers/list?name=seen")) as Json[])[0];
    const recently = new Date(Date.now() - 5_000).toISOString();
    await execute(
      t.database,
      "UPDATE servers SET agent_last_seen_at = ?, agent_version = '1.2.3' WHERE name_key = 'seen'",
      [recently],
    );
    expect(await show()).toMatchObject({
      agentConnected: true,
      agentLastSeen: recently.slice(0, 19),
      agentVersion: "1.2.3",
    });
    const longAgo = new Date(Date.now() - t.config.agentOfflineMs - 60_000).toISOString();
    await execute(t.database, "UPDATE servers SET agent_last_seen_at = ? WHERE name_key = 'seen'", [longAgo]);
    expect(await show()).toMatchObject({ agentConnected: false, agentLastSeen: longAgo.slice(0, 19) });
  });

  it("the agent protocol takes the current key only: an old or revoked one is refused", async () => {
    const created = expectJson(await create("agent3", { serverType: "agent" }), 201) as Json;
    const poll = (key: string) =>
      t.app.inject({ method: "GET", url: "/api/agent/v1/poll?wait=0", headers: { authorization: `Bearer ${key}` } });
    expect([200, 204]).toContain((await poll(created.agentKey as string)).statusCode);
    const renewed = (await send("POST", "/api/infrastructure/servers/agent-key/agent3")).body;
    expect((await poll(created.agentKey as string)).statusCode).toBe(403);
    expect([200, 204]).toContain((await poll(renewed)).statusCode);
    await send("POST", "/api/infrastructure/servers/revoke-agent-key/agent3");
    expect((await poll(renewed)).statusCode).toBe(403);
  });

  it("an agent key is no API key", async () => {
    const created = expectJson(await create("agent2", { serverType: "agent" }), 201) as Json;
    const res = await send("GET", "/api/infrastructure/servers/list", undefined, created.agentKey as string);
    expect([401, 403]).toContain(res.statusCode);
  });
});

describe("ssh servers", () => {
  it("needs a host, a credential that exists and a root; an unreachable host is 422", async () => {
    expectText(await create("s1", { serverType: "ssh", credentialsName: "c", rootPath: "/srv" }), 400, "hostName");
    expectText(
      await create("s1", { serverType: "ssh", hostName: "127.0.0.1", rootPath: "/srv" }),
      400,
      "credentialsName",
    );
    expectText(
      await create("s1", { serverType: "ssh", hostName: "127.0.0.1", credentialsName: "ghost", rootPath: "/srv" }),
      422,
      "credentials 'ghost'",
    );
    const ssh = { serverType: "ssh", hostName: "127.0.0.1", port: 1, credentialsName: "deploy", rootPath: "/srv/app/" };
    expectText(await create("s1", { ...ssh, rootPath: "/srv/../etc" }), 400, "rootPath");
    expectText(await create("s1", ssh), 422, "127.0.0.1:1");
    const pinned = "A".repeat(43);
    const created = expectJson(
      await create("s1", { ...ssh, hostKeySha256: `SHA256:${pinned}`, credentialsType: "x" }),
      201,
    );
    expect(created).toMatchObject({
      serverType: "ssh",
      hostName: "127.0.0.1",
      port: 1,
      credentialsName: "deploy",
      rootPath: "/srv/app",
      hostKeySha256: pinned,
    });
    expectText(await create("s2", { ...ssh, hostKeySha256: "short" }), 400, "hostKeySha256");
  });
});

describe("ssh host key pinning against a real OpenSSH", () => {
  it.skipIf(skipSshTests)("reads and pins the host key on creation, and again when the host moves", async () => {
    const sshd = await startSshd();
    try {
      const ssh = {
        serverType: "ssh",
        hostName: sshd.host,
        port: sshd.port,
        credentialsName: "deploy",
        rootPath: sshd.root,
      };
      const created = expectJson(await create("pinned", ssh), 201) as Json;
      expect(created.hostKeySha256).toBe(sshd.hostKeySha256);
      // An update that names another key keeps it; one that moves the server reads the new host's key.
      const other = "B".repeat(43);
      expect(expectJson(await update("pinned", { hostKeySha256: other }))).toMatchObject({ hostKeySha256: other });
      expect(expectJson(await update("pinned", { active: false }))).toMatchObject({ hostKeySha256: other });
      expectText(await update("pinned", { port: 1 }), 422, "host key");
      expect(expectJson(await update("pinned", { hostKeySha256: null }))).toMatchObject({
        hostKeySha256: sshd.hostKeySha256,
      });
    } finally {
      await sshd.stop();
    }
  });
});

describe("more server rules", () => {
  it("creates with the name in the body, confines a local tempPath, and gives a server turned agent a key", async () => {
    const created = await send("POST", "/api/infrastructure/servers/create", { name: "bodyname", ...local("bn") });
    expect(expectJson(created, 201)).toMatchObject({ name: "bodyname" });
    expectText(await send("POST", "/api/infrastructure/servers/create", local("nn")), 400, "name");
    expectText(await update("bodyname", { tempPath: "/tmp" }), 422, "tempPath");
    expect(expectJson(await update("bodyname", { tempPath: path.join(deployRoot, "tmp") }))).toMatchObject({
      tempPath: path.join(deployRoot, "tmp"),
    });
    const agent = expectJson(await update("bodyname", { serverType: "agent" })) as Json;
    expect(agent).toMatchObject({ serverType: "agent", agentConnected: false });
    expect(agent).not.toHaveProperty("rootPath");
    expect(agent.agentKey).toEqual(expect.any(String));
    const keyHash = async () =>
      (
        await readOne<{ agent_key_hash: string | null }>(
          t.database,
          "SELECT agent_key_hash FROM servers WHERE name_key = 'bodyname'",
        )
      )?.agent_key_hash;
    expect(await keyHash()).toBe(hashApiKey(agent.agentKey as string));
    const back = expectJson(await update("bodyname", local("bn"))) as Json;
    expect(back).not.toHaveProperty("agentKey");
    expect(await keyHash()).toBeNull();
  });
});

describe("access", () => {
  it("needs the infrastructure scope (or full control)", async () => {
    const feeds = await createSystemKey(t.database, ["feeds"]);
    const infra = await createSystemKey(t.database, ["infrastructure"]);
    expectText(await send("GET", "/api/infrastructure/servers/list", undefined, feeds), 403);
    expectText(await send("POST", "/api/infrastructure/servers/create/k1", local("k1"), feeds), 403);
    expect((await send("GET", "/api/infrastructure/servers/list", undefined, infra)).statusCode).toBe(200);
    expect((await send("POST", "/api/infrastructure/servers/create/k1", local("k1"), infra)).statusCode).toBe(201);
    const anonymous = await t.app.inject({ method: "GET", url: "/api/infrastructure/servers/list" });
    expect([401, 403]).toContain(anonymous.statusCode);
  });
});
