import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type RunningServer, runWharf, startServer } from "./process.js";

/**
 * The real server process over a real socket: start-up, bootstrap key, configuration errors,
 * graceful shutdown and what reaches the logs.
 */

let dataDir: string;
const running: RunningServer[] = [];

beforeEach(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-e2e-"));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((server) => server.stop()));
  await fs.rm(dataDir, { recursive: true, force: true });
});

async function start(env: Record<string, string> = {}): Promise<RunningServer> {
  const server = await startServer({ WHARF_DATA_DIR: dataDir, ...env });
  running.push(server);
  return server;
}

/** Stops a server and expects a clean exit. */
async function stopCleanly(server: RunningServer): Promise<void> {
  running.splice(running.indexOf(server), 1);
  expect(await server.stop()).toEqual({ code: 0, signal: null });
}

function occurrences(text: string, needle: string): number {
  return text.split(needle).length - 1;
}

async function metricsStatus(server: RunningServer, key?: string): Promise<number> {
  const res = await fetch(`${server.url}/metrics`, { headers: key === undefined ? {} : { "X-ApiKey": key } });
  await res.arrayBuffer();
  return res.status;
}

const adminKeyFile = () => path.join(dataDir, "admin-api-key");

describe("wharf serve (real process)", () => {
  it("answers /health over a real socket", async () => {
    const server = await start();
    const res = await fetch(`${server.url}/health`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await res.json()).toMatchObject({ applicationName: "Wharf", databaseStatus: "OK", serviceStatus: "OK" });
    await stopCleanly(server);
    expect(server.stderr()).toBe("");
  });

  it("generates an admin key on the first start only: printed once, saved 0600, usable", async () => {
    const first = await start();
    const key = (await fs.readFile(adminKeyFile(), "utf8")).trim();
    expect(key.length).toBeGreaterThanOrEqual(32);
    expect((await fs.stat(adminKeyFile())).mode & 0o777).toBe(0o600);
    expect(occurrences(first.stdout(), key)).toBe(1);
    expect(first.stderr()).not.toContain(key);

    expect(await metricsStatus(first)).toBe(401);
    expect(await metricsStatus(first, "not-the-admin-key-at-all")).toBe(403);
    const metrics = await fetch(`${first.url}/metrics`, { headers: { "X-ApiKey": key } });
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("wharf_http_requests_total");
    const keys = await fetch(`${first.url}/api/api-keys/list`, { headers: { "X-ApiKey": key } });
    expect(keys.status).toBe(200);
    const listed = (await keys.json()) as unknown[];
    expect(listed).toHaveLength(1);
    expect(JSON.stringify(listed)).not.toContain(key);
    await stopCleanly(first);

    const second = await start();
    expect(second.stdout()).not.toContain(key);
    expect(second.stdout()).not.toMatch(/API key was created/);
    expect((await fs.readFile(adminKeyFile(), "utf8")).trim()).toBe(key);
    expect(await metricsStatus(second, key)).toBe(200);
    await stopCleanly(second);
  });

  it("ensures WHARF_ADMIN_API_KEY exactly, idempotently, without printing or saving it", async () => {
    const key = `e2e-admin-${randomBytes(16).toString("hex")}`;
    for (let round = 0; round < 2; round++) {
      const server = await start({ WHARF_ADMIN_API_KEY: key });
      expect(await metricsStatus(server, key)).toBe(200);
      expect(await metricsStatus(server, `${key}x`)).toBe(403);
      expect(server.stdout() + server.stderr()).not.toContain(key);
      await stopCleanly(server);
    }
    await expect(fs.stat(adminKeyFile())).rejects.toMatchObject({ code: "ENOENT" });

    // A restart neither adds a second key nor loses the first.
    const db = new Database(path.join(dataDir, "wharf.sqlite"), { readonly: true });
    try {
      expect(db.prepare("SELECT count(*) AS n FROM api_keys").get()).toEqual({ n: 1 });
    } finally {
      db.close();
    }
  });

  it("refuses invalid configuration with one message naming every bad variable", async () => {
    const result = await runWharf(["serve"], { WHARF_DATA_DIR: dataDir, WHARF_PORT: "abc", WHARF_LOG_LEVEL: "loud" });
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("WHARF_PORT");
    expect(lines[0]).toContain("WHARF_LOG_LEVEL");
    expect(result.stdout).toBe("");
  });

  it("on SIGTERM stops accepting, finishes the request in flight, and exits 0", async () => {
    const key = `e2e-admin-${randomBytes(16).toString("hex")}`;
    const server = await start({ WHARF_ADMIN_API_KEY: key });
    const body = JSON.stringify({ name: "slow-feed", feedType: "universal" });
    // Keep-alive, as browsers and CI clients do: the server must not wait for the client to hang up.
    const agent = new http.Agent({ keepAlive: true });
    const request = http.request({
      host: "127.0.0.1",
      port: server.port,
      method: "POST",
      path: "/api/management/feeds/create?inflight=1",
      headers: { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body), "X-ApiKey": key },
      agent,
    });
    const response = new Promise<{ status: number; text: string }>((resolve, reject) => {
      request.on("response", (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        res.on("error", reject);
      });
      request.on("error", reject);
    });
    // Half the body: the server has the request, and must wait for the rest.
    request.write(body.slice(0, 10));
    await server.waitForOutput(/"incoming request".*inflight=1|inflight=1.*"incoming request"/);

    process.kill(server.pid, "SIGTERM");
    await server.waitForOutput(/shutting down/);
    await expectConnectionsRefused(server.url);

    request.end(body.slice(10));
    const { status, text } = await response;
    expect(status).toBe(201);
    expect(JSON.parse(text)).toMatchObject({ name: "slow-feed", feedType: "universal" });

    // Exits promptly once the request is done (no wait for keep-alive timeouts).
    const exit = await Promise.race([
      server.exited,
      new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 5_000)),
    ]);
    agent.destroy();
    expect(exit).toEqual({ code: 0, signal: null });
    running.splice(running.indexOf(server), 1);
    const log = server.stdout();
    expect(log.indexOf("shutting down")).toBeLessThan(log.indexOf('"statusCode":201'));
  });

  it("logs JSON lines with request ids and never a credential", async () => {
    const admin = `e2e-admin-${randomBytes(16).toString("hex")}`;
    const secrets = {
      query: `QUERYSECRET${randomBytes(8).toString("hex")}`,
      queryUpper: `APIKEYSECRET${randomBytes(8).toString("hex")}`,
      header: `HEADERSECRET${randomBytes(8).toString("hex")}`,
      basicPassword: `BASICSECRET${randomBytes(8).toString("hex")}`,
      body: `BODYSECRET${randomBytes(8).toString("hex")}`,
    };
    const basic = Buffer.from(`api:${secrets.basicPassword}`).toString("base64");
    const server = await start({ WHARF_ADMIN_API_KEY: admin, WHARF_LOG_LEVEL: "trace" });

    const responses = [
      await fetch(`${server.url}/metrics?key=${secrets.query}`),
      await fetch(`${server.url}/health?API_Key=${secrets.queryUpper}&x=1`),
      await fetch(`${server.url}/metrics`, { headers: { "X-ApiKey": secrets.header } }),
      await fetch(`${server.url}/metrics`, { headers: { Authorization: `Basic ${basic}` } }),
      await fetch(`${server.url}/api/management/feeds/create`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ API_Key: secrets.body, name: "x", feedType: "universal" }),
      }),
      await fetch(`${server.url}/metrics?key=${admin}`),
    ];
    for (const res of responses) await res.arrayBuffer();
    expect(responses.map((res) => res.status)).toEqual([403, 200, 403, 403, 403, 200]);
    await stopCleanly(server);

    const output = server.stdout() + server.stderr();
    for (const secret of [...Object.values(secrets), basic, admin]) expect(output).not.toContain(secret);

    const lines = server
      .stdout()
      .split("\n")
      .filter((line) => line.trim() !== "");
    const entries = lines.map((line) => JSON.parse(line) as { reqId?: string; req?: { url?: string }; msg?: string });
    const requestIds = new Set(entries.flatMap((entry) => (entry.reqId === undefined ? [] : [entry.reqId])));
    for (const res of responses) expect(requestIds).toContain(res.headers.get("x-request-id"));

    // The URLs were logged, with the credential replaced: the check above is not vacuous.
    const urls = entries.flatMap((entry) => (entry.req?.url === undefined ? [] : [entry.req.url]));
    expect(urls).toContain("/metrics?key=[REDACTED]");
    expect(urls).toContain("/health?API_Key=[REDACTED]&x=1");
  });
});

/** After SIGTERM the listening socket closes: new connections are refused (polled briefly). */
async function expectConnectionsRefused(url: string): Promise<void> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    try {
      const res = await fetch(`${url}/health`);
      await res.arrayBuffer();
    } catch {
      return;
    }
    if (Date.now() > deadline) throw new Error("the server still accepts connections after SIGTERM");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
