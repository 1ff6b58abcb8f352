import { afterEach, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import { DomainError } from "../../src/domain/errors.js";
import { createPostgresJobRunner, LEASE_LAPSED_MESSAGE } from "../../src/jobs/runner-postgres.js";
import {
  createJobRunner,
  INTERRUPTED_MESSAGE,
  type Job,
  type JobHandler,
  type JobOutcome,
  type JobRunner,
  type JobRunnerOptions,
} from "../../src/jobs/runner.js";
import { describeOnBothDatabases, type TestDatabase } from "../helpers/both-databases.js";

/**
 * The job runner's contract on both databases: the SQLite runner (one per database) and one node's
 * PostgreSQL runner (jobs/runner-postgres.ts) behave alike for a single runner; the scenarios are
 * those of test/unit/job-runner.test.ts and job-runner-kinds.test.ts. Only the restart rule's
 * trigger differs: on SQLite the next runner's start, on PostgreSQL a lapsed lease found by
 * another node. What only a cluster does is in job-runner-cluster.test.ts.
 */

/** Short on PostgreSQL, so that the restart rule's test waits about a second. */
const LEASE_MS = 900;

interface RunnerOptions extends Partial<Omit<JobRunnerOptions, "db" | "handlers">> {
  readonly nodeId?: string;
}

/** A promise settled from outside, for handlers that wait for the test. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves once `check` holds; the runner works on its own ticks. Generous: 2 slow cores, other tests. */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await pause(5);
  }
}

async function finished(jobs: JobRunner, id: number): Promise<Job> {
  let job: Job | undefined;
  await until(async () => {
    job = await jobs.findJob(id);
    return job !== undefined && job.endedAt !== undefined;
  }, `job ${id} to end`);
  return job as Job;
}

const messages = async (jobs: JobRunner, id: number) =>
  (await jobs.readLog(id)).map((line) => `${line.level}: ${line.message}`);

const statusOf = async (jobs: JobRunner, id: number) => (await jobs.findJob(id))?.status;

