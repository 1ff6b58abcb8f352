import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_JSON_TYPE } from "../../src/agent/protocol.js";
import { type AgentProcess, type CompiledCli, compileCli, runCli, startAgent } from "../helpers/agent-process.js";
import { buildTestApp, type TestApp } from "../helpers/app.js";
import { readAll, readOne } from "../helpers/fixtures.js";
import { testsRunOnPostgres } from "../helpers/postgres-test-app.js";
import { buildUpack } from "../helpers/upack-fixtures.js";

/**
 * The agent (issue 13 sections 3 and 5): real `wharf agent` child processes, each with its own
 * root, against one Wharf listening on 127.0.0.1; checks and remediations asked through the
 * configuration API; drift made from outside in the agents' roots; an agent killed in the middle
 * of a remediation; a revoked key. The protocol's refusals are asked in-process (inject).
 */

/** Short lease and offline time: an agent killed is noticed in seconds (still enough for a loaded 2-core machine). */
const ENV = { WHARF_AGENT_LEASE_SECONDS: "4", WHARF_AGENT_OFFLINE_SECONDS: "5" };

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

async function createAgentServer(t: TestApp, name: string, items: readonly object[]): Promise<string> {
  const response = await t.app.inject({
    method: "POST",
    url: `/api/infrastructure/servers/create/${name}`,
    headers: { "x-apikey": t.adminKey },
    payload: { serverType: "agent", drift: "reportOnly", items },
  });
  expect(response.statusCode, response.body).toBe(201);
  const key = (response.json() as { agentKey?: unknown }).agentKey;
  expect(typeof key).toBe("string");
  return key as string;
}

async function api(t: TestApp, url: string): Promise<{ status: number; body: string }> {
  const response = await t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey } });
  return { status: response.statusCode, body: response.body };
}

interface ServerStatus {
  status: string;
  errorText?: string;
  latestCollectionId?: number;
}

async function statusOf(t: TestApp, server: string): Promise<ServerStatus> {
  const { status, body } = await api(t, `/api/configuration/status?server=${server}`);
  expect(status, body).toBe(200);
  return JSON.parse(body) as ServerStatus;
}

/** Polls `read` every 25 ms until `done` accepts its value; the last value on timeout in the message. */
async function waitFor<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Asks for a check and waits until a new collection is in (not executing); answers the status and the time taken. */
async function check(t: TestApp, server: string, timeoutMs = 5000): Promise<{ status: ServerStatus; ms: number }> {
  const before = (await statusOf(t, server)).latestCollectionId ?? 0;
  const started = performance.now();
  const asked = await api(t, `/api/configuration/check?server=${server}`);
  expect(asked.status, asked.body).toBe(200);
  const status = await waitFor(
    () => statusOf(t, server),
    (s) => s.status !== "executing" && (s.latestCollectionId ?? 0) > before,
    timeoutMs,
  );
  return { status, ms: performance.now() - started };
}

/** The messages of the job's log, in order. */
async function jobLog(t: TestApp, jobId: number): Promise<string[]> {
  const rows = await readAll<{ message: string }>(
    t.database,
    "SELECT message FROM job_log WHERE job_id = ? ORDER BY id",
    jobId,
  );
  return rows.map((row) => row.message);
}

/**
 * Until the server's agent holds a poll. In a cluster the hold is a row (agent_polls), taken a
 * round trip after the poll arrives, and the test can see it; on one machine the hub's memory
 * holds it as the request arrives, with no database round trip: a moment is enough.
 */
async function untilPollHeld(t: TestApp, server: string): Promise<void> {
  if (!testsRunOnPostgres()) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    return;
  }
  await waitFor(
    () =>
      readAll(
        t.database,
        "SELECT 1 FROM agent_polls JOIN servers ON servers.id = agent_polls.server_id WHERE servers.name = ?",
        server,
      ),
    (rows) => rows.length === 1,
    5000,
  );
}

interface ServerItem {
  type: string;
  key: string;
  status: string;
}

async function itemsOf(t: TestApp, server: string): Promise<ServerItem[]> {
  const { status, body } = await api(t, `/api/configuration/server/${server}`);
  expect(status, body).toBe(200);
  return JSON.parse(body) as ServerItem[];
}

