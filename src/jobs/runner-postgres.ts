/**
 * The persistent job runner of one node of a cluster (docs/cluster-mode.md "Background work"): the
 * same JobRunner as jobs/runner.ts, on the PostgreSQL that every node shares. What differs is
 * only what several runners on one database need:
 *
 * - Jobs are claimed through JobClaims (storage/postgres/job-claims.ts): FOR UPDATE SKIP LOCKED,
 *   so each job is taken by exactly one node, which holds a lease on it (`job_leases`, on the
 *   database's clock) and renews it every leaseMs / 3 while the job runs. Limits (`concurrency`,
 *   each kind's) are this node's: kinds at their limit here are left to the other nodes.
 * - The restart rule cannot take every executing row for an orphan (other nodes' jobs are alive):
 *   an executing job whose lease lapsed ends failed with LEASE_LAPSED_MESSAGE in its log and is
 *   never run again. Any node applies it, at start() and every lapsedCheckMs; onFinished is called
 *   on the node that failed the job. The node that held it, if it comes back (a long pause), finds
 *   its lease gone at its next renewal: it aborts the handler and records nothing (JobClaims.finish
 *   refuses an ending from a node that no longer holds the job).
 * - Other nodes' enqueues are heard by polling (pollMs), or at once through wake().
 * - cancel() of a job executing on another node records canceled_at in the row; the owner reads it
 *   with its next renewal, aborts the handler, and the job ends failed and canceled as on SQLite.
 * - Log lines are written in order per job, only while this node holds the job's lease: those
 *   logged while a write is under way go together in the next one (one round trip for many lines:
 *   an agent's long remediation log would otherwise hold the job's end back by seconds).
 */
import pg from "pg";
import { DomainError, notFound } from "../domain/errors.js";
import { inTransaction, type PostgresDb, readRows, writeRows } from "../storage/postgres/database.js";
import { createJobClaims, type JobClaims } from "../storage/postgres/job-claims.js";
import {
  CANCELED_BEFORE_START_MESSAGE,
  CANCELED_NOWHERE_MESSAGE,
  CANCEL_REQUESTED_MESSAGE,
  checkNewJob,
  checkNewKind,
  endingOf,
  type Job,
  type JobContext,
  type JobHandler,
  type JobKindOptions,
  type JobLogLevel,
  type JobOutcome,
  type JobRow,
  type JobRunner,
  type JobRunnerOptions,
  MAX_WAKE_DELAY_MS,
  notifyFinished,
  runHandler,
  saturatedKindsOf,
  toJob,
  truncateLogMessage,
} from "./runner.js";

/** The cluster's counterpart of INTERRUPTED_MESSAGE: what the restart rule writes in a lapsed job's log. */
export const LEASE_LAPSED_MESSAGE =
  "The Wharf node running this job stopped renewing its lease (it stopped, crashed or lost the database); " +
  "the job did not finish and will not run again.";

export interface PostgresJobRunnerOptions extends Omit<JobRunnerOptions, "db" | "pollMs"> {
  readonly db: PostgresDb;
  /** This node's id (cluster-nodes.ts defaultNodeId: new for every process). */
  readonly nodeId: string;
  /**
   * How long a claim or a renewal holds a job (default 30 s): a job of a node that died ends failed
   * this long after its last renewal, at the next restart rule of a live node.
   */
  readonly leaseMs?: number;
  /** While idle, looks for due jobs (other nodes' enqueues among them) at least this often; default 1 s. */
  readonly pollMs?: number;
  /** How often the restart rule looks for lapsed leases; default 5 s (and at start()). */
  readonly lapsedCheckMs?: number;
}

export interface PostgresJobRunner extends JobRunner {
  /** Looks for due jobs now: for a caller that heard another node enqueue one. */
  wake(): void;
}

