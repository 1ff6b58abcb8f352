import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LEASE_LAPSED_MESSAGE } from "../../src/jobs/runner-postgres.js";
import { type AzuriteServer, startAzurite } from "../helpers/azurite.js";
import { testCluster, type TestCluster } from "../helpers/cluster-app.js";
import { type PostgresServer, postgresInstalled, startPostgres } from "../helpers/postgres.js";
import { type ClusterProcesses, clusterProcesses, kill, nodeIdOf } from "./cluster-process.js";
import { type RunningServer, runWharf } from "./process.js";

/**
 * Issue 18: a node SIGKILLed during a deployment runs no job twice. Two real `wharf serve` nodes
 * with a short job lease (WHARF_JOB_LEASE_SECONDS); a deployment whose plan calls a target this
 * test runs, then sleeps; the node that claimed it is killed mid-sleep. The survivor's restart rule
 * ends it failed once the lease lapsed, and nothing starts it again.
 */
const LEASE_SECONDS = 3;
/** How often every node applies the restart rule (jobs/runner-postgres.ts DEFAULT_LAPSED_CHECK_MS). */
const RESTART_RULE_MS = 5_000;
/** Room for a busy 2-core machine shared by other runs: the test's polling, a slow restart rule pass. */
const SLACK_MS = 5_000;
/** A dead node's job ends within its lease, the next pass of a survivor's restart rule, and the slack. */
const ENDED_WITHIN_MS = LEASE_SECONDS * 1000 + RESTART_RULE_MS + SLACK_MS;

type Json = Record<string, unknown>;

