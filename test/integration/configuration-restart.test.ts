import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { FastifyInstance } from "fastify";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { RESTART_TEXT } from "../../src/areas/configuration/checker.js";
import { bootstrapAdminKey } from "../../src/areas/security/bootstrap.js";
import { loadConfig } from "../../src/config.js";
import type { Clock } from "../../src/domain/clock.js";
import { INTERRUPTED_MESSAGE } from "../../src/jobs/runner.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { createFileBlobStore } from "../../src/storage/file-blob-store.js";
import { INEDOCORE_HEADERS, manualClock } from "../helpers/configuration.js";

/**
 * The restart rules (issue 13 section 4; research next-areas.md 1.5.5): a check found executing
 * when Wharf starts ends `error` saying the process stopped; a remediation job found executing
 * ends failed (`faulted`) by the job runner's rule and is never run again; a pending one (a start
 * still ahead when the process stopped) still runs once its time has come.
 */
interface Wharf {
  readonly app: FastifyInstance;
  readonly db: Db;
  get(url: string): Promise<{ statusCode: number; body: string; json(): unknown }>;
  close(): Promise<void>;
}

let base: string | undefined;
let running: Wharf | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  if (base) await fs.rm(base, { recursive: true, force: true });
});

async function start(dataDir: string, deployRoot: string, clock: Clock): Promise<Wharf> {
  const config = loadConfig({
    WHARF_DATA_DIR: dataDir,
    WHARF_LOG_LEVEL: "silent",
    WHARF_DEPLOY_ROOT: deployRoot,
    WHARF_CONFIG_CHECK_MINUTES: "0",
  });
  const db = openDatabase(path.join(dataDir, "wharf.sqlite"));
  const key = "test-admin-configuration-restart";
  bootstrapAdminKey(db, dataDir, key, clock);
  const app = await buildApp(config, { db, blobs: createFileBlobStore(dataDir), clock, logger: false });
  await app.ready();
  const wharf: Wharf = {
    app,
    db,
    get: (url) => app.inject({ method: "GET", url, headers: { ...INEDOCORE_HEADERS, "x-apikey": key } }),
    async close() {
      await app.close();
      db.close();
    },
  };
  running = wharf;
  return wharf;
}

async function ended(w: Wharf, token: string): Promise<string> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const word = (await w.get(`/api/configuration/remediate/status?token=${token}`)).body;
    if (word !== "pending" && word !== "running") return word;
    if (Date.now() > deadline) throw new Error(`job ${token} never ended`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("restart rules", () => {
  it("ends an interrupted check in error, fails an interrupted remediation, runs a pending one", async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-config-restart-")));
    const dataDir = path.join(base, "data");
    const deployRoot = path.join(base, "deploy");
    await fs.mkdir(dataDir);
    await fs.mkdir(deployRoot);
    const clock = manualClock(new Date("2030-06-01T12:00:00.000Z"));

    const first = await start(dataDir, deployRoot, clock);
    const created = await first.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/create/r1",
      headers: { "x-apikey": "test-admin-configuration-restart", "content-type": "application/json" },
      payload: JSON.stringify({
        serverType: "local",
        rootPath: path.join(deployRoot, "r1"),
        items: [{ type: "file", path: "/hello.txt", content: "hello\n" }],
      }),
    });
    expect(created.statusCode, created.body).toBe(201);
    const serverId = (first.db.prepare("SELECT id FROM servers WHERE name = 'r1'").get() as { id: number }).id;
    // A remediation due in an hour: pending when the process stops.
    const later = await first.get("/api/configuration/remediate/server/r1?start=2030-06-01T13:00:00");
    expect(later.statusCode).toBe(200);
    expect((await first.get(`/api/configuration/remediate/status?token=${later.body}`)).body).toBe("pending");
    // What a process that dies mid-way leaves behind: a check and a remediation job executing.
    const at = clock.now().toISOString();
    first.db
      .prepare("INSERT INTO config_collections (server_id, status, started_at) VALUES (?, 'executing', ?)")
      .run(serverId, at);
    const jobId = Number(
      first.db
        .prepare(
          "INSERT INTO jobs (kind, payload, status, created_at, started_at, attempts) VALUES ('configuration.remediate', ?, 'executing', ?, ?, 1)",
        )
        .run(JSON.stringify({ entityType: "server", entityName: "r1", simulate: false, targets: [] }), at, at)
        .lastInsertRowid,
    );
    first.db
      .prepare(
        "INSERT INTO config_remediations (job_id, entity_type, entity_name, simulate, created_at) VALUES (?, 'server', 'r1', 0, ?)",
      )
      .run(jobId, at);
    first.db.prepare("INSERT INTO config_remediation_targets (job_id, server_id) VALUES (?, ?)").run(jobId, serverId);
    expect(((await first.get("/api/configuration/status?server=r1")).json() as { status: string }).status).toBe(
      "executing",
    );
    await first.close();
    running = undefined;

    clock.advance(2 * 60 * 60 * 1000); // past the pending job's start
    const second = await start(dataDir, deployRoot, clock);
    expect((await second.get(`/api/configuration/remediate/status?token=${jobId}`)).body).toBe("faulted");
    const log = second.db.prepare("SELECT message FROM job_log WHERE job_id = ?").all(jobId) as { message: string }[];
    expect(log.map((line) => line.message)).toContain(INTERRUPTED_MESSAGE);
    const check = second.db
      .prepare("SELECT status, error_text FROM config_collections WHERE server_id = ? ORDER BY id LIMIT 1")
      .get(serverId);
    expect(check).toEqual({ status: "error", error_text: RESTART_TEXT });

    expect(await ended(second, later.body)).toBe("completed");
    expect(await fs.readFile(path.join(deployRoot, "r1", "hello.txt"), "utf8")).toBe("hello\n");
    const status = (await second.get("/api/configuration/status?server=r1")).json() as Record<string, unknown>;
    expect(status).toMatchObject({ status: "current", collectionDate: "2030-06-01T14:00:00" });
  });

  it("shows the interrupted check's error until the next check", async () => {
    base = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-config-restart-")));
    const dataDir = path.join(base, "data");
    const deployRoot = path.join(base, "deploy");
    await fs.mkdir(dataDir);
    await fs.mkdir(deployRoot);
    const clock = manualClock(new Date("2030-06-01T12:00:00.000Z"));
    const first = await start(dataDir, deployRoot, clock);
    await first.app.inject({
      method: "POST",
      url: "/api/infrastructure/servers/create/r2",
      headers: { "x-apikey": "test-admin-configuration-restart", "content-type": "application/json" },
      payload: JSON.stringify({ serverType: "local", rootPath: path.join(deployRoot, "r2") }),
    });
    first.db
      .prepare("INSERT INTO config_collections (server_id, status, started_at) SELECT id, 'executing', ? FROM servers")
      .run(clock.now().toISOString());
    await first.close();
    running = undefined;
    const second = await start(dataDir, deployRoot, clock);
    expect((await second.get("/api/configuration/status?server=r2")).json()).toEqual({
      type: "server",
      name: "r2",
      status: "error",
      errorText: RESTART_TEXT,
      collectionDate: "2030-06-01T12:00:00",
      latestCollectionId: expect.any(Number),
    });
  });
});