interface Running {
  readonly kind: string;
  readonly controller: AbortController;
  done: Promise<void>;
  canceled: boolean;
  /** The handler returned (or threw): later log lines are dropped. */
  settled: boolean;
  /** Set when stop() gave up on it: nothing more is written for it, its lease is left to lapse. */
  abandoned: boolean;
  /** This node no longer holds (or cannot know it still holds) the job: nothing more is written for it. */
  lost: boolean;
  /** performance.now() when the last renewal that found the lease held (or the claim) was sent. */
  heldAt: number;
  /** Its log lines, stored one batch after the other. */
  lines: Promise<void>;
  /** Lines logged since the last batch was taken: [level, message, logged_at]. */
  queued: [JobLogLevel, string, string][];
}

const DEFAULT_LEASE_MS = 30_000;
const DEFAULT_POLL_MS = 1_000;
const DEFAULT_LAPSED_CHECK_MS = 5_000;
const MAX_RETRY_DELAY_MS = 2_000;

/**
 * Lines of a job this node runs, in the order given (ids follow the ORDER BY): stored only while the
 * node holds the job (not after the restart rule took it).
 */
const ADD_HELD_LINES = `
  INSERT INTO job_log (job_id, level, message, logged_at)
  SELECT $1::bigint, line.level, line.message, line.logged_at
    FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS line(level, message, logged_at, n)
   WHERE EXISTS (SELECT 1 FROM job_leases WHERE job_id = $1::bigint AND node_id = $5::text)
   ORDER BY line.n`;
/** At most this many lines in one statement, so that one batch stays a modest message. */
const MAX_LINES_PER_BATCH = 500;
const ADD_LINE = "INSERT INTO job_log (job_id, level, message, logged_at) VALUES ($1, $2, $3, $4)";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Worth trying again: the server said so (SQLSTATE 08 connection, 40 serialization or deadlock,
 * 53 resources, 57 operator intervention, statement_timeout among them), or the connection failed
 * (pg's and the network's errors); not a mistake in the statement or in this code.
 */
function transient(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return /^(08|40|53|57)/.test(error.code ?? "");
  return (
    error instanceof Error &&
    !(error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) &&
    !(error instanceof DomainError)
  );
}