describe.skipIf(!postgresInstalled())("a wharf serve node SIGKILLed during a deployment", () => {
  let postgres: PostgresServer;
  let azurite: AzuriteServer;
  let cluster: TestCluster;
  let processes: ClusterProcesses;
  let database: pg.Client;
  let nodes: [RunningServer, RunningServer];
  // The deployments' target: every request it received, by path.
  let target: http.Server;
  let targetUrl: string;
  const hits = new Map<string, number>();
  const hitsOf = (url: string) => hits.get(url) ?? 0;

  const json = async <T = Json>(node: RunningServer, url: string, body?: unknown): Promise<T> => {
    const res = await processes.call(node, url, {
      method: body === undefined ? "GET" : "POST",
      ...(body !== undefined && { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
    });
    const text = await res.text();
    expect(res.status, `${url}: ${text}`).toBe(200);
    return JSON.parse(text) as T;
  };

  /** An application with release 1.0 on a pipeline of one stage running `plan`. */
  async function application(node: RunningServer, name: string, plan: readonly Json[]): Promise<void> {
    await json(node, "/api/pipelines/create", { name: `${name}-pipeline`, stages: [{ name: "Only", plan }] });
    await json(node, "/api/applications/create", { name });
    await json(node, "/api/releases/create", {
      applicationName: name,
      releaseNumber: "1.0",
      pipelineName: `${name}-pipeline`,
    });
  }

  /** A new build, which is deployed to the first stage at once: its deployment's id. */
  async function deploy(node: RunningServer, name: string): Promise<number> {
    const build = await json<{ id: number }>(node, "/api/releases/builds/create", {
      applicationName: name,
      releaseNumber: "1.0",
    });
    const [deployment] = await json<{ id: number }[]>(node, `/api/releases/builds/deployments?buildId=${build.id}`);
    if (deployment === undefined) throw new Error(`the build of ${name} has no deployment`);
    return deployment.id;
  }

  const statusOf = async (node: RunningServer, deploymentId: number) =>
    (await json<{ status: string }[]>(node, `/api/releases/builds/deployments?deploymentId=${deploymentId}`))[0]
      ?.status;

  /** Polls until the deployment has ended; its status. */
  async function ended(node: RunningServer, deploymentId: number, timeoutMs: number): Promise<string> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const status = await statusOf(node, deploymentId);
      if (status !== "pending" && status !== "executing") return String(status);
      if (performance.now() > deadline)
        throw new Error(`deployment ${deploymentId} still ${status} after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async function until(what: string, condition: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!condition()) {
      if (performance.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  const logOf = async (node: RunningServer, deploymentId: number) => {
    const res = await processes.call(node, `/executions/logs?executionId=${deploymentId}`);
    expect(res.status).toBe(200);
    return res.text();
  };

  /** The node holding the deployment's job (job_leases), by the id its /health gives. */
  async function leaseHolder(deploymentId: number): Promise<string | undefined> {
    const result = await database.query<{ node_id: string }>(
      "SELECT l.node_id FROM deployments d JOIN job_leases l ON l.job_id = d.execution_id WHERE d.id = $1",
      [deploymentId],
    );
    return result.rows[0]?.node_id;
  }

  /** Every job ever queued for the deployment (a stray duplicate of the dispatch included), with its starts. */
  async function jobsOf(deploymentId: number) {
    const result = await database.query<{ id: number; status: string; attempts: number; starts: number }>(
      `SELECT j.id, j.status, j.attempts::int AS attempts,
              (SELECT count(*)::int FROM job_log g WHERE g.job_id = j.id AND g.message LIKE 'Deploying %') AS starts
         FROM jobs j
        WHERE j.kind = 'deployment' AND (j.payload::jsonb ->> 'deploymentId')::bigint = $1
        ORDER BY j.id`,
      [deploymentId],
    );
    return result.rows;
  }

  beforeAll(async () => {
    target = http.createServer((request, response) => {
      const url = request.url ?? "";
      hits.set(url, hitsOf(url) + 1);
      response.end("ok");
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    targetUrl = `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
    [postgres, azurite] = await Promise.all([startPostgres(), startAzurite()]);
    cluster = await testCluster(await postgres.createDatabase(), azurite);
    processes = clusterProcesses(cluster);
    // The plans' http steps call this test's target on the loopback address.
    const env = { WHARF_JOB_LEASE_SECONDS: String(LEASE_SECONDS), WHARF_FETCH_ALLOW_PRIVATE: "true" };
    // Started together: they migrate the new database one at a time, under the migration lock.
    nodes = await Promise.all([processes.start(env), processes.start(env)]);
    database = new pg.Client({ connectionString: cluster.databaseUrl });
    await database.connect();
    await application(nodes[0], "Slow", [
      { type: "http", url: `${targetUrl}/slow/started` },
      { type: "sleep", seconds: 120 },
      { type: "http", url: `${targetUrl}/slow/finished` },
    ]);
    await application(nodes[0], "After", [
      { type: "http", url: `${targetUrl}/after/started` },
      { type: "log", message: "deployed after the kill" },
    ]);
  }, 90_000);

  afterAll(async () => {
    await database?.end();
    await processes?.close();
    await azurite?.stop();
    await postgres?.stop();
    await new Promise((resolve) => target?.close(resolve));
  });

  it("the killed node's deployment ends failed once its lease lapsed, never runs again; the survivor deploys", async () => {
    const slow = await deploy(nodes[0], "Slow");
    // Executing, on one node or the other: it called the target and sleeps.
    await until("the deployment's first step", () => hitsOf("/slow/started") > 0, 30_000);
    const holder = await leaseHolder(slow);
    const ids = await Promise.all(nodes.map(nodeIdOf));
    expect(ids).toContain(holder);
    const victim = ids[0] === holder ? nodes[0] : nodes[1];
    const survivor = victim === nodes[0] ? nodes[1] : nodes[0];

    await kill(victim);
    const killedAt = performance.now();
    // Not taken away before its lease lapsed: the survivor still sees it executing.
    expect(await statusOf(survivor, slow)).toBe("executing");
    expect((await fetch(`${survivor.url}/health`)).status).toBe(200);

    expect(await ended(survivor, slow, ENDED_WITHIN_MS)).toBe("failed");
    expect(performance.now() - killedAt).toBeLessThan(ENDED_WITHIN_MS);
    const log = await logOf(survivor, slow);
    expect(log).toContain("Sleeping 120 s.");
    expect(log).toContain(LEASE_LAPSED_MESSAGE);
    expect(log.match(/Deploying Slow build/g)).toHaveLength(1);

    // A second start would come within the survivor's next polls (every second): give it a few.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await statusOf(survivor, slow)).toBe("failed");
    expect([hitsOf("/slow/started"), hitsOf("/slow/finished")]).toEqual([1, 0]);
    const jobs = await jobsOf(slow);
    expect(jobs.filter((job) => job.status === "pending" || job.status === "executing")).toEqual([]);
    expect(jobs.reduce((starts, job) => starts + job.starts, 0)).toBe(1);
    expect(jobs.find((job) => job.starts === 1)).toMatchObject({ status: "failed", attempts: 1 });

    const after = await deploy(survivor, "After");
    expect(await ended(survivor, after, 15_000)).toBe("succeeded");
    expect(hitsOf("/after/started")).toBe(1);
    expect(await logOf(survivor, after)).toContain("deployed after the kill");
  }, 90_000);
});

describe("WHARF_JOB_LEASE_SECONDS", () => {
  it("a lease out of bounds is refused at start (exit 2), naming the variable and the bounds", async () => {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "wharf-lease-"));
    try {
      const result = await runWharf(["serve"], { WHARF_DATA_DIR: dataDir, WHARF_JOB_LEASE_SECONDS: "2" });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("WHARF_JOB_LEASE_SECONDS: must be a whole number from 3 to 3600");
      expect(await fs.readdir(dataDir)).toEqual([]);
    } finally {
      await fs.rm(dataDir, { recursive: true, force: true });
    }
  });
});
