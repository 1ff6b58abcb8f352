import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type ConfigurationRuntime,
  type ConfigurationServices,
  createConfigurationRuntime,
  createConfigurationServices,
} from "../../src/areas/configuration/index.js";
import { hashApiKey } from "../../src/areas/security/api-key-hash.js";
import { createPostgresRemediationJobs } from "../../src/areas/web-ui/configuration/remediation-jobs-postgres.js";
import { type Config, loadConfig } from "../../src/config.js";
import { systemClock } from "../../src/domain/clock.js";
import type { PackageSource } from "../../src/drift/model.js";
import { createPostgresJobRunner, type PostgresJobRunner } from "../../src/jobs/runner-postgres.js";
import { type NodeDatabase, openNodeDatabase } from "../../src/storage/postgres/node-database.js";
import { createSecretBox, generateSecretKey, parseSecretKey, type SecretKey } from "../../src/storage/secrets.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Configuration management built on PostgreSQL (cluster mode) through its factories, as app.ts
 * builds them: servers, roles and variables; a check of a local server, its status and items; a
 * remediation job on the PostgreSQL job runner; the pages' job lists; the agent hub's key look-up;
 * and the synchronous methods that refuse on PostgreSQL.
 */
const quiet = { warn: () => undefined, error: () => undefined, info: () => undefined, debug: () => undefined };
const noPackages: PackageSource = {
  resolve: async () => {
    throw new Error("no packages in this test");
  },
  open: async () => {
    throw new Error("no packages in this test");
  },
} as unknown as PackageSource;

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