/** Remediates through the API and waits for the job's end; answers its final word. */
async function remediate(t: TestApp, server: string, timeoutMs = 10_000): Promise<string> {
  const asked = await api(t, `/api/configuration/remediate/server/${server}`);
  expect(asked.status, asked.body).toBe(200);
  return waitFor(
    async () => (await api(t, `/api/configuration/remediate/status?token=${asked.body}`)).body,
    (word) => word !== "pending" && word !== "running",
    timeoutMs,
  );
}

/** A universal feed `apps` with acme/site 1.0.0 and 1.1.0, and acme/other 1.0.0 (no item names it). */
async function publishPackages(t: TestApp): Promise<void> {
  const feed = await t.app.inject({
    method: "POST",
    url: "/api/management/feeds/create",
    headers: { "x-apikey": t.adminKey },
    payload: { name: "apps", feedType: "universal" },
  });
  expect(feed.statusCode, feed.body).toBe(201);
  for (const [name, version] of [
    ["site", "1.0.0"],
    ["site", "1.1.0"],
    ["other", "1.0.0"],
  ] as const) {
    const bytes = await buildUpack({
      group: "acme",
      name,
      version,
      files: { "index.html": `<h1>${name} ${version}</h1>`, "css/app.css": "body{}" },
    });
    const upload = await t.app.inject({
      method: "PUT",
      url: "/upack/apps/upload",
      headers: { "x-apikey": t.adminKey, "content-type": "application/zip" },
      payload: bytes,
    });
    expect(upload.statusCode, upload.body).toBe(201);
  }
}

const SITE = { type: "package", feed: "apps", group: "acme", name: "site", version: "latest", target: "/srv/site" };

const APP_CONF = "port=8080\nname=web\n";
const MOTD = "Managed by Wharf\n";
const ITEMS = [
  { type: "directory", path: "/etc", mode: "0755" },
  { type: "file", path: "/etc/app.conf", content: APP_CONF, mode: "0640" },
  { type: "file", path: "/etc/motd", contentBase64: Buffer.from(MOTD).toString("base64"), mode: "0644" },
  { type: "directory", path: "/var/data", mode: "0750" },
];

