import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import {
  createPostgresJobRunner,
  LEASE_LAPSED_MESSAGE,
  type PostgresJobRunner,
  type PostgresJobRunnerOptions,
} from "../../src/jobs/runner-postgres.js";
import type { Job, JobHandler, JobOutcome } from "../../src/jobs/runner.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";
import { migratePostgres } from "../../src/storage/postgres/migrations.js";
import type { JobRunnerProcessOptions } from "../helpers/job-runner-process.js";
import { postgresInstalled } from "../helpers/postgres.js";
import { testPostgres } from "../helpers/shared-postgres.js";

/**
 * Several nodes' job runners (jobs/runner-postgres.ts) on one PostgreSQL: each job runs once,
 * anywhere; a cancel reaches the node running the job; a node that dies or stalls past its lease
 * loses its job to the restart rule, which fails it for good. Bounds are generous (two slow cores,
 * other test files running) but each is a real bound.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SCRIPT = path.join(ROOT, "test/helpers/job-runner-process.ts");
const LEASE_MS = 1_200;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await pause(10);
  }
  return Date.now() - started;
}

/** A node in a process of its own (test/helpers/job-runner-process.ts). */
interface NodeProcess {
  waitFor(pattern: RegExp, timeoutMs: number): Promise<string>;
  output(): string[];
  kill(): Promise<void>;
}

