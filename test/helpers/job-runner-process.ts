import { systemClock } from "../../src/domain/clock.js";
import { createPostgresJobRunner } from "../../src/jobs/runner-postgres.js";
import { openPostgres } from "../../src/storage/postgres/connection.js";

/**
 * A cluster node's job runner as a process of its own, for test/contract/job-runner-cluster.test.ts:
 * a node that is SIGKILLed while its handler runs, or whose event loop stalls for longer than its
 * lease. Run as `node --import tsx test/helpers/job-runner-process.ts '<json>'` with
 * JobRunnerProcessOptions. It prints one line per event: `started` once its runner runs,
 * `running <id>` when its handler takes a job, `returned <id>` when the handler is about to
 * return, `finished <id> <status>` from onFinished, and `warn: <message>` / `error: <message>` from
 * the runner's own log. It runs until it is killed.
 */
export interface JobRunnerProcessOptions {
  readonly url: string;
  readonly nodeId: string;
  readonly leaseMs: number;
  /**
   * Blocks the event loop this long (no timer, no I/O: a long GC pause, a stopped VM) once the
   * handler started, then logs a line and returns succeeded. Without it, the handler never returns.
   */
  readonly stallMs?: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as JobRunnerProcessOptions;
const say = (line: string): void => void process.stdout.write(`${line}\n`);

const pool = openPostgres(options.url, {
  applicationName: `wharf ${options.nodeId}`,
  onIdleError: (error) => say(`error: ${error.message}`),
});
const runner = createPostgresJobRunner({
  db: { pool, committed: () => undefined },
  clock: systemClock,
  nodeId: options.nodeId,
  concurrency: 1,
  leaseMs: options.leaseMs,
  pollMs: 50,
  // Only the surviving nodes apply the restart rule here (besides this one's start()).
  lapsedCheckMs: 600_000,
  log: {
    warn: (_fields, message) => say(`warn: ${message}`),
    error: (_fields, message) => say(`error: ${message}`),
  },
  onFinished: (job) => say(`finished ${job.id} ${job.status}`),
  handlers: {
    deploy: async (job, context) => {
      say(`running ${job.id}`);
      context.log("info", "deploying");
      if (options.stallMs === undefined) return new Promise(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 20));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, options.stallMs);
      context.log("info", "after the stall");
      say(`returned ${job.id}`);
      return "succeeded";
    },
  },
});

// The runner's timers never keep a process alive by themselves; this one lives until killed.
setInterval(() => {}, 60_000);
await runner.start();
say("started");