export function createPostgresJobRunner(options: PostgresJobRunnerOptions): PostgresJobRunner {
  const { db, clock, log, nodeId } = options;
  const handlers = new Map<string, JobHandler>(Object.entries(options.handlers ?? {}));
  const kinds = new Map<string, JobKindOptions>();
  if (!Number.isInteger(options.concurrency) || options.concurrency < 1) {
    throw new RangeError("concurrency must be a positive integer");
  }
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  const lapsedCheckMs = options.lapsedCheckMs ?? DEFAULT_LAPSED_CHECK_MS;
  for (const [name, value] of Object.entries({ leaseMs, pollMs, lapsedCheckMs })) {
    if (!(value > 0) || !Number.isFinite(value))
      throw new RangeError(`${name} must be a positive number of milliseconds`);
  }
  const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
  const now = () => clock.now().toISOString();
  const claims = createJobClaims(db.pool, { nodeId, leaseMs });
  /**
   * JobClaims on a transaction's connection, so that a job's end, its canceled_at and its last log
   * line commit together (JobClaims only calls query(), which a pooled client has too).
   */
  const claimsIn = (client: pg.PoolClient): JobClaims =>
    createJobClaims(client as unknown as pg.Pool, { nodeId, leaseMs });

  const running = new Map<number, Running>();
  let state: "new" | "started" | "stopping" | "stopped" = "new";
  let stopping: Promise<void> | undefined;
  let wakeTimer: NodeJS.Timeout | undefined;
  /** claimNext calls not yet answered: a job leased to this node may not be in `running` yet. */
  let claimsInFlight = 0;
  /** The pump's current pass, and whether another was asked for meanwhile. */
  let pumping: Promise<void> | undefined;
  let pumpAgain = false;
  /** Whether the last claim failed: logged once per streak, not once per poll. */
  let claimFailing = false;

  const getRow = async (id: number) => (await readRows<JobRow>(db, "SELECT * FROM jobs WHERE id = $1", [id]))[0];

  const notify = (row: JobRow) =>
    notifyFinished(toJob(row), [options.onFinished, kinds.get(row.kind)?.onFinished], log);

  /** Runs `write` until it succeeds, fails for good, or `worthIt` says the result no longer matters. */
  async function persist<T>(jobId: number, what: string, write: () => Promise<T>, worthIt: () => boolean): Promise<T> {
    for (let delay = 100; ; delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS)) {
      try {
        return await write();
      } catch (error) {
        if (!transient(error) || !worthIt() || state === "stopped") throw error;
        log.warn({ jobId, err: error }, `the job runner could not ${what}; it tries again`);
        await sleep(delay);
      }
    }
  }

  /** Queues one line of a job this node runs; lines are stored in the order they were logged. */
  function writeLine(id: number, entry: Running, level: JobLogLevel, message: string): void {
    entry.queued.push([level, truncateLogMessage(message), now()]);
    // The first line queued since the last batch was taken schedules the next batch.
    if (entry.queued.length === 1) entry.lines = entry.lines.then(() => storeQueuedLines(id, entry));
  }

  /** Stores what is queued, in batches, after the batches before it. */
  async function storeQueuedLines(id: number, entry: Running): Promise<void> {
    const live = () => !entry.abandoned && !entry.lost;
    while (entry.queued.length > 0) {
      const batch = entry.queued.splice(0, MAX_LINES_PER_BATCH);
      const params = [id, ...[0, 1, 2].map((field) => batch.map((line) => line[field])), nodeId];
      try {
        await persist(id, "store a job's log lines", () => db.pool.query(ADD_HELD_LINES, params), live);
      } catch (error) {
        log.error({ jobId: id, err: error, lines: batch.length }, "a job's log lines could not be stored");
      }
    }
  }

  /** One transaction: the final status, canceled_at and the line explaining them land together. */
  const end = (id: number, outcome: JobOutcome, canceled: boolean, [level, message]: [JobLogLevel, string]) =>
    inTransaction(db, async (client) => {
      const at = now();
      const finished = await claimsIn(client).finish(id, outcome, at);
      if (finished === undefined) return undefined;
      let row = finished as JobRow;
      if (canceled) {
        const result = await client.query<JobRow>(
          "UPDATE jobs SET canceled_at = coalesce(canceled_at, $2) WHERE id = $1 RETURNING *",
          [id, at],
        );
        row = result.rows[0] as JobRow;
      }
      await client.query(ADD_LINE, [id, level, truncateLogMessage(message), at]);
      return row;
    });

  /** The handler of a job stops being this node's: aborted, and nothing more recorded for it. */
  function lose(id: number, entry: Running, why: string): void {
    if (entry.lost || entry.abandoned || entry.settled) return;
    entry.lost = true;
    entry.controller.abort(new DomainError("unavailable", "JOB_LEASE_LOST", `This node no longer holds job ${id}.`));
    log.warn({ jobId: id }, why);
  }

  async function execute(job: Job, entry: Running): Promise<void> {
    const context: JobContext = {
      signal: entry.controller.signal,
      log(level, message) {
        if (entry.settled || entry.abandoned || entry.lost) return;
        writeLine(job.id, entry, level, message);
      },
    };
    const outcome = await runHandler(handlers.get(job.kind), job, context);
    entry.settled = true;
    await entry.lines;
    if (entry.abandoned || entry.lost) return;
    const [final, line] = endingOf(outcome, entry.canceled);
    const row = await persist(
      job.id,
      "record a job's end",
      () => end(job.id, final, entry.canceled, line),
      () => !entry.abandoned,
    );
    if (row === undefined) {
      // The lease lapsed and the restart rule (this node's or another's) failed the job meanwhile.
      log.warn({ jobId: job.id, outcome: final }, "a job ended after its lease lapsed; its result was not recorded");
      return;
    }
    await notify(row);
  }

  function start(row: JobRow): void {
    const job = toJob(row);
    const entry: Running = {
      kind: job.kind,
      controller: new AbortController(),
      done: Promise.resolve(),
      canceled: false,
      settled: false,
      abandoned: false,
      lost: false,
      heldAt: performance.now(),
      lines: Promise.resolve(),
      queued: [],
    };
    running.set(job.id, entry);
    // Started on the next tick: a handler that enqueues synchronously must not re-enter here.
    entry.done = Promise.resolve()
      .then(() => execute(job, entry))
      .catch((error: unknown) => log.error({ jobId: job.id, err: error }, "the job runner could not record a job"))
      .finally(() => {
        running.delete(job.id);
        pump();
      });
  }

  function armWake(delay: number): void {
    clearTimeout(wakeTimer);
    if (state === "started") wakeTimer = setTimeout(pump, delay).unref();
  }

  /** Idle: looks again at the earliest deferred job's time, or after pollMs, whichever is first. */
  async function armWakeForDeferred(at: string): Promise<void> {
    const [next] = await readRows<{ at: string | null }>(
      db,
      "SELECT min(not_before) AS at FROM jobs WHERE status = 'pending' AND not_before > $1",
      [at],
    );
    const earliest = next?.at ?? null;
    // Capped, so that a clock that jumps (or a test clock) is looked at again before long.
    const delay =
      earliest === null
        ? pollMs
        : Math.min(Math.max(Date.parse(earliest) - Date.parse(at), 1), MAX_WAKE_DELAY_MS, pollMs);
    armWake(delay);
  }

  /** Claims due jobs while there is room; one pass at a time, so the limits hold. */
  async function pumpPass(): Promise<void> {
    do {
      pumpAgain = false;
      while (state === "started" && running.size < options.concurrency) {
        const at = now();
        let row: JobRow | undefined;
        claimsInFlight++;
        try {
          row = (await claims.claimNext(at, saturatedKindsOf(running.values(), kinds))) as JobRow | undefined;
          claimFailing = false;
        } catch (error) {
          if (!claimFailing) log.error({ err: error }, "the job runner could not take the next job");
          claimFailing = true;
          armWake(pollMs);
          return;
        } finally {
          claimsInFlight--;
        }
        if (row === undefined) {
          await armWakeForDeferred(at).catch(() => armWake(pollMs));
          break;
        }
        db.committed();
        // Claimed even if stop() began meanwhile: it runs, and stop() waits for it.
        start(row);
      }
    } while (pumpAgain && state === "started");
  }

  function pump(): void {
    if (state !== "started") return;
    if (pumping !== undefined) {
      pumpAgain = true;
      return;
    }
    pumping = pumpPass()
      .catch((error: unknown) => log.error({ err: error }, "the job runner could not take the next job"))
      .finally(() => {
        pumping = undefined;
        if (pumpAgain) pump();
      });
  }

  /** Renews the leases of the jobs running here; aborts those it lost and those canceled elsewhere. */
  async function renew(): Promise<void> {
    // Settled ones too: their end may still be on its way to the database.
    const mine = [...running].filter(([, entry]) => !entry.abandoned && !entry.lost);
    if (mine.length === 0) return;
    const sentAt = performance.now();
    let held: Set<number>;
    try {
      held = new Set(await claims.renew(mine.map(([id]) => id)));
    } catch (error) {
      log.warn({ err: error }, "the job runner could not renew its jobs' leases");
      // Without an answer for a whole lease, the restart rule may have taken them already.
      for (const [id, entry] of mine) {
        if (sentAt - entry.heldAt > leaseMs) {
          lose(id, entry, "a job's lease could not be renewed for longer than the lease: its handler is aborted");
        }
      }
      return;
    }
    for (const [id, entry] of mine) {
      if (held.has(id)) entry.heldAt = sentAt;
      // Gone from job_leases: the job ended (only if its handler settled meanwhile) or lapsed.
      else lose(id, entry, "a job's lease lapsed and the restart rule ended it: its handler is aborted");
    }
    const heldIds = mine.filter(([id]) => held.has(id)).map(([id]) => id);
    if (heldIds.length === 0) return;
    const canceled = await readRows<{ id: number }>(
      db,
      "SELECT id FROM jobs WHERE id = ANY ($1::bigint[]) AND canceled_at IS NOT NULL",
      [heldIds],
    );
    for (const { id } of canceled) {
      const entry = running.get(id);
      if (entry === undefined || entry.canceled || entry.settled || entry.lost || entry.abandoned) continue;
      // Canceled through another node, which wrote "Cancel requested." in the log.
      entry.canceled = true;
      entry.controller.abort(new DomainError("conflict", "JOB_CANCELED", "The job was canceled."));
    }
  }

  /** The cluster's restart rule: executing jobs whose lease lapsed end failed, never to run again. */
  async function failLapsed(): Promise<void> {
    const ids = await claims.failLapsed(now(), LEASE_LAPSED_MESSAGE);
    if (ids.length === 0) return;
    db.committed();
    for (const id of ids) {
      const entry = running.get(id);
      // This node's own job, after a pause longer than its lease: the job is over.
      if (entry !== undefined)
        lose(id, entry, "a job's lease lapsed and the restart rule ended it: its handler is aborted");
    }
    const rows = await readRows<JobRow>(db, "SELECT * FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id", [ids]);
    for (const row of rows) await notify(row);
  }

  /** A task every `ms`, never two passes at once; stop() waits for the pass under way. */
  function periodic(ms: number, what: string, task: () => Promise<void>) {
    let pass: Promise<void> | undefined;
    const timer = setInterval(() => {
      if (pass !== undefined) return;
      pass = task()
        .catch((error: unknown) => log.error({ err: error }, `the job runner could not ${what}`))
        .finally(() => (pass = undefined));
    }, ms).unref();
    return {
      async stop() {
        clearInterval(timer);
        await pass;
      },
    };
  }
  let renewals: ReturnType<typeof periodic> | undefined;
  let restartRule: ReturnType<typeof periodic> | undefined;

  /**
   * Ends an executing job this node is not running: at once when nobody runs it (no lease, a lapsed
   * one, or this node's after stop() gave up on it), else by canceled_at, which its node reads.
   */
  async function cancelElsewhere(id: number): Promise<"ended" | "requested" | "again" | JobRow> {
    return inTransaction(db, async (client) => {
      // The lease before the job: the order in which finish and the restart rule lock them.
      const [lease] = (
        await client.query<{ node_id: string; lapsed: boolean }>(
          "SELECT node_id, lease_until < now() AS lapsed FROM job_leases WHERE job_id = $1 FOR UPDATE",
          [id],
        )
      ).rows;
      const [job] = (await client.query<JobRow>("SELECT * FROM jobs WHERE id = $1 FOR UPDATE", [id])).rows;
      if (job === undefined || job.status !== "executing") return "again";
      const at = now();
      const entry = running.get(id);
      // Leased to this node but not under its control (stop() gave up on it, or its lease was lost);
      // with no entry at all, unless a claim under way may be about to start it.
      const idleHere =
        lease?.node_id === nodeId && (entry === undefined ? claimsInFlight === 0 : entry.abandoned || entry.lost);
      if (lease === undefined || lease.lapsed || idleHere) {
        await client.query("DELETE FROM job_leases WHERE job_id = $1", [id]);
        const [ended] = (
          await client.query<JobRow>(
            "UPDATE jobs SET status = 'failed', ended_at = $1, canceled_at = coalesce(canceled_at, $1) " +
              "WHERE id = $2 RETURNING *",
            [at, id],
          )
        ).rows;
        await client.query(ADD_LINE, [id, "error", CANCELED_NOWHERE_MESSAGE, at]);
        return ended as JobRow;
      }
      if (job.canceled_at === null) {
        await client.query("UPDATE jobs SET canceled_at = $1 WHERE id = $2", [at, id]);
        await client.query(ADD_LINE, [id, "warn", CANCEL_REQUESTED_MESSAGE, at]);
      }
      return "requested";
    });
  }

  return {
    handle(kind, handler, kindOptions = {}) {
      checkNewKind(kind, state !== "new", handlers, kindOptions);
      handlers.set(kind, handler);
      kinds.set(kind, kindOptions);
    },

    async enqueue(kind, payload, enqueueOptions = {}) {
      const { json, notBefore } = checkNewJob(handlers, kind, payload, enqueueOptions.notBefore);
      const result = await writeRows<{ id: number }>(
        db,
        "INSERT INTO jobs (kind, payload, status, created_at, not_before) VALUES ($1, $2, 'pending', $3, $4) RETURNING id",
        [kind, json, now(), notBefore],
      );
      queueMicrotask(pump);
      return (result.rows[0] as { id: number }).id;
    },

    async findJob(id) {
      const row = await getRow(id);
      return row === undefined ? undefined : toJob(row);
    },

    async readLog(id) {
      if ((await getRow(id)) === undefined) throw notFound("JOB_NOT_FOUND", `There is no job ${id}.`);
      const rows = await readRows<{ level: JobLogLevel; message: string; logged_at: string }>(
        db,
        "SELECT level, message, logged_at FROM job_log WHERE job_id = $1 ORDER BY id",
        [id],
      );
      return rows.map((r) => ({ level: r.level, message: r.message, loggedAt: new Date(r.logged_at) }));
    },

    async start() {
      if (state !== "new") throw new Error("A job runner starts once.");
      state = "started";
      await failLapsed();
      renewals = periodic(Math.max(1, Math.floor(leaseMs / 3)), "renew its jobs' leases", renew);
      restartRule = periodic(lapsedCheckMs, "apply the restart rule", failLapsed);
      pump();
    },

    wake() {
      pump();
    },

    /**
     * Takes no more jobs and waits up to stopTimeoutMs for the executing ones, renewing their
     * leases meanwhile. Those still running then are aborted and left executing, with their leases,
     * which nobody renews any more: within leaseMs they lapse and the restart rule of another node
     * (or of this one's successor) fails them, as the next start does on SQLite. Their late results
     * are not recorded.
     */
    async stop() {
      if (state === "new" || state === "stopped") {
        state = "stopped";
        return;
      }
      if (stopping !== undefined) return stopping;
      state = "stopping";
      clearTimeout(wakeTimer);
      stopping = (async () => {
        await pumping; // a claim under way: its job runs, and is waited for below
        const all = Promise.all([...running.values()].map((entry) => entry.done));
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<boolean>((resolve) => {
          timer = setTimeout(() => resolve(true), stopTimeoutMs);
        });
        const gaveUp = await Promise.race([all.then(() => false), timedOut]);
        clearTimeout(timer);
        if (gaveUp) {
          for (const [id, entry] of running) {
            entry.abandoned = true;
            entry.controller.abort(new DomainError("unavailable", "JOB_RUNNER_STOPPED", "The job runner stopped."));
            log.warn({ jobId: id }, "a job was still executing when the job runner stopped");
          }
        }
        await renewals?.stop();
        await restartRule?.stop();
        state = "stopped";
      })();
      return stopping;
    },

    async cancel(id) {
      const row = await getRow(id);
      if (row === undefined) throw notFound("JOB_NOT_FOUND", `There is no job ${id}.`);
      if (row.status === "pending") {
        const ended = await inTransaction(db, async (client) => {
          const at = now();
          const [updated] = (
            await client.query<JobRow>(
              "UPDATE jobs SET status = 'failed', ended_at = $1, canceled_at = $1 " +
                "WHERE id = $2 AND status = 'pending' RETURNING *",
              [at, id],
            )
          ).rows;
          if (updated !== undefined) await client.query(ADD_LINE, [id, "error", CANCELED_BEFORE_START_MESSAGE, at]);
          return updated;
        });
        if (ended !== undefined) {
          await notify(ended);
          return true;
        }
        return this.cancel(id); // it was taken meanwhile; cancel it as executing
      }
      if (row.status !== "executing") return false;
      const entry = running.get(id);
      if (entry !== undefined && !entry.abandoned && !entry.lost) {
        if (!entry.canceled && !entry.settled) {
          entry.canceled = true;
          writeLine(id, entry, "warn", CANCEL_REQUESTED_MESSAGE);
          entry.controller.abort(new DomainError("conflict", "JOB_CANCELED", "The job was canceled."));
        }
        return true;
      }
      const outcome = await cancelElsewhere(id);
      if (outcome === "again") return this.cancel(id); // it ended meanwhile
      if (outcome === "requested") return true;
      await notify(outcome as JobRow);
      return true;
    },
  };
}