describe("the agent protocol's refusals", () => {
  let t: TestApp;
  let key: string;

  beforeAll(async () => {
    t = await buildTestApp({ env: ENV });
    key = await createAgentServer(t, "refusals-1", ITEMS);
  });
  afterAll(() => t.close());

  const poll = (headers: Record<string, string>, wait = 0) =>
    t.app.inject({ method: "GET", url: `/api/agent/v1/poll?wait=${wait}`, headers });

  it("answers an agent's poll with its server's name, and records when it was seen and its version", async () => {
    const response = await poll({ authorization: `Bearer ${key}`, "user-agent": "wharf-agent/9.8.7" });
    expect(response.statusCode, response.body).toBe(204);
    expect(response.headers["x-wharf-agent-server"]).toBe("refusals-1");
    // Presence is bookkeeping, written beside the poll: on a cluster node it may land just after the answer.
    const seen = () =>
      readOne<{ agent_last_seen_at: string | null; agent_version: string | null }>(
        t.database,
        "SELECT agent_last_seen_at, agent_version FROM servers WHERE name = ?",
        "refusals-1",
      );
    await expect.poll(async () => (await seen())?.agent_version, { timeout: 5000 }).toBe("9.8.7");
    const row = await seen();
    expect(Date.now() - Date.parse(row?.agent_last_seen_at ?? "")).toBeLessThan(5000);
  });

  it("refuses a missing key (401, Bearer) and an unknown one (403), in plain text", async () => {
    const missing = await poll({});
    expect(missing.statusCode).toBe(401);
    expect(missing.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(missing.headers["content-type"]).toBe("text/plain");
    expect(missing.body).toMatch(/Authorization: Bearer/);
    const unknown = await poll({ authorization: "Bearer not-a-key" });
    expect(unknown.statusCode).toBe(403);
    expect(unknown.headers["x-wharf-error"]).toBe("AGENT_KEY_INVALID");
    expect(unknown.body).toMatch(/revoked or never issued/);
    // An API key (the admin's) is no agent key.
    expect((await poll({ authorization: `Bearer ${t.adminKey}` })).statusCode).toBe(403);
  });

  it("takes an agent key on no other API: it is an unknown API key there (X-ApiKey, key=, Basic)", async () => {
    const basic = `Basic ${Buffer.from(`api:${key}`).toString("base64")}`;
    const asked = [
      { url: "/api/management/feeds/list", headers: { "x-apikey": key } },
      { url: `/api/management/feeds/list?key=${key}`, headers: {} },
      { url: "/api/management/feeds/list", headers: { authorization: basic } },
      { url: "/api/configuration/status?server=refusals-1", headers: { "x-apikey": key } },
      { url: `/api/configuration/check?server=refusals-1&key=${key}`, headers: {} },
      { url: "/api/infrastructure/servers/list", headers: { "x-apikey": key } },
    ];
    for (const { url, headers } of asked) {
      const response = await t.app.inject({ method: "GET", url, headers });
      expect(response.statusCode, `${url}: ${response.body}`).toBe(403);
    }
    // As Bearer, the other APIs do not read it at all: Anonymous, who may do none of this.
    const bearer = await t.app.inject({
      method: "GET",
      url: "/api/infrastructure/servers/list",
      headers: { authorization: `Bearer ${key}` },
    });
    expect([401, 403]).toContain(bearer.statusCode);
  });

  it("holds one poll per server: a second connection with the same key is refused while the first waits", async () => {
    const first = poll({ authorization: `Bearer ${key}` }, 2);
    await untilPollHeld(t, "refusals-1");
    const second = await poll({ authorization: `Bearer ${key}` });
    expect(second.statusCode).toBe(409);
    expect(second.body).toMatch(/Another agent is already connected/);
    expect((await first).statusCode).toBe(204);
  });

  it("bounds what an agent posts: malformed 400, too many or too large 400/413, unknown work 404, never a 500", async () => {
    const id = "00000000-0000-4000-8000-000000000000";
    const post = (what: "log" | "result", body: string | Buffer) =>
      t.app.inject({
        method: "POST",
        url: `/api/agent/v1/work/${id}/${what}`,
        headers: { authorization: `Bearer ${key}`, "content-type": AGENT_JSON_TYPE },
        payload: body,
      });
    expect((await post("result", "{not json")).statusCode).toBe(400);
    const badStatus = await post(
      "result",
      JSON.stringify({
        results: [{ type: "file", key: "/a", role: null, status: "fine", differences: [] }],
        changes: [],
      }),
    );
    expect(badStatus.statusCode).toBe(400);
    expect(badStatus.body).toMatch(/results\[0\]\.status/);
    const many = {
      results: Array.from({ length: 100_001 }, (_, i) => ({
        type: "file",
        key: `/f${i}`,
        role: null,
        status: "current",
        differences: [],
      })),
      changes: [],
    };
    const tooMany = await post("result", JSON.stringify(many));
    expect(tooMany.statusCode, tooMany.body).toBe(400);
    const huge = await post("result", Buffer.alloc(33 * 1024 * 1024, 0x20));
    expect(huge.statusCode).toBe(413);
    const lines = { lines: [{ level: "shout", message: "x" }] };
    expect((await post("log", JSON.stringify(lines))).statusCode).toBe(400);
    const unknownWork = await post("result", JSON.stringify({ results: [], changes: [] }));
    expect(unknownWork.statusCode).toBe(404);
    expect(unknownWork.headers["x-wharf-error"]).toBe("AGENT_WORK_NOT_FOUND");
    expect((await post("log", JSON.stringify({ lines: [] }))).statusCode).toBe(404);
  });

  it("takes results and serves packages of its own work only", async () => {
    await publishPackages(t);
    const workKey = await createAgentServer(t, "refusals-4", [...ITEMS, SITE]);
    const otherKey = await createAgentServer(t, "refusals-5", ITEMS);
    const auth = { authorization: `Bearer ${workKey}` };
    // Seen once (else the check fails at once: never connected); then a check asked through the
    // API waits for this "agent" (inject) to poll.
    expect((await poll(auth)).statusCode).toBe(204);
    expect((await api(t, "/api/configuration/check?server=refusals-4")).status).toBe(200);
    const polled = await waitFor(
      () => poll(auth, 1),
      (response) => response.statusCode === 200,
      5000,
    );
    const [work] = (polled.json() as { work: { id: string; kind: string; items: { type: string; key: string }[] }[] })
      .work;
    expect(work?.kind).toBe("check");
    expect(work?.items.map((item) => item.key)).toContain("apps/acme/site::/srv/site");
    const id = work?.id ?? "";
    const get = (url: string, headers = auth) => t.app.inject({ method: "GET", url, headers });

    const resolved = await get(
      `/api/agent/v1/work/${id}/resolve?item=${encodeURIComponent("apps/acme/site::/srv/site")}`,
    );
    expect(resolved.statusCode, resolved.body).toBe(200);
    expect(resolved.json()).toMatchObject({ version: "1.1.0" });
    const upack = await get(
      `/api/agent/v1/work/${id}/package?item=${encodeURIComponent("apps/acme/site::/srv/site")}&version=1.0.0`,
    );
    expect(upack.statusCode).toBe(200);
    expect(upack.rawPayload.subarray(0, 2).toString("latin1")).toBe("PK");
    // No item names acme/other; another server's key sees none of this work.
    expect(
      (await get(`/api/agent/v1/work/${id}/package?item=${encodeURIComponent("apps/acme/other::/srv/site")}`))
        .statusCode,
    ).toBe(404);
    expect((await get(`/api/agent/v1/work/${id}/resolve?item=/etc/app.conf`)).statusCode).toBe(404);
    const stranger = { authorization: `Bearer ${otherKey}` };
    expect(
      (await get(`/api/agent/v1/work/${id}/resolve?item=${encodeURIComponent("apps/acme/site::/srv/site")}`, stranger))
        .statusCode,
    ).toBe(404);

    const post = (body: unknown, headers = auth) =>
      t.app.inject({
        method: "POST",
        url: `/api/agent/v1/work/${id}/result`,
        headers: { ...headers, "content-type": AGENT_JSON_TYPE },
        payload: JSON.stringify(body),
      });
    const foreign = await post({
      results: [{ type: "file", key: "/etc/shadow", role: null, status: "current", differences: [] }],
      changes: [],
    });
    expect(foreign.statusCode).toBe(400);
    expect(foreign.body).toMatch(/no file item '\/etc\/shadow'/);
    expect((await post({ results: [], changes: [] }, stranger)).statusCode).toBe(404);
    // One item reported drifted, the others not at all: unknown, "reported no result".
    const done = await post({
      results: [
        {
          type: "file",
          key: "/etc/app.conf",
          role: null,
          status: "drifted",
          differences: [{ property: "exists", desired: true, actual: false }],
        },
      ],
      changes: [],
    });
    expect(done.statusCode, done.body).toBe(204);
    const status = await waitFor(
      () => statusOf(t, "refusals-4"),
      (s) => s.status !== "executing" && s.latestCollectionId !== undefined,
      5000,
    );
    expect(status.status).toBe("drifted");
    const items = await itemsOf(t, "refusals-4");
    expect(items.find((item) => item.key === "/etc/app.conf")?.status).toBe("drifted");
    expect(items.find((item) => item.key === "/etc/motd")?.status).toBe("unknown");
    // Reported once: the work is gone.
    expect((await post({ results: [], changes: [] })).statusCode).toBe(404);
  });

  it("refuses a revoked key, and its server's checks fail at once saying so", async () => {
    await createAgentServer(t, "refusals-2", ITEMS);
    const issued = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/agent-key/refusals-2",
      headers: { "x-apikey": t.adminKey },
    });
    expect(issued.statusCode).toBe(200);
    const revoked = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/revoke-agent-key/refusals-2",
      headers: { "x-apikey": t.adminKey },
    });
    expect(revoked.statusCode).toBe(200);
    expect((await poll({ authorization: `Bearer ${issued.body}` })).statusCode).toBe(403);
    const { status } = await check(t, "refusals-2");
    expect(status.status).toBe("error");
    expect(status.errorText).toMatch(/no agent key/);
  });

  it("fails the check of a server whose agent never connected, at once", async () => {
    await createAgentServer(t, "refusals-3", ITEMS);
    const { status, ms } = await check(t, "refusals-3");
    expect(status.status).toBe("error");
    expect(status.errorText).toMatch(/The agent of server refusals-3 has never connected/);
    expect(ms).toBeLessThan(1000);
  });
});

