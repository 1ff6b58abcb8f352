import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import { DomainError } from "../../src/domain/errors.js";
import {
  createJobRunner,
  INTERRUPTED_MESSAGE,
  type Job,
  type JobHandler,
  type JobOutcome,
  type JobRunner,
  type JobRunnerOptions,
} from "../../src/jobs/runner.js";
import { neverBlockOnLocks } from "../../src/storage/busy.js";
import { type Db, openDatabase } from "../../src/storage/database.js";
import { holdWriteLock } from "../helpers/lock-holder.js";

let dir: string;
let dbFile: string;
let dbs: Db[];
let runners: JobRunner[];
let processLog: string[];

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wharf-jobs-"));
  dbFile = path.join(dir, "wharf.sqlite");
  dbs = [];
  runners = [];
  processLog = [];
});

afterEach(async () => {
  for (const runner of runners) await runner.stop();
  for (const db of dbs) if (db.open) db.close();
  await rm(dir, { recursive: true, force: true });
});

function open(): Db {
  const db = openDatabase(dbFile);
  dbs.push(db);
  return db;
}

function runner(handlers: Record<string, JobHandler>, options: Partial<JobRunnerOptions> = {}): JobRunner {
  const created = createJobRunner({
    db: options.db ?? open(),
    clock: systemClock,
    concurrency: 1,
    handlers,
    log: {
      warn: (_fields, message) => processLog.push(`warn: ${message}`),
      error: (_fields, message) => processLog.push(`error: ${message}`),
    },
    ...options,
  });
  runners.push(created);
  return created;
}

/** A promise settled from outside, for handlers that wait for the test. */
function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** Resolves once `check` holds; the runner works on its own ticks. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
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

describe("job runner", () => {
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
    expect((await jobs.findJob(id))?.status).toBe("pending");
    await jobs.start();
    const job = await finished(jobs, id);
    expect(job).toMatchObject({ id, kind: "deploy", payload: { deploymentId: 7 }, status: "succeeded", attempts: 1 });
    expect(job.canceledAt).toBeUndefined();
    expect(job.startedAt?.getTime()).toBeGreaterThanOrEqual(job.createdAt.getTime());
    expect(job.endedAt?.getTime()).toBeGreaterThanOrEqual(job.startedAt?.getTime() ?? Infinity);
    expect(await messages(jobs, id)).toEqual(['info: deploying {"deploymentId":7}', "info: The job ended: succeeded."]);
    await until(() => seen.length === 1, "onFinished");
    expect(seen[0]).toMatchObject({ id, status: "succeeded" });
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
    expect((await finished(jobs, thrown)).status).toBe("failed");
    expect(await messages(jobs, thrown)).toEqual(["error: disk full", "error: The job ended: failed."]);
    expect((await finished(jobs, garbage)).status).toBe("failed");
    expect((await messages(jobs, garbage))[0]).toMatch(/returned "done", not an outcome/);
  });

  it("refuses a kind without a handler and a payload that is not JSON", async () => {
    const jobs = runner({ known: async () => "succeeded" });
    await expect(jobs.enqueue("unknown", {})).rejects.toMatchObject({ kind: "invalid", code: "JOB_KIND_UNKNOWN" });
    await expect(jobs.enqueue("known", undefined)).rejects.toMatchObject({ code: "JOB_PAYLOAD_INVALID" });
    await expect(jobs.readLog(999)).rejects.toBeInstanceOf(DomainError);
    expect(await jobs.findJob(999)).toBeUndefined();
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
    const notBefore = new Date(Date.now() + 150);
    const later = await jobs.enqueue("record", "scheduled", { notBefore });
    const now = await jobs.enqueue("record", "now");
    await finished(jobs, now);
    expect((await jobs.findJob(later))?.status).toBe("pending");
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
    expect((await jobs.findJob(ids[2] as number))?.status).toBe("pending");
    for (const g of gates) {
      g.open();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const id of ids) expect((await finished(jobs, id)).status).toBe("succeeded");
    expect(most).toBe(2);
  });

  it("persists log lines as they are written, before the job ends", async () => {
    const db = open();
    const release = gate();
    const jobs = runner(
      {
        slow: async (_job, context) => {
          context.log("info", "first step done");
          await release.promise;
          return "succeeded";
        },
      },
      { db },
    );
    await jobs.start();
    const id = await jobs.enqueue("slow", {});
    // A second connection sees the line while the job is still executing.
    const reader = open();
    await until(
      () => reader.prepare("SELECT count(*) AS n FROM job_log WHERE job_id = ?").pluck().get(id) === 1,
      "the log line",
    );
    expect(reader.prepare("SELECT status FROM jobs WHERE id = ?").pluck().get(id)).toBe("executing");
    release.open();
    expect((await finished(jobs, id)).status).toBe("succeeded");
  });

  it("after a crash, fails the job that was executing and still runs the pending ones", async () => {
    // The first process: one job hangs forever, one waits behind it; then the process "dies".
    const before = runner({ deploy: () => new Promise<JobOutcome>(() => undefined) }, { db: open() });
    await before.start();
    const interrupted = await before.enqueue("deploy", "a");
    const waiting = await before.enqueue("deploy", "b");
    await until(async () => (await before.findJob(interrupted))?.status === "executing", "the first job to start");
    for (const db of dbs) db.close();
    runners = []; // never stopped: the process is gone

    const seen: Job[] = [];
    const ran: unknown[] = [];
    const after = runner(
      { deploy: async (job) => (ran.push(job.payload), "succeeded") },
      { onFinished: (job) => void seen.push(job) },
    );
    await after.start();
    const failed = await finished(after, interrupted);
    expect(failed).toMatchObject({ status: "failed", attempts: 1 });
    expect(failed.canceledAt).toBeUndefined();
    expect(await messages(after, interrupted)).toEqual([`error: ${INTERRUPTED_MESSAGE}`]);
    expect((await finished(after, waiting)).status).toBe("succeeded");
    expect(ran).toEqual(["b"]); // the interrupted job is not run again
    expect(seen.map((job) => [job.id, job.status])).toEqual([
      [interrupted, "failed"],
      [waiting, "succeeded"],
    ]);
  });

  it("cancels a pending job before it starts", async () => {
    const release = gate();
    const ran: unknown[] = [];
    const seen: Job[] = [];
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
    await jobs.start();
    const first = await jobs.enqueue("work", 1);
    const second = await jobs.enqueue("work", 2);
    await until(() => ran.length === 1, "the first job to start");
    expect(await jobs.cancel(second)).toBe(true);
    const canceled = await jobs.findJob(second);
    expect(canceled).toMatchObject({ status: "failed", attempts: 0, startedAt: undefined });
    expect(canceled?.canceledAt).toBeInstanceOf(Date);
    expect(await messages(jobs, second)).toEqual(["error: The job was canceled before it started."]);
    release.open();
    expect((await finished(jobs, first)).status).toBe("succeeded");
    expect(ran).toEqual([1]);
    expect(seen.map((job) => job.id).sort()).toEqual([first, second].sort());
    expect(await jobs.cancel(second)).toBe(false);
    expect(await jobs.cancel(first)).toBe(false);
    await expect(jobs.cancel(12345)).rejects.toMatchObject({ kind: "not_found" });
  });

  it("cancels an executing job through its signal; it ends failed even if the handler claims success", async () => {
    const jobs = runner({
      wait: (_job, context) =>
        new Promise<JobOutcome>((resolve) => {
          context.signal.addEventListener("abort", () => {
            context.log("info", "cleaning up");
            resolve("succeeded");
          });
        }),
    });
    await jobs.start();
    const id = await jobs.enqueue("wait", {});
    await until(async () => (await jobs.findJob(id))?.status === "executing", "the job to start");
    expect(await jobs.cancel(id)).toBe(true);
    const job = await finished(jobs, id);
    expect(job.status).toBe("failed");
    expect(job.canceledAt).toBeInstanceOf(Date);
    expect(await messages(jobs, id)).toEqual([
      "warn: Cancel requested.",
      "info: cleaning up",
      "error: The job was canceled while it was executing.",
    ]);
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
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(stopped).toBe(false);
    release.open();
    await stopping;
    expect((await jobs.findJob(first))?.status).toBe("succeeded");
    expect((await jobs.findJob(second))?.status).toBe("pending");
    expect(ran).toEqual([1]);
  });

  it("stop() gives up after its timeout, aborts the job and leaves it to the restart rule", async () => {
    let signal: AbortSignal | undefined;
    const stubborn = gate<JobOutcome>();
    const jobs = runner(
      {
        stubborn: (_job, context) => {
          signal = context.signal;
          return stubborn.promise;
        },
      },
      { stopTimeoutMs: 50 },
    );
    await jobs.start();
    const id = await jobs.enqueue("stubborn", {});
    await until(() => signal !== undefined, "the job to start");
    await jobs.stop();
    expect(signal?.aborted).toBe(true);
    expect(processLog).toContain("warn: a job was still executing when the job runner stopped");
    stubborn.open("succeeded"); // too late: not recorded
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await jobs.findJob(id))?.status).toBe("executing");

    const next = runner({ stubborn: async () => "succeeded" });
    await next.start();
    expect((await finished(next, id)).status).toBe("failed");
  });
});

