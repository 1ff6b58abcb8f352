import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { LightMyRequestResponse } from "fastify";
import { expect } from "vitest";
import { AGENT_JSON_TYPE, type PollAnswer, type WorkItem } from "../../src/agent/protocol.js";
import type { Clock } from "../../src/domain/clock.js";
import { buildTestApp, type TestApp } from "./app.js";
import { createSystemKey, readAll, readOne } from "./fixtures.js";

/**
 * Shared setup of the configuration-*.test.ts suites (issue 13; docs/seed-api.md B): an app whose
 * WHARF_DEPLOY_ROOT is a fresh directory, routine checks off, servers and roles made through the
 * infrastructure API, and requests sent the way InedoCore sends them (clients.md 3.6): GET, the
 * key in X-ApiKey only, a product User-Agent.
 */
export const INEDOCORE_HEADERS = { "user-agent": "Otter/2024.3 InedoCore/3.0.1" } as const;

export interface ConfigurationWorld {
  readonly t: TestApp;
  readonly deployRoot: string;
  /** A System key with the `configuration` scope only. */
  readonly configKey: string;
  /** An infrastructure API call as the administrator (JSON body). */
  admin(url: string, body?: unknown): Promise<LightMyRequestResponse>;
  /** A configuration API call as InedoCore makes it. */
  inedo(url: string, key?: string, method?: "GET" | "POST"): Promise<LightMyRequestResponse>;
  /** The absolute path on disk of an item path of a server rooted at deployRoot/<server>. */
  onDisk(server: string, itemPath: string): string;
  /**
   * Polls status?server= until the server is no longer executing and has a collection (newer than
   * the collection id `after`, when given: a check answered before it began); the status object.
   */
  settled(server: string, after?: number): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function configurationWorld(options: { clock?: Clock; env?: Record<string, string> } = {}) {
  const base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-config-")));
  const deployRoot = path.join(base, "deploy");
  await fs.mkdir(deployRoot);
  const t = await buildTestApp({
    env: { WHARF_DEPLOY_ROOT: deployRoot, ...options.env },
    ...(options.clock && { clock: options.clock }),
  });
  const configKey = await createSystemKey(t.database, ["configuration"]);
  const world: ConfigurationWorld = {
    t,
    deployRoot,
    configKey,
    admin: (url, body) =>
      t.app.inject({
        method: "POST",
        url,
        headers: { "x-apikey": t.adminKey, ...(body !== undefined && { "content-type": "application/json" }) },
        ...(body !== undefined && { payload: JSON.stringify(body) }),
      }),
    inedo: (url, key = configKey, method = "GET") =>
      t.app.inject({ method, url, headers: { ...INEDOCORE_HEADERS, "x-apikey": key } }),
    onDisk: (server, itemPath) => path.join(deployRoot, server, itemPath),
    async settled(server, after) {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const res = await world.inedo(`/api/configuration/status?server=${encodeURIComponent(server)}`);
        expect(res.statusCode, res.body).toBe(200);
        const status = res.json() as Record<string, unknown>;
        const latest = status.latestCollectionId;
        if (status.status !== "executing" && latest !== null && (after === undefined || Number(latest) > after)) {
          return status;
        }
        if (Date.now() > deadline) throw new Error(`${server} never finished its check: ${res.body}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    },
    async close() {
      await t.close();
      await fs.rm(base, { recursive: true, force: true });
    },
  };
  return world;
}

/** Creates a role, then a local server rooted at deployRoot/<name> with the given roles and items. */
export async function localServer(
  w: ConfigurationWorld,
  name: string,
  body: Record<string, unknown> = {},
): Promise<void> {
  const res = await w.admin(`/api/infrastructure/servers/create/${name}`, {
    serverType: "local",
    rootPath: path.join(w.deployRoot, name),
    drift: "reportOnly",
    ...body,
  });
  expect(res.statusCode, res.body).toBe(201);
}

/**
 * Creates an `agent` server whose agent is the test itself (requests by inject with the agent key
 * the server was given): a check of it stays executing until the test posts its result, so a
 * test can hold a check open for as long as it needs.
 */
export async function heldAgentServer(
  w: ConfigurationWorld,
  name: string,
  items: readonly object[],
): Promise<HeldAgent> {
  const res = await w.admin(`/api/infrastructure/servers/create/${name}`, {
    serverType: "agent",
    drift: "reportOnly",
    items,
  });
  expect(res.statusCode, res.body).toBe(201);
  const auth = { authorization: `Bearer ${String((res.json() as { agentKey: unknown }).agentKey)}` };
  const poll = (wait: number) =>
    w.t.app.inject({ method: "GET", url: `/api/agent/v1/poll?wait=${wait}`, headers: auth });
  // Seen once: the check of an agent never seen fails at once instead of waiting for its poll.
  const seen = await poll(0);
  expect(seen.statusCode, seen.body).toBe(204);
  return {
    async nextWork() {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const res = await poll(1);
        if (res.statusCode === 200) {
          const [work] = (res.json() as PollAnswer).work;
          if (work !== undefined) return work;
        } else expect(res.statusCode, res.body).toBe(204);
        if (Date.now() > deadline) throw new Error(`no work reached the agent of ${name}`);
      }
    },
    async report(workId, results) {
      const res = await w.t.app.inject({
        method: "POST",
        url: `/api/agent/v1/work/${workId}/result`,
        headers: { ...auth, "content-type": AGENT_JSON_TYPE },
        payload: JSON.stringify({ results, changes: [] }),
      });
      expect(res.statusCode, res.body).toBe(204);
    },
  };
}

export interface HeldAgent {
  /** Polls as the agent until the server's next work is handed out. */
  nextWork(): Promise<WorkItem>;
  /** Ends the work with these item results (the agent protocol's `results`). */
  report(workId: string, results: readonly object[]): Promise<void>;
}

export async function role(w: ConfigurationWorld, name: string, body: Record<string, unknown>): Promise<void> {
  const res = await w.admin(`/api/infrastructure/roles/create/${name}`, body);
  expect(res.statusCode, res.body).toBe(201);
}

/** Requests a check as InedoCore does and waits for that check (a new collection) to end; the status. */
export async function checked(w: ConfigurationWorld, server: string): Promise<Record<string, unknown>> {
  const count = async () =>
    (await readOne<{ n: number }>(w.t.database, "SELECT count(*) AS n FROM config_collections"))?.n;
  const before = await count();
  const res = await w.inedo(`/api/configuration/check?server=${encodeURIComponent(server)}`);
  expect(res.statusCode, res.body).toBe(200);
  const deadline = Date.now() + 5_000;
  while ((await count()) === before) {
    if (Date.now() > deadline) throw new Error(`the check of ${server} never started`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return w.settled(server);
}

/** Polls remediate/status until the job is no longer pending or running; the last word. */
export async function jobEnded(w: ConfigurationWorld, token: string, everyMs = 20): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await w.inedo(`/api/configuration/remediate/status?token=${token}`);
    expect(res.statusCode, res.body).toBe(200);
    if (res.body !== "pending" && res.body !== "running") return res.body;
    if (Date.now() > deadline) throw new Error(`remediation ${token} never ended`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** The job's log lines as `level: message`. */
export async function jobLog(w: ConfigurationWorld, jobId: number): Promise<string[]> {
  const rows = await readAll<{ level: string; message: string }>(
    w.t.database,
    "SELECT level, message FROM job_log WHERE job_id = ? ORDER BY id",
    jobId,
  );
  return rows.map((row) => `${row.level}: ${row.message}`);
}

/** A clock tests move by hand; it stands still otherwise. */
export function manualClock(start: Date): Clock & { set(date: Date): void; advance(ms: number): void } {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    set: (date) => {
      now = date.getTime();
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

/** The date a status answer must show for an ISO instant: yyyy-MM-ddTHH:mm:ss. */
export const SEED_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