describe("wharf agent processes", () => {
  let t: TestApp;
  let compiled: CompiledCli;
  let url: string;
  let scratch: string;
  const agents: AgentProcess[] = [];

  beforeAll(async () => {
    [t, compiled, scratch] = await Promise.all([
      buildTestApp({ env: ENV }),
      compileCli(),
      fs.mkdtemp(path.join(os.tmpdir(), "wharf-agents-")),
    ]);
    url = await t.app.listen({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await Promise.all(agents.map((agent) => agent.stop()));
    await t.close();
    await compiled.remove();
    await fs.rm(scratch, { recursive: true, force: true });
  });

  function start(name: string, key: string, options: { nodeArgs?: string[]; env?: Record<string, string> } = {}) {
    const agent = startAgent(compiled.cli, { server: url, key, root: path.join(scratch, name), ...options });
    agents.push(agent);
    return agent;
  }

  it("refuses plain http:// to another host, and starts with no key", async () => {
    const http = await runCli(compiled.cli, ["agent", "--server", "http://wharf.example.com", "--root", scratch], {
      WHARF_AGENT_KEY: "k",
    });
    expect(http.code).toBe(2);
    expect(http.output).toMatch(/refusing plain http:\/\/ to wharf\.example\.com/);
    const noKey = await runCli(compiled.cli, ["agent", "--server", url, "--root", scratch]);
    expect(noKey.code).toBe(2);
    expect(noKey.output).toMatch(/WHARF_AGENT_KEY/);
  });

  it("runs several agents at once: checks collected in a second or two, drift found and remediated byte for byte", async () => {
    const names = ["web-1", "web-2", "web-3"];
    const keys = await Promise.all(names.map((name) => createAgentServer(t, name, ITEMS)));
    const moduleLog = path.join(scratch, "modules.log");
    const started = names.map((name, i) =>
      start(
        name,
        keys[i] ?? "",
        // The last: it is stopped at the end, when the logger adds Node's own modules.
        i === 2 ? { nodeArgs: ["--import", compiled.moduleLogger], env: { WHARF_TEST_MODULE_LOG: moduleLog } } : {},
      ),
    );
    await Promise.all(
      started.map((agent, i) => agent.waitForOutput(new RegExp(`connected to .* as server ${names[i]}`))),
    );

    // The agent loads no server code (fastify, better-sqlite3), nor what an idle agent does not
    // need: zod (the item rules: Wharf validated the items), yauzl (until a package is installed).
    const modules = await fs.readFile(moduleLog, "utf8");
    expect(modules).toMatch(/src\/drift\/engine\.js/);
    expect(modules).not.toMatch(/node_modules\/(fastify|better-sqlite3|@fastify|undici|zod|yauzl)\//);
    expect(modules).not.toMatch(/src\/(config|drift\/items\/schema|storage\/zip)\.js/);

    // Empty roots: every file is missing (the roots themselves are made by the agents).
    const first = await Promise.all(names.map((name) => check(t, name)));
    for (const { status, ms } of first) {
      expect(status.status).toBe("drifted");
      expect(ms).toBeLessThan(2000);
    }
    expect(await Promise.all(names.map((name) => remediate(t, name)))).toEqual(["completed", "completed", "completed"]);
    for (const name of names) {
      const root = path.join(scratch, name);
      expect(await fs.readFile(path.join(root, "etc/app.conf"), "utf8")).toBe(APP_CONF);
      expect((await fs.stat(path.join(root, "etc/app.conf"))).mode & 0o7777).toBe(0o640);
      expect(await fs.readFile(path.join(root, "etc/motd"), "utf8")).toBe(MOTD);
      expect((await fs.stat(path.join(root, "var/data"))).mode & 0o7777).toBe(0o750);
      expect((await check(t, name)).status.status).toBe("current");
    }

    // Drift from outside, in web-2's root only: content, mode, a deleted file.
    const root = path.join(scratch, "web-2");
    await fs.writeFile(path.join(root, "etc/app.conf"), "port=9999\n");
    await fs.chmod(path.join(root, "var/data"), 0o777);
    await fs.rm(path.join(root, "etc/motd"));
    const drifted = await check(t, "web-2");
    expect(drifted.status.status).toBe("drifted");
    expect(drifted.ms).toBeLessThan(2000);
    const items = await itemsOf(t, "web-2");
    expect(
      items
        .filter((item) => item.status === "drifted")
        .map((item) => item.key)
        .sort(),
    ).toEqual(["/etc/app.conf", "/etc/motd", "/var/data"]);
    expect((await check(t, "web-1")).status.status).toBe("current");

    expect(await remediate(t, "web-2")).toBe("completed");
    expect(sha256(await fs.readFile(path.join(root, "etc/app.conf")))).toBe(sha256(APP_CONF));
    expect(sha256(await fs.readFile(path.join(root, "etc/motd")))).toBe(sha256(MOTD));
    expect((await fs.stat(path.join(root, "var/data"))).mode & 0o7777).toBe(0o750);
    expect((await statusOf(t, "web-2")).status).toBe("current");

    const versions = await readAll<{ agent_version: string }>(
      t.database,
      "SELECT agent_version FROM servers WHERE name LIKE 'web-%' ORDER BY name",
    );
    expect(versions.map((row) => row.agent_version)).toEqual(["0.1.0", "0.1.0", "0.1.0"]);

    // SIGTERM: exits 0, at once though a poll is held.
    const stopping = performance.now();
    expect(await started[2]?.stop()).toEqual({ code: 0, signal: null });
    expect(performance.now() - stopping).toBeLessThan(2000);

    // Nor Node's own copy of undici (which `import "node:http"` loads through http.WebSocket):
    // the module logger listed Node's modules when that agent exited.
    const internal = await fs.readFile(moduleLog, "utf8");
    expect(internal).toMatch(/^node-internal (internal\/)?http/m);
    expect(internal).not.toMatch(/^node-internal .*undici/m);
  });

  it("answers InedoCore's Remediate drift flow for an agent server: drifted after 3 s, remediated, current", async () => {
    const key = await createAgentServer(t, "inedo-1", [
      ...ITEMS,
      { type: "file", path: "/etc/secret.env", content: "TOKEN=s3cr3t-value\n", mode: "0600", sensitive: true },
    ]);
    const agent = start("inedo-1", key);
    await agent.waitForOutput(/connected to .* as server inedo-1/);
    const inedo = (url: string) =>
      t.app.inject({ method: "GET", url, headers: { "x-apikey": t.adminKey, "user-agent": "InedoCore/2.0" } });

    expect((await inedo("/api/configuration/check?server=inedo-1")).statusCode).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const status = (await inedo("/api/configuration/status?server=inedo-1")).json() as ServerStatus;
    expect(status).toMatchObject({ status: "drifted" });
    const token = (await inedo("/api/configuration/remediate/server/inedo-1")).body;
    expect(token).toMatch(/^\d+$/);
    let word = "";
    for (let polls = 0; polls < 100; polls++) {
      word = (await inedo(`/api/configuration/remediate/status?token=${token}`)).body;
      if (word !== "pending" && word !== "running") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(word).toBe("completed");
    expect(((await inedo("/api/configuration/status?server=inedo-1")).json() as ServerStatus).status).toBe("current");
    const root = path.join(scratch, "inedo-1");
    expect(await fs.readFile(path.join(root, "etc/secret.env"), "utf8")).toBe("TOKEN=s3cr3t-value\n");
    expect((await fs.stat(path.join(root, "etc/secret.env"))).mode & 0o7777).toBe(0o600);
    // The agent's log lines reached the job's log; the sensitive content did not, nor the agent's output.
    const log = (await jobLog(t, Number(token))).join("\n");
    expect(log).toContain("/etc/secret.env");
    expect(log).not.toContain("s3cr3t");
    expect(agent.output()).not.toContain("s3cr3t");
    expect(agent.output()).not.toContain(key);
    await agent.stop();
  });

  it("installs a package item from Wharf's feed into the agent's root", async () => {
    await publishPackages(t);
    const key = await createAgentServer(t, "pkg-1", [SITE]);
    const agent = start("pkg-1", key);
    await agent.waitForOutput(/connected to .* as server pkg-1/);
    expect((await check(t, "pkg-1")).status.status).toBe("drifted");
    expect(await remediate(t, "pkg-1")).toBe("completed");
    const root = path.join(scratch, "pkg-1");
    expect(await fs.readFile(path.join(root, "srv/site/index.html"), "utf8")).toBe("<h1>site 1.1.0</h1>");
    expect(await fs.readFile(path.join(root, "srv/site/css/app.css"), "utf8")).toBe("body{}");
    expect((await check(t, "pkg-1")).status.status).toBe("current");
    await fs.writeFile(path.join(root, "srv/site/index.html"), "defaced");
    expect((await check(t, "pkg-1")).status.status).toBe("drifted");
    await agent.stop();
  });

  it("fails the work of an agent killed in the middle of a remediation after the lease, and shows since when", async () => {
    // Small files, many of them: the remediation writes (and fsyncs) one after the other for a while.
    const count = 2000;
    const many = Array.from({ length: count }, (_, i) => ({
      type: "file",
      path: `/files/f${i}.txt`,
      content: `file ${i}\n`,
    }));
    const key = await createAgentServer(t, "doomed", [{ type: "directory", path: "/files" }, ...many]);
    const agent = start("doomed", key);
    await agent.waitForOutput(/connected to .* as server doomed/);
    expect((await check(t, "doomed")).status.status).toBe("drifted");

    const asked = await api(t, "/api/configuration/remediate/server/doomed");
    expect(asked.status, asked.body).toBe(200);
    // Killed by a watcher process of its own as soon as the first file is written: this process
    // (Wharf's event loop included) may be too busy to notice in time.
    const files = path.join(scratch, "doomed/files");
    const killer = await killWhenWritten(files, agent.pid);
    const killedAt = Date.now();
    await agent.exited;
    expect(killer.written).toBeGreaterThan(0);
    expect(killer.written).toBeLessThan(count);
    expect((await fs.readdir(files)).length).toBeLessThan(count);

    // The lease (4 s after the agent's last post) runs out: the job fails, the server is in error saying why.
    const word = await waitFor(
      async () => (await api(t, `/api/configuration/remediate/status?token=${asked.body}`)).body,
      (w) => w !== "pending" && w !== "running",
      10_000,
    );
    expect(word).toBe("faulted");
    expect((await jobLog(t, Number(asked.body))).join("\n")).toMatch(
      /agent of server doomed did not finish the remediation within 4 s of its last sign of life \(WHARF_AGENT_LEASE_SECONDS\)/,
    );
    const failed = await waitFor(
      () => statusOf(t, "doomed"),
      (s) => s.status === "error",
      10_000,
    );
    expect(failed.errorText).toMatch(/agent .*(did not finish|not been (seen|heard from) since)/i);

    // Not seen for longer than WHARF_AGENT_OFFLINE_SECONDS: a check fails at once, naming the date.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, killedAt + 5200 - Date.now())));
    const offline = await check(t, "doomed");
    expect(offline.status.status).toBe("error");
    expect(offline.status.errorText).toMatch(/has not been (seen|heard from) since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
    expect(offline.ms).toBeLessThan(1000);

    // Meanwhile the agents of the test before (when it ran) idled in their polls, more than the
    // offline time: still present, still current.
    const idle = await api(t, "/api/configuration/status?server=web-1");
    if (idle.status === 200) expect((JSON.parse(idle.body) as ServerStatus).status).toBe("current");
  });

  it("stopped by SIGTERM in the middle of a remediation, reports the work as stopped at once and exits 0", async () => {
    const many = Array.from({ length: 2000 }, (_, i) => ({
      type: "file",
      path: `/files/f${i}.txt`,
      content: `${i}\n`,
    }));
    const key = await createAgentServer(t, "stopped-1", [{ type: "directory", path: "/files" }, ...many]);
    const agent = start("stopped-1", key);
    await agent.waitForOutput(/connected to .* as server stopped-1/);
    expect((await check(t, "stopped-1")).status.status).toBe("drifted");
    const asked = await api(t, "/api/configuration/remediate/server/stopped-1");
    expect(asked.status, asked.body).toBe(200);
    const stopper = await killWhenWritten(path.join(scratch, "stopped-1/files"), agent.pid, "SIGTERM");
    const stoppedAt = Date.now();
    expect(stopper.written).toBeGreaterThan(0);
    expect(await agent.exited).toEqual({ code: 0, signal: null });
    const word = await waitFor(
      async () => (await api(t, `/api/configuration/remediate/status?token=${asked.body}`)).body,
      (w) => w !== "pending" && w !== "running",
      10_000,
    );
    expect(word).toBe("faulted");
    // Told by the agent, not found out by the lease (4 s).
    expect(Date.now() - stoppedAt).toBeLessThan(3000);
    expect((await jobLog(t, Number(asked.body))).join("\n")).toMatch(
      /The agent was stopped before it finished this work/,
    );
  });

  it("stops an agent whose key is revoked, with its message, and gives its server no more work", async () => {
    const key = await createAgentServer(t, "revoked-1", ITEMS);
    const agent = start("revoked-1", key);
    await agent.waitForOutput(/connected to .* as server revoked-1/);
    const revoked = await t.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/revoke-agent-key/revoked-1",
      headers: { "x-apikey": t.adminKey },
    });
    expect(revoked.statusCode).toBe(200);
    // Its held poll ends within the hub's key sweep (2 s), not after the poll's 25 s.
    const exit = await Promise.race([
      agent.exited,
      new Promise<"late">((resolve) => setTimeout(() => resolve("late"), 6000)),
    ]);
    expect(exit).toEqual({ code: 1, signal: null });
    expect(agent.output()).toMatch(/refused the agent key \(HTTP 403: The agent key is not valid/);
    const { status } = await check(t, "revoked-1");
    expect(status.status).toBe("error");
    expect(status.errorText).toMatch(/no agent key/);
  });

  it("keeps trying with backoff while Wharf cannot be reached, and connects when it can", async () => {
    const port = await freePort();
    const key = await createAgentServer(t, "patient-1", ITEMS);
    const agent = startAgent(compiled.cli, {
      server: `http://127.0.0.1:${port}`,
      key,
      root: path.join(scratch, "patient-1"),
    });
    agents.push(agent);
    await agent.waitForOutput(/cannot poll .* trying again in \d/);
    // Wharf "comes back" on that port: a plain TCP relay to the listening app.
    const target = new URL(url);
    const relay = net.createServer((socket) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on("error", () => upstream.destroy());
      upstream.on("error", () => socket.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(port, "127.0.0.1", resolve));
    try {
      await agent.waitForOutput(/connected to .* as server patient-1/, 8000);
      expect((await check(t, "patient-1")).status.status).toBe("drifted");
    } finally {
      await agent.stop();
      relay.close();
    }
  });
});

/** Signals `pid` (SIGKILL) from a separate process once `dir` has an entry; answers how many it had then. */
async function killWhenWritten(
  dir: string,
  pid: number,
  signal: NodeJS.Signals = "SIGKILL",
): Promise<{ written: number }> {
  const script = `
    const fs = require("node:fs");
    const [dir, pid, signal] = process.argv.slice(1);
    const deadline = Date.now() + 20000;
    for (;;) {
      let names = [];
      try { names = fs.readdirSync(dir); } catch {}
      if (names.length > 0) { process.kill(Number(pid), signal); console.log(names.length); break; }
      if (Date.now() > deadline) { console.log(-1); break; }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
    }`;
  const child = spawn(process.execPath, ["-e", script, dir, String(pid), signal], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  await new Promise((resolve) => child.once("close", resolve));
  return { written: Number(output.trim()) };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