function startNodeProcess(options: JobRunnerProcessOptions): NodeProcess {
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", SCRIPT, JSON.stringify(options)], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const exited = once(child, "exit");
  let text = "";
  child.stdout?.on("data", (chunk: Buffer) => (text += chunk.toString()));
  const lines = () => text.split("\n").filter((line) => line !== "");
  return {
    output: lines,
    async waitFor(pattern, timeoutMs) {
      let found: string | undefined;
      await until(
        () => (found = lines().find((line) => pattern.test(line))) !== undefined,
        `the node process to print ${pattern} (it printed: ${text})`,
        timeoutMs,
      );
      return found as string;
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

describe.skipIf(!postgresInstalled())("job runners of a cluster on one PostgreSQL", () => {
  let url: string;
  let db: pg.Pool;
  const pools: pg.Pool[] = [];
  let runners: PostgresJobRunner[] = [];
  let processes: NodeProcess[] = [];
  let processLog: string[] = [];

  const pool = () => {
    const opened = openPostgres(url, { applicationName: "wharf test" });
    pools.push(opened);
    return opened;
  };

  /** A node: its own pool, its own id. */
  function node(
    nodeId: string,
    handlers: Record<string, JobHandler>,
    options: Partial<PostgresJobRunnerOptions> = {},
  ): PostgresJobRunner {
    const created = createPostgresJobRunner({
      db: { pool: pool(), committed: () => undefined },
      clock: systemClock,
      nodeId,
      concurrency: 1,
      handlers,
      leaseMs: LEASE_MS,
      pollMs: 50,
      lapsedCheckMs: 100,
      stopTimeoutMs: 500,
      log: {
        warn: (_fields, message) => void processLog.push(`${nodeId} warn: ${message}`),
        error: (_fields, message) => void processLog.push(`${nodeId} error: ${message}`),
      },
      ...options,
    });
    runners.push(created);
    return created;
  }

  const insertJob = async (kind: string, payload: unknown = null) => {
    const result = await db.query<{ id: number }>(
      "INSERT INTO jobs (kind, payload, status, created_at) VALUES ($1, $2, 'pending', $3) RETURNING id",
      [kind, JSON.stringify(payload), new Date().toISOString()],
    );
    return (result.rows[0] as { id: number }).id;
  };
  const row = async (id: number) =>
    (
      await db.query<{ status: string; attempts: number; canceled_at: string | null }>(
        "SELECT status, attempts, canceled_at FROM jobs WHERE id = $1",
        [id],
      )
    ).rows[0];
  const logOf = async (id: number) =>
    (
      await db.query<{ line: string }>(
        "SELECT level || ': ' || message AS line FROM job_log WHERE job_id = $1 ORDER BY id",
        [id],
      )
    ).rows.map((r) => r.line);

  beforeAll(async () => {
    url = await testPostgres().createDatabase();
    db = pool();
    await migratePostgres(db);
  });
  afterEach(async () => {
    await Promise.all(processes.map((p) => p.kill()));
    for (const runner of runners) await runner.stop();
    runners = [];
    processes = [];
    processLog = [];
    await db.query("DELETE FROM jobs");
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
  });

  it("runs each of 100 jobs exactly once, spread over three nodes", async () => {
    const runs = new Map<number, string[]>();
    const handlerFor =
      (nodeId: string): JobHandler =>
      async (job, context) => {
        runs.set(job.id, [...(runs.get(job.id) ?? []), nodeId]);
        context.log("info", `on ${nodeId}`);
        await pause(5 + (job.id % 7) * 3);
        return "succeeded";
      };
    const finishedOn = new Map<number, string[]>();
    const nodes = ["a", "b", "c"].map((nodeId) =>
      node(
        nodeId,
        { count: handlerFor(nodeId) },
        {
          concurrency: 4,
          onFinished: (job) => void finishedOn.set(job.id, [...(finishedOn.get(job.id) ?? []), nodeId]),
        },
      ),
    );
    await Promise.all(nodes.map((n) => n.start()));
    const ids: number[] = [];
    for (let n = 0; n < 100; n++) ids.push(await (nodes[n % 3] as PostgresJobRunner).enqueue("count", n));
    const elapsed = await until(
      async () =>
        (
          await db.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1::bigint[]) AND status = 'succeeded'",
            [ids],
          )
        ).rows[0]?.n === 100,
      "all 100 jobs to succeed",
      30_000,
    );
    expect(elapsed).toBeLessThan(30_000);
    for (const id of ids) {
      expect(runs.get(id)).toHaveLength(1);
      expect(finishedOn.get(id)).toEqual(runs.get(id)); // onFinished on the node that ran it, once
      expect(await logOf(id)).toEqual([`info: on ${runs.get(id)?.[0]}`, "info: The job ended: succeeded."]);
    }
    const attempts = await db.query<{ attempts: number; n: number }>(
      "SELECT attempts, count(*)::int AS n FROM jobs WHERE id = ANY ($1::bigint[]) GROUP BY attempts",
      [ids],
    );
    expect(attempts.rows).toEqual([{ attempts: 1, n: 100 }]);
    const perNode = ["a", "b", "c"].map((nodeId) => [...runs.values()].filter((on) => on[0] === nodeId).length);
    for (const count of perNode) expect(count).toBeGreaterThan(0);
    expect((await db.query("SELECT * FROM job_leases")).rows).toEqual([]);
    expect(processLog).toEqual([]);
  });

  it("cancels a job executing on another node: its node aborts it within a renewal or two", async () => {
    let aborted = 0;
    const owner = node("owner", {
      wait: (_job, context) =>
        new Promise<JobOutcome>((resolve) => {
          context.log("info", "waiting");
          context.signal.addEventListener("abort", () => {
            aborted = Date.now();
            context.log("info", "cleaning up");
            resolve("succeeded");
          });
        }),
    });
    const finished: Job[] = [];
    const other = node("other", {}, { onFinished: (job) => void finished.push(job) });
    // The other node runs no such job itself: the job is the owner's.
    other.handle("wait", async () => "succeeded", { concurrency: 0 });
    await owner.start();
    await other.start();
    const id = await other.enqueue("wait", {});
    await until(async () => (await logOf(id)).includes("info: waiting"), "the owner to start the job");
    const canceledAt = Date.now();
    expect(await other.cancel(id)).toBe(true);
    expect(await other.cancel(id)).toBe(true); // still executing: asked once more, no harm
    await until(() => aborted !== 0, "the owner to abort the job", 10_000);
    // A renewal every LEASE_MS / 3; a few of them on a busy machine.
    expect(aborted - canceledAt).toBeLessThan(LEASE_MS * 3);
    await until(async () => (await row(id))?.status === "failed", "the job to end");
    const ended = await other.findJob(id);
    expect(ended).toMatchObject({ status: "failed", attempts: 1 });
    expect(ended?.canceledAt).toBeInstanceOf(Date);
    expect(await logOf(id)).toEqual([
      "info: waiting",
      "warn: Cancel requested.",
      "info: cleaning up",
      "error: The job was canceled while it was executing.",
    ]);
    expect(await other.cancel(id)).toBe(false);
    expect(finished).toEqual([]); // onFinished runs on the node that ended it
    expect(processLog).toEqual([]);
  });

  it("fails the job of a node killed mid-job once its lease lapses, and never runs it again", async () => {
    const doomed = startNodeProcess({ url, nodeId: "doomed", leaseMs: LEASE_MS });
    processes.push(doomed);
    await doomed.waitFor(/^started$/, 30_000);
    const id = await insertJob("deploy", "half-done");
    await doomed.waitFor(new RegExp(`^running ${id}$`), 15_000);
    const waiting = await insertJob("deploy", "next"); // the dead node's concurrency is full
    await until(async () => (await logOf(id)).includes("info: deploying"), "the job's first line");
    await doomed.kill();
    const killedAt = Date.now();

    const seen: unknown[] = [];
    const finished: Job[] = [];
    const survivors = ["s1", "s2"].map((nodeId) =>
      node(
        nodeId,
        { deploy: async (job) => (seen.push(job.id), "succeeded") },
        {
          onFinished: (job) => void finished.push(job),
        },
      ),
    );
    await Promise.all(survivors.map((s) => s.start()));
    await until(async () => (await row(id))?.status === "failed", "the restart rule", 15_000);
    // The lease, then one check of the restart rule: both generous on a busy machine.
    expect(Date.now() - killedAt).toBeLessThan(LEASE_MS + 8_000);
    expect(await row(id)).toEqual({ status: "failed", attempts: 1, canceled_at: null });
    expect(await logOf(id)).toEqual(["info: deploying", `error: ${LEASE_LAPSED_MESSAGE}`]);
    await until(async () => (await row(waiting))?.status === "succeeded", "the pending job to run");
    await pause(300);
    expect(seen).toEqual([waiting]); // the interrupted job never reached a surviving handler
    expect(finished.map((job) => [job.id, job.status]).sort()).toEqual([
      [id, "failed"],
      [waiting, "succeeded"],
    ]);
    expect((await db.query("SELECT * FROM job_leases")).rows).toEqual([]);
  });

  it("refuses the late result of a node that stalled for longer than its lease", async () => {
    const stalled = startNodeProcess({ url, nodeId: "stalled", leaseMs: 600, stallMs: 4_000 });
    processes.push(stalled);
    await stalled.waitFor(/^started$/, 30_000);
    const finished: Job[] = [];
    const seen: number[] = [];
    // The survivor applies the restart rule but runs no deploy job itself.
    const survivor = node("survivor", {}, { onFinished: (job) => void finished.push(job) });
    survivor.handle("deploy", async (job) => (seen.push(job.id), "succeeded"), { concurrency: 0 });
    await survivor.start();
    const id = await insertJob("deploy");
    await stalled.waitFor(new RegExp(`^running ${id}$`), 15_000);
    // While the stalled node's event loop stands still, its lease lapses and the survivor fails the job.
    await until(async () => (await row(id))?.status === "failed", "the restart rule", 15_000);
    await until(() => finished.length === 1, "the survivor's onFinished");
    expect(finished[0]).toMatchObject({ id, status: "failed" });
    // The node wakes up, its handler returns succeeded: refused, nothing more in the job's log.
    await stalled.waitFor(new RegExp(`^returned ${id}$`), 15_000);
    await stalled.waitFor(/^warn: .*lease lapsed/, 15_000);
    await pause(300);
    expect(stalled.output().filter((line) => line.startsWith("finished"))).toEqual([]);
    expect(await row(id)).toEqual({ status: "failed", attempts: 1, canceled_at: null });
    expect(await logOf(id)).toEqual(["info: deploying", `error: ${LEASE_LAPSED_MESSAGE}`]);
    expect(seen).toEqual([]);
  });
});