describe("job runner while another process holds the write lock", () => {
  /** The server's connection: never blocks on the lock; requests give up after 50 ms. */
  function serverConnection(): Db {
    const db = open();
    neverBlockOnLocks(db, 50);
    return db;
  }
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  it("keeps a running job's log lines and its end until the lock goes, then records them in order", async () => {
    const started = gate();
    const step = gate();
    const jobs = runner(
      {
        deploy: async (_job, context) => {
          context.log("info", "one");
          started.open();
          await step.promise;
          context.log("info", "two");
          return "succeeded";
        },
      },
      { db: serverConnection() },
    );
    const id = await jobs.enqueue("deploy", {});
    await jobs.start();
    await started.promise;
    const holder = await holdWriteLock(dbFile);
    try {
      step.open();
      // A client's enqueue waits its bounded time, then says why.
      await expect(jobs.enqueue("deploy", {})).rejects.toMatchObject({ code: "DATABASE_BUSY" });
      await pause(100);
      expect((await jobs.findJob(id))?.status).toBe("executing");
      expect(await messages(jobs, id)).toEqual(["info: one"]);
    } finally {
      await holder.release();
    }
    expect((await finished(jobs, id)).status).toBe("succeeded");
    expect(await messages(jobs, id)).toEqual(["info: one", "info: two", "info: The job ended: succeeded."]);
    expect(processLog).toEqual([]);
  });

  it("takes a pending job once the lock goes", async () => {
    const jobs = runner({ deploy: async () => "succeeded" }, { db: serverConnection() });
    const id = await jobs.enqueue("deploy", {});
    const holder = await holdWriteLock(dbFile);
    try {
      await jobs.start();
      await pause(100);
      expect((await jobs.findJob(id))?.status).toBe("pending");
    } finally {
      await holder.release();
    }
    expect((await finished(jobs, id)).status).toBe("succeeded");
    expect(processLog).toEqual([]);
  });
});
