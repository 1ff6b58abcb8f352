import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { systemClock } from "../../src/domain/clock.js";
import { createJobRunner, INTERRUPTED_MESSAGE, type Job, type JobRunner } from "../../src/jobs/runner.js";
import { type Db, openDatabase } from "../../src/storage/database.js";

/**
 * The one job runner of a database takes its kinds from several areas (JobRunner.handle): each
 * kind has its own limit of jobs executing at once and its own onFinished.
 */
let dir: string;
let db: Db;
let runners: JobRunner[];

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "wharf-job-kinds-"));
  db = openDatabase(path.join(dir, "wharf.sqlite"));
  runners = [];
});

afterEach(async () => {
  for (const runner of runners) await runner.stop();
  db.close();
  await rm(dir, { recursive: true, force: true });
});

function runner(concurrency: number, pollMs?: number): JobRunner {
  const created = createJobRunner({
    db,
    clock: systemClock,
    concurrency,
    ...(pollMs !== undefined && { pollMs }),
    log: { warn: () => undefined, error: () => undefined },
    stopTimeoutMs: 20,
  });
  runners.push(created);
  return created;
}

function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const statusOf = async (jobs: JobRunner, id: number) => (await jobs.findJob(id))?.status;

describe("job kinds added by areas", () => {
  it("holds each kind to its own limit while other kinds still run", async () => {
    const jobs = runner(3);
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
    await jobs.start();
    const first = await jobs.enqueue("deployment", 1);
    const second = await jobs.enqueue("deployment", 2);
    const other = await jobs.enqueue("remediation", 3);
    await until(async () => (await statusOf(jobs, other)) === "succeeded", "the other kind to run");
    expect(await statusOf(jobs, first)).toBe("executing");
    expect(await statusOf(jobs, second)).toBe("pending");
    slow.open();
    await until(async () => (await statusOf(jobs, second)) === "succeeded", "the second deployment");
  });

  it("runs no job of a kind limited to 0, and says when a kind is added twice or late", async () => {
    const jobs = runner(2);
    jobs.handle("deployment", async () => "succeeded", { concurrency: 0 });
    expect(() => jobs.handle("deployment", async () => "succeeded")).toThrow(/already has a handler/);
    expect(() => jobs.handle("x", async () => "succeeded", { concurrency: -1 })).toThrow(RangeError);
    await jobs.start();
    expect(() => jobs.handle("late", async () => "succeeded")).toThrow(/after the job runner started/);
    const id = await jobs.enqueue("deployment", null);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await statusOf(jobs, id)).toBe("pending");
  });

  it("calls the kind's onFinished, also for a job the restart rule ends", async () => {
    const first = runner(1);
    const hold = gate();
    first.handle("remediation", async (_job, context) => {
      context.log("info", "started");
      await hold.promise;
      return "succeeded";
    });
    await first.start();
    const id = await first.enqueue("remediation", null);
    await until(async () => (await statusOf(first, id)) === "executing", "the job to start");
    await first.stop(); // gives up after 20 ms: the job stays executing, as after a crash
    hold.open();

    const finished: Job[] = [];
    const second = runner(1);
    second.handle("remediation", async () => "succeeded", { onFinished: (job) => void finished.push(job) });
    second.handle("deployment", async () => "succeeded", {
      onFinished: () => {
        throw new Error("not this kind's");
      },
    });
    await second.start();
    expect(finished.map((job) => [job.id, job.status])).toEqual([[id, "failed"]]);
    expect((await second.readLog(id)).map((line) => line.message)).toContain(INTERRUPTED_MESSAGE);
  });

  it("takes within pollMs a job another process enqueued", async () => {
    const jobs = runner(1, 20);
    jobs.handle("remediation", async () => "succeeded");
    await jobs.start();
    const other = openDatabase(path.join(dir, "wharf.sqlite"));
    const id = Number(
      other
        .prepare("INSERT INTO jobs (kind, payload, status, created_at) VALUES ('remediation', 'null', 'pending', ?)")
        .run(new Date().toISOString()).lastInsertRowid,
    );
    other.close();
    await until(async () => (await statusOf(jobs, id)) === "succeeded", "the other process's job");
  });
});