describe.skipIf(!postgresInstalled())("configuration management on PostgreSQL", () => {
  let dir: string;
  let deployRoot: string;
  let config: Config;
  let node: NodeDatabase;
  let jobs: PostgresJobRunner;
  let services: ConfigurationServices;
  let runtime: ConfigurationRuntime;
  const secrets = createSecretBox(parseSecretKey(generateSecretKey()) as SecretKey);

  beforeAll(async () => {
    dir = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), "wharf-config-pg-")));
    deployRoot = path.join(dir, "deploy");
    await fs.mkdir(path.join(deployRoot, "web"), { recursive: true });
    config = loadConfig({
      WHARF_DATA_DIR: path.join(dir, "data"),
      WHARF_DEPLOY_ROOT: deployRoot,
      WHARF_CONFIG_CHECK_MINUTES: "0",
    });
    node = await openNodeDatabase({ url: await testPostgres().createDatabase(), nodeId: "test", migrate: true });
    jobs = createPostgresJobRunner({
      db: node.db,
      clock: systemClock,
      concurrency: 2,
      log: quiet,
      nodeId: "test",
      pollMs: 50,
    });
    services = createConfigurationServices({
      db: node.db,
      clock: systemClock,
      config,
      secrets,
      fetchHostKey: async () => "unused",
    });
    runtime = createConfigurationRuntime({
      db: node.db,
      clock: systemClock,
      config,
      infrastructure: services.infrastructure,
      jobs,
      packages: noPackages,
      agentTransport: services.agents.transport,
      credentials: services.credentialsStore,
      log: quiet,
    });
    await runtime.start();
    await jobs.start();
  });

  afterAll(async () => {
    services?.agents.close();
    await runtime?.close();
    await jobs?.stop();
    await node?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it("keeps servers, roles, their variables and global ones", async () => {
    await services.roles.create("Base", {
      variables: { Greeting: "hello" },
      items: [{ type: "file", path: "/motd.txt", template: "$Greeting from $Who\n" }],
    } as never);
    await services.servers.create("web", {
      serverType: "local",
      rootPath: path.join(deployRoot, "web"),
      drift: "reportOnly",
      roles: ["Base"],
    } as never);
    await services.variables.setOne({ type: "server", name: "WEB" }, "Who", "web");
    await services.variables.setScoped({ name: "Secret", value: "s3cret", sensitive: true });
    expect(await services.variables.getAll({ type: "server", name: "web" })).toEqual({ Who: "web" });
    await expect(services.variables.getOne({ type: "global" }, "secret")).rejects.toMatchObject({ kind: "forbidden" });
    await expect(
      services.variables.setScoped({ name: "X", value: "1", sensitive: true, environment: "nowhere" }),
    ).rejects.toMatchObject({ kind: "not_found" });
    const all = await services.variables.scopedAll();
    expect(all.map((v) => [v.name, v.value, v.server, v.role])).toEqual([
      ["Secret", null, null, null],
      ["Who", "web", "web", null],
      ["Greeting", "hello", null, "Base"],
    ]);
    await services.variables.deleteOne({ type: "global" }, "Secret");
    await expect(services.variables.deleteOne({ type: "global" }, "Secret")).rejects.toMatchObject({
      kind: "not_found",
    });
  });

  it("checks a local server, and tells its status and items (server, role, every entity)", async () => {
    const server = await services.infrastructure.findServer("web");
    const collection = await runtime.checker.check(server?.id as number);
    expect(collection).toMatchObject({ status: "completed", items: 1, drifted: 1 });
    expect(await runtime.status.statusOf("server", "web")).toMatchObject({
      type: "server",
      status: "drifted",
      latestCollectionId: collection?.id,
    });
    expect(await runtime.status.statusOf("role", "base")).toMatchObject({
      type: "role",
      name: "Base",
      status: "drifted",
    });
    expect((await runtime.status.allStatuses()).map((o) => [o.type, o.name, o.status])).toEqual([
      ["server", "web", "drifted"],
      ["role", "Base", "drifted"],
    ]);
    expect(JSON.parse((await runtime.status.allStatusesJson()).toString())).toHaveLength(2);
    expect(
      await runtime.status.serversWithRole((await services.infrastructure.findRole("Base"))?.id as number),
    ).toEqual([server?.id]);
    expect(await runtime.status.itemsOf("web")).toMatchObject([
      { type: "file", key: "/motd.txt", status: "drifted", collectionRole: "Base" },
    ]);
  });

  it("runs a remediation job on the PostgreSQL job runner, and the pages list it", async () => {
    const token = await runtime.remediation.request({ entityType: "server", entityName: "web", simulate: false });
    const state = await until(
      () => runtime.remediation.stateOf(String(token)),
      (s) => s !== "pending" && s !== "running",
    );
    expect(state).toBe("completed");
    expect(await fs.readFile(path.join(deployRoot, "web", "motd.txt"), "utf8")).toBe("hello from web\n");
    // The job's own check made the server current; the status, kept per change version, sees it.
    expect(await runtime.status.statusOf("server", "web")).toMatchObject({ status: "current" });
    expect((await runtime.status.allStatuses()).map((o) => o.status)).toEqual(["current", "current"]);
    const pages = createPostgresRemediationJobs(node.db);
    expect((await pages.recent()).map((j) => [j.id, j.entityName, j.state])).toEqual([[token, "web", "completed"]]);
    expect(await pages.recentOfEntity("server", "WEB")).toHaveLength(1);
    // A job waiting to start: the status names it, and no automatic remediation is added beside it.
    const later = await runtime.remediation.request({
      entityType: "server",
      entityName: "web",
      simulate: true,
      start: new Date(Date.now() + 3_600_000),
    });
    expect(await runtime.status.statusOf("server", "web")).toMatchObject({ status: "current", remediationId: later });
    const web = await services.infrastructure.getServer(
      (await services.infrastructure.findServer("web"))?.id as number,
    );
    expect(await runtime.remediation.remediateAutomatically(web as NonNullable<typeof web>)).toBeUndefined();
    expect(await runtime.remediation.stateOf(String(later))).toBe("pending");
  });

  it("finds an agent server by its key, and hands its agent work wherever it was seen last", async () => {
    const created = await services.servers.create("agent1", { serverType: "agent" } as never);
    const key = (created as { agentKey?: string }).agentKey as string;
    expect(key).toBeTypeOf("string");
    expect(await services.agents.identify(key)).toMatchObject({
      name: "agent1",
      hasKey: true,
      keyHash: hashApiKey(key),
    });
    expect(await services.agents.identify("wrong")).toBeUndefined();
    // Its agent never polled this node: the check ends in error, saying why.
    const agent = await services.infrastructure.findServer("agent1");
    const collection = await runtime.checker.check(agent?.id as number);
    expect(collection).toMatchObject({ status: "error" });
    expect(collection?.errorText).toMatch(/never connected/);
    // Seen lately by another node: the work is queued in the database, for whichever node it polls next.
    await node.db.pool.query("UPDATE servers SET agent_last_seen_at = $1 WHERE name_key = 'agent1'", [
      new Date().toISOString(),
    ]);
    const server = (await services.agents.identify(key)) as NonNullable<
      Awaited<ReturnType<typeof services.agents.identify>>
    >;
    const queued = runtime.checker.check(server.id);
    const taken = await until(
      () => services.agents.poll(server, { waitMs: 0, version: "1.0.0", signal: new AbortController().signal }),
      (answer) => answer !== "revoked" && answer.length > 0,
    );
    if (taken === "revoked" || taken[0] === undefined) throw new Error("no work handed out");
    await services.agents.complete(server, taken[0].id, { results: [], changes: [] });
    expect(await queued).toMatchObject({ status: "completed", items: 0 });
    // Polling this node: its work is handed over, and its result settles the check.
    const held = services.agents.poll(server, {
      waitMs: 10_000,
      version: "1.0.0",
      signal: new AbortController().signal,
    });
    const checking = runtime.checker.check(server.id);
    const work = await held;
    if (work === "revoked" || work[0] === undefined) throw new Error("no work handed out");
    services.agents.complete(server, work[0].id, { results: [], changes: [] });
    expect(await checking).toMatchObject({ status: "completed", items: 0 });
    const [row] = (await node.db.pool.query("SELECT agent_version FROM servers WHERE name_key = 'agent1'")).rows;
    expect(row).toEqual({ agent_version: "1.0.0" });
  });
});