describeOnBothDatabases("job runner", (database) => {
  let runners: JobRunner[] = [];
  let processLog: string[] = [];
  let nodes = 0;

  afterEach(async () => {
    for (const runner of runners) await runner.stop();
    runners = [];
    processLog = [];
    // Each test starts from an empty queue: a job left pending would be taken by the next runner.
    const { exec } = database();
    await exec("DELETE FROM job_log");
    await exec("DELETE FROM jobs");
  });

  function runner(handlers: Record<string, JobHandler> = {}, options: RunnerOptions = {}): JobRunner {
    const d: TestDatabase = database();
    const common = {
      clock: systemClock,
      concurrency: 1,
      handlers,
      stopTimeoutMs: 2_000,
      pollMs: 50,
      log: {
        warn: (_fields: object, message: string) => void processLog.push(`warn: ${message}`),
        error: (_fields: object, message: string) => void processLog.push(`error: ${message}`),
      },
      ...options,
    };
    const created =
      d.kind === "sqlite"
        ? createJobRunner({ ...common, db: d.sqlite })
        : createPostgresJobRunner({
            ...common,
            db: d.postgres,
            nodeId: options.nodeId ?? `node-${++nodes}`,
            leaseMs: LEASE_MS,
            lapsedCheckMs: 100,
          });
    runners.push(created);
    return created;
  }

  it("runs a job to its outcome, keeps its log and reports it finished", async () => {
    const seen: Job[] = [];
    const jobs = runner(
      {
        deploy: async (job, context) => {
          context.log("info", `deploying ${JSON.stringify(job.payload)}`);
          return "succeeded";
        },
      },
      { onFinished: (job) => void seen.push(job) },
    );
    const id = await jobs.enqueue("deploy", { deploymentId: 7 });
    await pause(100);
    expect(await statusOf(jobs, id)).toBe("pending"); // not before start()
    await jobs.start();
    const job = await finished(jobs, id);
    expect(job).toMatchObject({ id, kind: "deploy", payload: { deploymentId: 7 }, status: "succeeded", attempts: 1 });
    expect(job.canceledAt).toBeUndefined();
    expect(job.startedAt?.getTime()).toBeGreaterThanOrEqual(job.createdAt.getTime());
    expect(job.endedAt?.getTime()).toBeGreaterThanOrEqual(job.startedAt?.getTime() ?? Infinity);
    expect(await messages(jobs, id)).toEqual(['info: deploying {"deploymentId":7}', "info: The job ended: succeeded."]);
    await until(() => seen.length === 1, "onFinished");
    expect(seen[0]).toMatchObject({ id, status: "succeeded" });
    expect(processLog).toEqual([]);
  });

  it("records warned, failed, a thrown error and a bad return value", async () => {
    const jobs = runner({
      outcome: async (job) => job.payload as JobOutcome,
      throws: async () => {
        throw new Error("disk full");
      },
      garbage: async () => "done" as JobOutcome,
    });
    await jobs.start();
    const warned = await jobs.enqueue("outcome", "warned");
    const failed = await jobs.enqueue("outcome", "failed");
    const thrown = await jobs.enqueue("throws", null);
    const garbage = await jobs.enqueue("garbage", null);
    expect((await finished(jobs, warned)).status).toBe("warned");
    expect(await messages(jobs, warned)).toEqual(["warn: The job ended: warned."]);
    expect((await finished(jobs, failed)).status).toBe("failed");
    expect(await messages(jobs, failed)).toEqual(["error: The job ended: failed."]);
    expect((await finished(jobs, thrown)).status).toBe("failed");
    expect(await messages(jobs, thrown)).toEqual(["error: disk full", "error: The job ended: failed."]);
    expect((await finished(jobs, garbage)).status).toBe("failed");
    expect((await messages(jobs, garbage))[0]).toMatch(/returned "done", not an outcome/);
  });

  it("refuses a kind without a handler and a payload that is not JSON; knows no unknown job", async () => {
    const jobs = runner({ known: async () => "succeeded" });
    await expect(jobs.enqueue("unknown", {})).rejects.toMatchObject({ kind: "invalid", code: "JOB_KIND_UNKNOWN" });
    await expect(jobs.enqueue("known", undefined)).rejects.toMatchObject({ code: "JOB_PAYLOAD_INVALID" });
    await expect(jobs.readLog(999_999)).rejects.toBeInstanceOf(DomainError);
    await expect(jobs.readLog(999_999)).rejects.toMatchObject({ kind: "not_found", code: "JOB_NOT_FOUND" });
    expect(await jobs.findJob(999_999)).toBeUndefined();
    await expect(jobs.cancel(999_999)).rejects.toMatchObject({ kind: "not_found" });
  });

  it("takes pending jobs oldest first", async () => {
    const order: unknown[] = [];
    const jobs = runner({ record: async (job) => (order.push(job.payload), "succeeded") });
    const ids = [];
    for (const n of [1, 2, 3, 4]) ids.push(await jobs.enqueue("record", n));
    await jobs.start();
    await finished(jobs, ids[3] as number);
    expect(order).toEqual([1, 2, 3, 4]);
  });

  it("holds a job until its notBefore, letting later due jobs pass", async () => {
    const order: unknown[] = [];
    const jobs = runner({ record: async (job) => (order.push(job.payload), "succeeded") });
    await jobs.start();
    const notBefore = new Date(Date.now() + 300);
    const later = await jobs.enqueue("record", "scheduled", { notBefore });
    const now = await jobs.enqueue("record", "now");
    await finished(jobs, now);
    if (Date.now() < notBefore.getTime() - 20) expect(await statusOf(jobs, later)).toBe("pending");
    const job = await finished(jobs, later);
    expect(job.notBefore).toEqual(notBefore);
    expect(job.startedAt?.getTime()).toBeGreaterThanOrEqual(notBefore.getTime());
    expect(order).toEqual(["now", "scheduled"]);
    await expect(jobs.enqueue("record", 1, { notBefore: new Date(Number.NaN) })).rejects.toMatchObject({
      code: "JOB_NOT_BEFORE_INVALID",
    });
  });

  it("never runs more than `concurrency` jobs at once", async () => {
    let now = 0;
    let most = 0;
    const gates = Array.from({ length: 6 }, () => gate());
    const jobs = runner(
      {
        wait: async (job) => {
          now++;
          most = Math.max(most, now);
          await gates[job.payload as number]?.promise;
          now--;
          return "succeeded";
        },
      },
      { concurrency: 2 },
    );
    await jobs.start();
    const ids = [];
    for (let n = 0; n < 6; n++) ids.push(await jobs.enqueue("wait", n));
    await until(() => now === 2, "two jobs executing");
    await pause(150); // a few polls: still two
    expect(now).toBe(2);
    expect(await statusOf(jobs, ids[2] as number)).toBe("pending");
    for (const g of gates) {
      g.open();
      await pause(10);
    }
    for (const id of ids) expect((await finished(jobs, id)).status).toBe("succeeded");
    expect(most).toBe(2);
  });

  it("holds each kind to its own limit while other kinds still run; a kind limited to 0 waits", async () => {
    const jobs = runner({}, { concurrency: 3 });
    const slow = gate();
    jobs.handle(
      "deployment",
      async () => {
        await slow.promise;
        return "succeeded";
      },
      { concurrency: 1 },
    );
    jobs.handle("remediation", async () => "succeeded");
    jobs.handle("disabled", async () => "succeeded", { concurrency: 0 });
    expect(() => jobs.handle("deployment", async () => "succeeded")).toThrow(/already has a handler/);
    expect(() => jobs.handle("x", async () => "succeeded", { concurrency: -1 })).toThrow(RangeError);
    await jobs.start();
    expect(() => jobs.handle("late", async () => "succeeded")).toThrow(/after the job runner started/);
    const first = await jobs.enqueue("deployment", 1);
    const second = await jobs.enqueue("deployment", 2);
    const disabled = await jobs.enqueue("disabled", 3);
    const other = await jobs.enqueue("remediation", 4);
    await until(async () => (await statusOf(jobs, other)) === "succeeded", "the other kind to run");
    expect(await statusOf(jobs, first)).toBe("executing");
    expect(await statusOf(jobs, second)).toBe("pending");
    slow.open();
    await until(async () => (await statusOf(jobs, second)) === "succeeded", "the second deployment");
    expect(await statusOf(jobs, disabled)).toBe("pending");
  });

  it("stores log lines as they are written, in order, and drops those logged after the handler settled", async () => {
    // More lines than one batch of the PostgreSQL runner holds, logged at once: batches keep order.
    const count = 1_200;
    const release = gate();
    let late: ((line: string) => void) | undefined;
    const jobs = runner({
      chatty: async (_job, context) => {
        for (let n = 1; n <= count; n++) context.log(n % 2 === 0 ? "debug" : "info", `step ${n}`);
        await release.promise;
        late = (line) => context.log("info", line);
        return "succeeded";
      },
    });
    await jobs.start();
    const id = await jobs.enqueue("chatty", {});
    // Readable while the job is still executing.
    await until(async () => (await jobs.readLog(id)).length === count, "the log lines");
    expect(await statusOf(jobs, id)).toBe("executing");
    const lines = await jobs.readLog(id);
    expect(lines.map((line) => line.message)).toEqual(Array.from({ length: count }, (_, n) => `step ${n + 1}`));
    expect(lines.map((line) => line.level)).toEqual(
      Array.from({ length: count }, (_, n) => (n % 2 === 0 ? "info" : "debug")),
    );
    expect(lines[0]?.loggedAt).toBeInstanceOf(Date);
    release.open();
    expect((await finished(jobs, id)).status).toBe("succeeded");
    late?.("too late");
    await pause(50);
    expect((await messages(jobs, id)).slice(-2)).toEqual([`debug: step ${count}`, "info: The job ended: succeeded."]);
  });

  it("takes within pollMs a job another process enqueued", async () => {
    const jobs = runner({ remediation: async () => "succeeded" });
    await jobs.start();
    await pause(100); // idle: no enqueue of its own will wake it
    const [row] = await database().exec(
      "INSERT INTO jobs (kind, payload, status, created_at) VALUES ('remediation', 'null', 'pending', ?) RETURNING id",
      [new Date().toISOString()],
    );
    const id = Number(row?.id);
    await until(async () => (await statusOf(jobs, id)) === "succeeded", "the other process's job");
  });

  it("cancels a pending job before it starts", async () => {
    const release = gate();
    const ran: unknown[] = [];
    const seen: Job[] = [];
    const kindSeen: number[] = [];
    const jobs = runner(
      {
        work: async (job) => {
          ran.push(job.payload);
          await release.promise;
          return "succeeded";
        },
      },
      { onFinished: (job) => void seen.push(job) },
    );
    jobs.handle("other", async () => "succeeded", { onFinished: (job) => void kindSeen.push(job.id) });
    const never = await jobs.enqueue("other", null);
    expect(await jobs.cancel(never)).toBe(true); // before start(), too
    await jobs.start();
    const first = await jobs.enqueue("work", 1);
    const second = await jobs.enqueue("work", 2);
    await until(() => ran.length === 1, "the first job to start");
    expect(await jobs.cancel(second)).toBe(true);
    const canceled = await jobs.findJob(second);
    expect(canceled).toMatchObject({ status: "failed", attempts: 0, startedAt: undefined });
    expect(canceled?.canceledAt).toBeInstanceOf(Date);
    expect(canceled?.endedAt).toBeInstanceOf(Date);
    expect(await messages(jobs, second)).toEqual(["error: The job was canceled before it started."]);
    release.open();
    expect((await finished(jobs, first)).status).toBe("succeeded");
    expect(ran).toEqual([1]);
    await until(() => seen.length === 3, "onFinished of all three");
    expect(seen.map((job) => job.id).sort((a, b) => a - b)).toEqual([never, first, second].sort((a, b) => a - b));
    expect(kindSeen).toEqual([never]);
    expect(await jobs.cancel(second)).toBe(false);
    expect(await jobs.cancel(first)).toBe(false);
  });

  it("cancels an executing job through its signal; it ends failed even if the handler claims success", async () => {
    const seen: Job[] = [];
    const jobs = runner(
      {
        wait: (_job, context) =>
          new Promise<JobOutcome>((resolve) => {
            context.signal.addEventListener("abort", () => {
              context.log("info", "cleaning up");
              resolve("succeeded");
            });
          }),
      },
      { onFinished: (job) => void seen.push(job) },
    );
    await jobs.start();
    const id = await jobs.enqueue("wait", {});
    await until(async () => (await statusOf(jobs, id)) === "executing", "the job to start");
    expect(await jobs.cancel(id)).toBe(true);
    const job = await finished(jobs, id);
    expect(job.status).toBe("failed");
    expect(job.canceledAt).toBeInstanceOf(Date);
    expect(await messages(jobs, id)).toEqual([
      "warn: Cancel requested.",
      "info: cleaning up",
      "error: The job was canceled while it was executing.",
    ]);
    await until(() => seen.length === 1, "onFinished");
    expect(seen[0]).toMatchObject({ id, status: "failed" });
    expect(await jobs.cancel(id)).toBe(false);
  });

  it("cancels at once an executing job its runner gave up on (stop() timed out)", async () => {
    const stubborn = gate<JobOutcome>();
    const seen: Job[] = [];
    const jobs = runner(
      { stuck: () => stubborn.promise },
      { stopTimeoutMs: 50, onFinished: (job) => void seen.push(job) },
    );
    await jobs.start();
    const id = await jobs.enqueue("stuck", {});
    await until(async () => (await statusOf(jobs, id)) === "executing", "the job to start");
    await jobs.stop();
    expect(await jobs.cancel(id)).toBe(true);
    const job = await jobs.findJob(id);
    expect(job).toMatchObject({ status: "failed", attempts: 1 });
    expect(job?.canceledAt).toBeInstanceOf(Date);
    expect(await messages(jobs, id)).toEqual(["error: The job was canceled; it was not executing anywhere."]);
    expect(seen.map((ended) => ended.id)).toEqual([id]);
    stubborn.open("succeeded"); // too late: not recorded
    await pause(50);
    expect((await jobs.findJob(id))?.status).toBe("failed");
    expect(await jobs.cancel(id)).toBe(false);
  });

  it("stop() waits for executing jobs and takes no new ones", async () => {
    const release = gate();
    const ran: unknown[] = [];
    const jobs = runner({
      work: async (job) => {
        ran.push(job.payload);
        await release.promise;
        return "succeeded";
      },
    });
    await jobs.start();
    const first = await jobs.enqueue("work", 1);
    const second = await jobs.enqueue("work", 2);
    await until(() => ran.length === 1, "the first job to start");
    let stopped = false;
    const stopping = jobs.stop().then(() => (stopped = true));
    await pause(100);
    expect(stopped).toBe(false);
    release.open();
    await stopping;
    expect(await statusOf(jobs, first)).toBe("succeeded");
    await pause(150); // several polls
    expect(await statusOf(jobs, second)).toBe("pending");
    expect(ran).toEqual([1]);
  });

  it("stop() gives up after its timeout; the restart rule then fails the job, never running it again", async () => {
    let signal: AbortSignal | undefined;
    const stubborn = gate<JobOutcome>();
    const jobs = runner(
      {
        deploy: (_job, context) => {
          signal = context.signal;
          context.log("info", "started");
          return stubborn.promise;
        },
      },
      { stopTimeoutMs: 50 },
    );
    await jobs.start();
    const id = await jobs.enqueue("deploy", "a");
    await until(() => signal !== undefined, "the job to start");
    await jobs.stop();
    expect(signal?.aborted).toBe(true);
    expect(processLog).toContain("warn: a job was still executing when the job runner stopped");
    const waiting = await jobs.enqueue("deploy", "b");
    stubborn.open("succeeded"); // too late: not recorded
    await pause(50);
    expect(await statusOf(jobs, id)).toBe("executing");

    // SQLite: the next runner on the database, at its start. PostgreSQL: another node, once the
    // stopped node's lease lapsed (nobody renews it any more).
    const finishedJobs: Job[] = [];
    const kindFinished: number[] = [];
    const ran: unknown[] = [];
    const next = runner(
      { other: async () => "succeeded" },
      { onFinished: (job) => void finishedJobs.push(job), stopTimeoutMs: 50 },
    );
    next.handle("deploy", async (job) => (ran.push(job.payload), "succeeded"), {
      onFinished: (job) => void kindFinished.push(job.id),
    });
    await next.start();
    const failed = await finished(next, id);
    expect(failed).toMatchObject({ status: "failed", attempts: 1 });
    expect(failed.canceledAt).toBeUndefined();
    const expected = database().kind === "sqlite" ? INTERRUPTED_MESSAGE : LEASE_LAPSED_MESSAGE;
    expect(await messages(next, id)).toEqual(["info: started", `error: ${expected}`]);
    expect((await finished(next, waiting)).status).toBe("succeeded");
    expect(ran).toEqual(["b"]); // the interrupted job is not run again
    // In either order: on PostgreSQL the pending job may run before the lease has lapsed.
    await until(() => kindFinished.length === 2, "the kind's onFinished");
    expect(kindFinished.sort((a, b) => a - b)).toEqual([id, waiting]);
    expect(finishedJobs.map((job) => [job.id, job.status]).sort()).toEqual([
      [id, "failed"],
      [waiting, "succeeded"],
    ]);
  });
});
